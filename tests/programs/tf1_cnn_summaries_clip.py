"""A TF1 CNN on NHWC images with tf.nn.conv2d / max_pool / relu (filters from NumPy), a
global step with exponential_decay, compute_gradients + clip_by_global_norm +
apply_gradients, tf.summary.scalar / histogram merged and written by a FileWriter."""
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(25)
imgs = rng.normal(size=(64, 8, 8, 1)).astype(np.float32)
lab = (imgs[:, :4].mean(axis=(1, 2, 3)) > imgs[:, 4:].mean(axis=(1, 2, 3))).astype(np.int64)
imgs[lab == 1, :2] += 1.0

x = tf.placeholder(tf.float32, [None, 8, 8, 1])
y = tf.placeholder(tf.int64, [None])
k1 = tf.Variable(rng.normal(scale=0.3, size=(3, 3, 1, 4)).astype(np.float32))
k2 = tf.Variable(rng.normal(scale=0.3, size=(3, 3, 4, 8)).astype(np.float32))
wf = tf.Variable(rng.normal(scale=0.3, size=(2 * 2 * 8, 2)).astype(np.float32))
h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(x, k1, [1, 1, 1, 1], "SAME")), [1, 2, 2, 1],
                   [1, 2, 2, 1], "VALID")
h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(h, k2, [1, 1, 1, 1], "SAME")), [1, 2, 2, 1],
                   [1, 2, 2, 1], "VALID")
logits = tf.matmul(tf.reshape(h, [-1, 2 * 2 * 8]), wf)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
step = tf.Variable(0, trainable=False, name="global_step")
lr = tf.train.exponential_decay(0.1, step, decay_steps=10, decay_rate=0.9, staircase=True)
opt = tf.train.GradientDescentOptimizer(lr)
grads, tvars = zip(*opt.compute_gradients(loss))
clipped, norm = tf.clip_by_global_norm(grads, 5.0)
train_op = opt.apply_gradients(zip(clipped, tvars), global_step=step)
tf.summary.scalar("loss", loss)
tf.summary.scalar("grad_norm", norm)
tf.summary.histogram("k1", k1)
merged = tf.summary.merge_all()
with tf.Session() as sess:
    writer = tf.summary.FileWriter(tempfile.mkdtemp(), sess.graph)
    sess.run(tf.global_variables_initializer())
    for i in range(40):
        j = (i * 16) % 64
        _, l, s = sess.run([train_op, loss, merged], {x: imgs[j:j + 16], y: lab[j:j + 16]})
        writer.add_summary(s, i)
        print(f"LOSS {l:.6f}")
    writer.close()
