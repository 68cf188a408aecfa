"""A wrong flatten size before the classifier: the CNN forgets that pooling halved 8x8 to 4x4.

Conv(1->8, 3x3, SAME) -> ReLU -> max-pool 2 gives (N, 8, 4, 4) = 128 features per image,
but the reshape and the dense kernel are written for 8 * 8 * 8 = 512. The tutorial idiom
`reshape(h, [-1, size])` lets the batch dimension absorb the difference. (dualgrad's graph
engine keeps NCHW images and (out, in, kh, kw) filters, like its eager side.)
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits, images

BATCH, STEPS = 32, 20
d = digits()
x_train = images(d.x_train)

x = graph.placeholder(graph.float32, (None, 1, 8, 8), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
filters = graph.Variable(graph.random_normal((8, 1, 3, 3), stddev=0.3, seed=1), name="filters")
h = graph.nn.relu(graph.nn.conv2d(x, filters, strides=1, padding="SAME"))
h = graph.nn.max_pool2d(h, 2)                                   # (?, 8, 4, 4)
flat = graph.reshape(h, (-1, 8 * 8 * 8))  # BUG: after pooling a map is 4x4: the size is 8 * 4 * 4
kernel = graph.Variable(graph.random_normal((8 * 8 * 8, 10), stddev=0.05, seed=2), name="kernel")
logits = graph.matmul(flat, kernel)
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.05, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: x_train[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
