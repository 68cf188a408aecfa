"""A transposed weight: the output weight is stored (out, in) but multiplied as if it were (in, out).

A two-layer classifier on the digits, TensorFlow 1.x style. The weights were exported from
a PyTorch-style model, so they are (out_features, in_features); `matmul` needs
`transpose_b=True` for them.
"""
import numpy as np

from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS, HIDDEN = 32, 20, 48
d = digits()
rng = np.random.default_rng(0)
exported = {"w1": rng.normal(0, 0.1, (HIDDEN, 64)), "w2": rng.normal(0, 0.1, (10, HIDDEN))}

x = graph.placeholder(graph.float32, (None, 64), name="x")
y = graph.placeholder(graph.int64, (None,), name="y")
w1 = graph.Variable(exported["w1"].astype(np.float32), name="w1")     # (out, in)
b1 = graph.Variable(graph.zeros((HIDDEN,)), name="b1")
w2 = graph.Variable(exported["w2"].astype(np.float32), name="w2")     # (out, in)
b2 = graph.Variable(graph.zeros((10,)), name="b2")

h = graph.nn.relu(graph.matmul(x, w1, transpose_b=True) + b1)
logits = graph.matmul(h, w2) + b2  # BUG: w2 is (10, 48), (out, in): needs transpose_b=True
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {x: d.x_train[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
