"""A label tensor of the wrong rank for cross-entropy: class indices as a (N, 1) column.

An MLP on the digits, TensorFlow 1.x style, whose label placeholder was declared as a
column, the way the labels arrive from a CSV column.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
d = digits()
labels = d.y_train.reshape(-1, 1)                 # (N, 1) class indices

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None, 1), name="y")
h = graph.nn.dense(x, 32, activation=graph.nn.relu, name="hidden")
logits = graph.nn.dense(h, 10, name="out")
xent = graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)  # BUG: y is (?, 1); wants (?,)
loss = graph.reduce_mean(xent)
train_op = graph.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: labels[idx]})
print(f"final loss {loss_value:.3f}")
