"""Checkpoints the TF1 way: a global step, Saver(max_to_keep=2).save(sess, path,
global_step=step), then a new Session that restores tf.train.latest_checkpoint(dir) and goes
on; the resumed run must continue exactly where the first stopped."""
import sys
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(24)
xs = rng.normal(size=(64, 4)).astype(np.float32)
ys = (xs @ np.array([[2.0], [-1.0], [0.0], [1.0]], np.float32)).astype(np.float32)
x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(rng.normal(scale=0.1, size=(4, 1)).astype(np.float32), name="w")
step = tf.train.get_or_create_global_step()
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
saver = tf.train.Saver(max_to_keep=2)
ckpt_dir = tempfile.mkdtemp()
losses = []
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(30):
        _, l = sess.run([train_op, loss], {x: xs, y: ys})
        losses.append(l)
        if (i + 1) % 10 == 0:
            saver.save(sess, ckpt_dir + "/model", global_step=step)
    straight = [sess.run([train_op, loss], {x: xs, y: ys})[1] for _ in range(10)]
with tf.Session() as sess:
    saver.restore(sess, tf.train.latest_checkpoint(ckpt_dir))
    resumed_at = sess.run(step)
    resumed = [sess.run([train_op, loss], {x: xs, y: ys})[1] for _ in range(10)]
for l in losses + resumed:
    print(f"LOSS {l:.6f}")
if resumed_at != 30 or not np.allclose(straight, resumed, rtol=1e-6):
    sys.exit(f"resumed at {resumed_at}: {resumed} != {straight}")
