"""Attention heads that do not divide the model width: 4 heads of a 30-wide model.

A one-block transformer classifier on the digits read as 8 rows (tokens) of 8 pixels,
TensorFlow 1.x style. The head size is computed with integer division, so the reshape that
splits the heads cannot hold all 30 features.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS, WIDTH, HEADS = 32, 20, 30, 4
d = digits()
rows = d.x_train.reshape(-1, 8, 8)


def split_heads(t):
    t = graph.reshape(t, (-1, 8, HEADS, WIDTH // HEADS))  # BUG: 30 is not a multiple of 4
    return graph.transpose(t, (0, 2, 1, 3))          # (?, heads, steps, head width)


seq = graph.placeholder(graph.float32, (None, 8, 8), name="seq")
y = graph.placeholder(graph.int64, (None,), name="y")
x = graph.nn.dense(seq, WIDTH, name="embed")
q, k, v = graph.split(graph.nn.dense(x, 3 * WIDTH, name="qkv"), 3, axis=-1)
q, k, v = split_heads(q), split_heads(k), split_heads(v)
att = graph.nn.softmax(graph.matmul(q, k, transpose_b=True) / (WIDTH // HEADS) ** 0.5)
out = graph.reshape(graph.transpose(graph.matmul(att, v), (0, 2, 1, 3)), (-1, 8, WIDTH))
x = graph.nn.layer_norm(x + graph.nn.dense(out, WIDTH, name="proj"))
logits = graph.nn.dense(graph.reduce_mean(x, axis=1), 10, name="head")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.AdamOptimizer(1e-2).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        loss_value, _ = sess.run([loss, train_op], {seq: rows[idx], y: d.y_train[idx]})
print(f"final loss {loss_value:.3f}")
