"""Seq2seq with attention in TF1 style, unrolled in Python: an embedding from
tf.nn.embedding_lookup, a tanh encoder over tf.unstack'ed steps, a decoder whose attention
weights are tf.nn.softmax over dot products with the stacked encoder states, teacher
forcing, a masked sparse softmax loss, and AdamOptimizer with clip_by_global_norm; the task
is reversing digit sequences."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(27)
V, H, T, BOS = 7, 16, 4, 1
src = tf.placeholder(tf.int32, [None, T])
tgt_in = tf.placeholder(tf.int32, [None, T])
tgt = tf.placeholder(tf.int32, [None, T])


def var(name, shape):
    return tf.get_variable(name, initializer=rng.normal(scale=0.3, size=shape).astype(np.float32))


emb = var("emb", (V, H))
we, ue = var("we", (H, H)), var("ue", (H, H))
wd, ud, wc = var("wd", (H, H)), var("ud", (H, H)), var("wc", (2 * H, V))
h = tf.zeros_like(tf.nn.embedding_lookup(emb, src[:, 0]))
states = []
for x_t in tf.unstack(tf.nn.embedding_lookup(emb, src), axis=1):
    h = tf.tanh(tf.matmul(x_t, we) + tf.matmul(h, ue))
    states.append(h)
enc = tf.stack(states, axis=1)                                     # (B, T, H)
logits = []
for y_t in tf.unstack(tf.nn.embedding_lookup(emb, tgt_in), axis=1):
    h = tf.tanh(tf.matmul(y_t, wd) + tf.matmul(h, ud))
    scores = tf.reduce_sum(enc * tf.expand_dims(h, 1), axis=2)    # (B, T)
    attn = tf.nn.softmax(scores)
    context = tf.reduce_sum(enc * tf.expand_dims(attn, 2), axis=1)
    logits.append(tf.matmul(tf.concat([h, context], axis=1), wc))
logits = tf.stack(logits, axis=1)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tgt, logits=logits))
opt = tf.train.AdamOptimizer(0.02)
grads, tvars = zip(*opt.compute_gradients(loss))
grads, _ = tf.clip_by_global_norm(grads, 1.0)
train_op = opt.apply_gradients(zip(grads, tvars))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(150):
        s = rng.integers(2, V, size=(16, T))
        r = s[:, ::-1]
        feed = {src: s, tgt: r, tgt_in: np.concatenate([np.full((16, 1), BOS), r[:, :-1]], 1)}
        _, l = sess.run([train_op, loss], feed)
        print(f"LOSS {l:.6f}")
