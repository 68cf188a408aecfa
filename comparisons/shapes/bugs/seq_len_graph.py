"""A sequence-length mismatch in a recurrent model: 8 predictions are scored against 7 targets.

A recurrent net reads each digit row by row (8 steps of 8 pixels) and, after every row,
predicts the next row; TensorFlow 1.x style, statically unrolled over the 8 steps. Only
rows 1-7 have a "next row" to compare with.
"""
from dualgrad import graph

from dualgrad.comparisons.data import digits

BATCH, STEPS, HIDDEN = 32, 20, 32
d = digits()
rows = d.x_train.reshape(-1, 8, 8)

seq = graph.placeholder(graph.float32, (None, 8, 8), name="seq")
w_x = graph.Variable(graph.random_normal((8, HIDDEN), stddev=0.3, seed=1), name="w_x")
w_h = graph.Variable(graph.random_normal((HIDDEN, HIDDEN), stddev=0.1, seed=2), name="w_h")
b = graph.Variable(graph.zeros((HIDDEN,)), name="b")
w_out = graph.Variable(graph.random_normal((HIDDEN, 8), stddev=0.1, seed=3), name="w_out")

h, preds = graph.zeros_like(graph.matmul(seq[:, 0], w_x)), []
for t in range(8):                                  # static unroll, as tf.nn.static_rnn
    h = graph.tanh(graph.matmul(seq[:, t], w_x) + graph.matmul(h, w_h) + b)
    preds.append(graph.matmul(h, w_out))
preds = graph.stack(preds, axis=1)                  # (?, 8, 8)
loss = graph.reduce_mean(graph.square(preds - seq[:, 1:]))  # BUG: 8 predictions, 7 next rows
train_op = graph.train.AdamOptimizer(1e-2).minimize(loss)

with graph.Session() as sess:
    sess.run(graph.global_variables_initializer())
    for step in range(STEPS):
        batch = rows[step * BATCH:(step + 1) * BATCH]
        loss_value, _ = sess.run([loss, train_op], {seq: batch})
print(f"final loss {loss_value:.3f}")
