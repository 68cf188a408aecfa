"""Skip-gram embeddings with tf.nn.embedding_lookup and tf.nn.nce_loss; the negative
samples are drawn in NumPy and passed as sampled_values (with their expected counts), so
both libraries see the same samples."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(23)
V, D, S = 40, 8, 6
inputs = tf.placeholder(tf.int32, [None])
labels = tf.placeholder(tf.int64, [None, 1])
sampled = tf.placeholder(tf.int64, [S])
true_count = tf.placeholder(tf.float32, [None, 1])
sampled_count = tf.placeholder(tf.float32, [S])
emb = tf.Variable(rng.uniform(-1, 1, size=(V, D)).astype(np.float32))
w = tf.Variable(rng.normal(scale=0.3, size=(V, D)).astype(np.float32))
b = tf.Variable(np.zeros(V, np.float32))
loss = tf.reduce_mean(tf.nn.nce_loss(weights=w, biases=b, labels=labels,
                                     inputs=tf.nn.embedding_lookup(emb, inputs),
                                     num_sampled=S, num_classes=V,
                                     sampled_values=(sampled, true_count, sampled_count)))
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(120):
        centre = rng.integers(0, V, size=32)
        context = ((centre + rng.choice([-1, 1], size=32)) % V)[:, None]
        neg = rng.choice(V, size=S, replace=False)
        feed = {inputs: centre, labels: context, sampled: neg,
                true_count: np.full((32, 1), S / V, np.float32),
                sampled_count: np.full(S, S / V, np.float32)}
        _, l = sess.run([train_op, loss], feed)
        print(f"LOSS {l:.6f}")
