"""A reshape that joins examples: (?, 64) reshaped to (-1, 128) makes one row of every two digits.

An MLP on the digits, TensorFlow 1.x style, whose input width is written as a constant that is
twice the real one; `reshape(x, (-1, FEATURES))` lets the unknown batch dim absorb it.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS, FEATURES = 32, 20, 128
d = digits()

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
flat = graph.reshape(x, (-1, FEATURES))  # BUG: a digit has 64 pixels: this joins two digits
h = graph.nn.dense(flat, 32, activation=graph.nn.relu, name="hidden")
logits = graph.nn.dense(h, 10, name="out")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
