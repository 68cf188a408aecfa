"""Reshape to an incompatible size: the flat pixels are viewed as 7x7 images, but digits are 8x8.

A small CNN on the digits, TensorFlow 1.x style, fed the flat (N, 64) rows and reshaping
them itself with the usual `reshape(x, [-1, ...])`.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
d = digits()

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
img = graph.reshape(x, (-1, 7, 7, 1))  # BUG: the digits are 8x8 images: (-1, 8, 8, 1)
filters = graph.Variable(graph.random_normal((3, 3, 1, 8), stddev=0.3, seed=1), name="filters")
h = graph.nn.max_pool(graph.nn.relu(graph.nn.conv2d(img, filters, 1, "SAME")), 2, 2, "VALID")
logits = graph.nn.dense(graph.reshape(h, (-1, 8 * 4 * 4)), 10, name="fc")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.05, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
