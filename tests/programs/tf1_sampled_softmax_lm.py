"""A bag-of-context language model with tf.nn.sampled_softmax_loss for training (the
samples drawn in NumPy and passed as sampled_values, so both libraries see them) and the
full softmax for evaluation, tf.nn.embedding_lookup with reduce_mean over the context,
and a GradientDescentOptimizer with a piecewise_constant learning rate on a global step."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(28)
V, D, S, C = 30, 8, 5, 3
ctx = tf.placeholder(tf.int32, [None, C])
nxt = tf.placeholder(tf.int64, [None, 1])
sampled = tf.placeholder(tf.int64, [S])
emb = tf.Variable(rng.normal(scale=0.5, size=(V, D)).astype(np.float32))
w = tf.Variable(rng.normal(scale=0.3, size=(V, D)).astype(np.float32))
b = tf.Variable(np.zeros(V, np.float32))
h = tf.reduce_mean(tf.nn.embedding_lookup(emb, ctx), axis=1)
counts = (tf.fill(tf.shape(nxt), S / V), tf.fill([S], S / V))
loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(
    weights=w, biases=b, labels=nxt, inputs=h, num_sampled=S, num_classes=V,
    sampled_values=(sampled,) + counts, remove_accidental_hits=True))
full = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
    labels=tf.reshape(nxt, [-1]), logits=tf.matmul(h, w, transpose_b=True) + b))
step = tf.train.get_or_create_global_step()
lr = tf.train.piecewise_constant(step, [150], [2.0, 1.0])
train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)


def batch():
    start = rng.integers(0, V, size=(32, 1))
    seq = (start + np.arange(C + 1)) % V
    return seq[:, :C], seq[:, C:]


with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    c, n = batch()
    first = sess.run(full, {ctx: c, nxt: n})
    for i in range(250):
        c, n = batch()
        _, l = sess.run([train_op, loss], {ctx: c, nxt: n,
                                           sampled: rng.choice(V, size=S, replace=False)})
        print(f"LOSS {l:.6f}")
    c, n = batch()
    print(f"LEARNED {first:.6f} {sess.run(full, {ctx: c, nxt: n}):.6f}")
