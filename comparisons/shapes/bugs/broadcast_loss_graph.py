"""A broadcasting bug that raises nothing: predictions (N, 1) against targets (N,) become (N, N) in the loss.

A small regression MLP that predicts the digit's value (0-9) from its pixels, TensorFlow 1.x
style, with the squared error written out as TF1 code usually did. The prediction has a
trailing dimension of 1, the target placeholder does not, so `pred - y` is (?, ?).
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 30
d = digits()
targets = d.y_train.astype("float32")

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.float32, (None,), name="y")
h = graph.nn.dense(x, 32, activation=graph.nn.relu, name="hidden")
pred = graph.nn.dense(h, 1, name="out")                          # (?, 1)
loss = graph.reduce_mean(graph.square(pred - y))  # BUG: pred is (?, 1), y is (?,): the loss is over (?, ?)
train_op = graph.train.MomentumOptimizer(0.01, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: targets[idx]})
print(f"final loss {loss_value:.3f}")
