"""Inner-dimension mismatch in a dense layer: the second layer is sized for 64 inputs, the first gives 32.

An MLP on the digits (64 pixels -> 32 hidden -> 10 classes), TensorFlow 1.x style, with the
weights declared as Variables: the second weight's shape repeats the wrong width.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
d = digits()

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
w1 = graph.Variable(graph.random_normal((64, 32), stddev=0.1, seed=1), name="w1")
b1 = graph.Variable(graph.zeros((32,)), name="b1")
w2 = graph.Variable(graph.random_normal((64, 10), stddev=0.1, seed=2), name="w2")  # BUG: (32, 10)
b2 = graph.Variable(graph.zeros((10,)), name="b2")

h = graph.nn.relu(graph.matmul(x, w1) + b1)
logits = graph.matmul(h, w2) + b2
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
