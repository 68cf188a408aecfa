"""Concatenation on the wrong axis: extra features are joined along the batch axis.

An MLP on the digits that also gets 8 row sums per image, TensorFlow 1.x style: the 64
pixels and the 8 row sums should be joined into 72 features (axis 1), not stacked as more
examples (axis 0).
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
d = digits()

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
row_sums = graph.reduce_sum(graph.reshape(x, (-1, 8, 8)), axis=2)     # (?, 8)
feats = graph.concat([x, row_sums], axis=0)  # BUG: features are joined along axis=1
h = graph.nn.dense(feats, 32, activation=graph.nn.relu, name="hidden")
logits = graph.nn.dense(h, 10, name="out")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
