"""A mask of the wrong shape: a (N, steps) padding mask is added to (N, heads, steps, steps) scores.

A one-block transformer classifier on the digits read as sequences of 5 to 8 rows, padded
to 8 with a mask, TensorFlow 1.x style. The mask needs two new axes to reach the scores.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits, row_sequences

BATCH, STEPS, WIDTH, HEADS = 32, 20, 32, 4
d = digits()
seqs = row_sequences(d.x_train, seed=0)


def split_heads(t):
    return graph.transpose(graph.reshape(t, (-1, 8, HEADS, WIDTH // HEADS)), (0, 2, 1, 3))


seq = graph.placeholder(graph.float32, (None, 8, 8), name="seq")
mask = graph.placeholder(graph.float32, (None, 8), name="mask")
y = graph.placeholder(graph.int64, (None,), name="y")
x = graph.nn.dense(seq, WIDTH, name="embed")
q, k, v = (split_heads(t) for t in graph.split(graph.nn.dense(x, 3 * WIDTH, name="qkv"), 3, axis=-1))
scores = graph.matmul(q, k, transpose_b=True) / (WIDTH // HEADS) ** 0.5   # (?, heads, 8, 8)
scores = scores + (1.0 - mask) * -1e9  # BUG: mask is (?, 8); it needs mask[:, None, None, :]
out = graph.reshape(graph.transpose(graph.matmul(graph.nn.softmax(scores), v), (0, 2, 1, 3)),
                    (-1, 8, WIDTH))
x = graph.nn.layer_norm(x + graph.nn.dense(out, WIDTH, name="proj"))
logits = graph.nn.dense(graph.reduce_mean(x, axis=1), 10, name="head")
loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train_op = graph.train.AdamOptimizer(1e-2).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        feed = {seq: seqs.x[idx], mask: seqs.mask[idx], y: d.y_train[idx]}
        loss_value, _ = sess.run([loss, train_op], feed)
print(f"final loss {loss_value:.3f}")
