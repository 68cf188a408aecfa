"""A hard-coded batch size: fine for every full batch, wrong for the last, shorter batch of the epoch.

A small CNN on 300 digits in batches of 32: nine full batches, then one of 12. The input
placeholder was declared with the batch size instead of None.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, N_TRAIN, EPOCHS = 32, 300, 2
d = digits()
x_train, y_train = d.x_train[:N_TRAIN].reshape(-1, 8, 8, 1), d.y_train[:N_TRAIN]  # NHWC

x = graph.placeholder(graph.float32, (BATCH, 8, 8, 1), name="x")  # BUG: the last batch has 12 images: use None
y = graph.placeholder(graph.int64, (None,), name="y")
filters = graph.Variable(graph.random_normal((3, 3, 1, 8), stddev=0.3, seed=1), name="filters")
h = graph.nn.max_pool(graph.nn.relu(graph.nn.conv2d(x, filters, 1, "SAME")), 2, 2, "VALID")
logits = graph.nn.dense(graph.reshape(h, (-1, 8 * 4 * 4)), 10, name="fc")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.05, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for epoch in range(EPOCHS):
        for start in range(0, N_TRAIN, BATCH):      # the last batch is shorter
            feed = {x: x_train[start:start + BATCH], y: y_train[start:start + BATCH]}
            loss_value, _ = sess.run([loss, train_op], feed)
print(f"final loss {loss_value:.3f}")
