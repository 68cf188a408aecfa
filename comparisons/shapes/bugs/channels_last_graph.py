"""Channel-first images given to a channel-last convolution: (N, 1, 8, 8) where conv2d wants (N, 8, 8, 1).

A small CNN on the digits, TensorFlow 1.x style, fed images laid out as PyTorch code gives them
(channels first). TF1's conv2d reads the last dim as channels unless told data_format="NCHW".
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits, images

BATCH, STEPS = 32, 20
d = digits()
x_train = images(d.x_train)                       # NCHW, as the images came

x = graph.placeholder(graph.float32, (None, 1, 8, 8), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
filters = graph.Variable(graph.random_normal((3, 3, 1, 8), stddev=0.3, seed=1), name="filters")
h = graph.nn.relu(graph.nn.conv2d(x, filters, strides=1, padding="SAME"))  # BUG: x is NCHW: data_format="NCHW"
flat = graph.reshape(h, (-1, 8 * 8 * 8))
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
