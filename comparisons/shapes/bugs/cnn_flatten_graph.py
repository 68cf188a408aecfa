"""A wrong flatten size before the classifier: the CNN forgets that pooling halved 8x8 to 4x4.

Conv(1->8, 3x3, SAME) -> ReLU -> max-pool 2 gives (N, 4, 4, 8) = 128 features per image,
but the reshape and the dense kernel are written for 8 * 8 * 8 = 512. The tutorial idiom
`reshape(h, [-1, size])` lets the batch dimension absorb the difference. (TF1's layouts:
NHWC images and (kh, kw, in, out) filters; the eager twin is PyTorch's NCHW.)
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
d = digits()
x_train = d.x_train.reshape(-1, 8, 8, 1)   # NHWC images, as TF1 code feeds them

x = graph.placeholder(graph.float32, (None, 8, 8, 1), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
filters = graph.Variable(graph.random_normal((3, 3, 1, 8), stddev=0.3, seed=1), name="filters")
h = graph.nn.relu(graph.nn.conv2d(x, filters, strides=[1, 1, 1, 1], padding="SAME"))
h = graph.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")    # (?, 4, 4, 8)
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
