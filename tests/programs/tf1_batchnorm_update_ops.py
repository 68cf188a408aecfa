"""Batch normalisation written the TF1 way: tf.nn.moments for the batch statistics, moving
averages updated by assign ops in the UPDATE_OPS collection, an is_training placeholder with
tf.cond choosing the statistics, and minimize() under control_dependencies(update_ops)."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(21)
data = rng.normal(loc=3.0, scale=2.0, size=(128, 6)).astype(np.float32)
target = (data[:, :1] - data[:, 1:2] > 0).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 6])
t = tf.placeholder(tf.float32, [None, 1])
is_training = tf.placeholder(tf.bool, [])


def batch_norm(h, name, decay=0.9):
    with tf.variable_scope(name):
        size = h.get_shape().as_list()[-1]
        gamma = tf.get_variable("gamma", [size], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [size], initializer=tf.zeros_initializer())
        mm = tf.get_variable("moving_mean", [size], initializer=tf.zeros_initializer(),
                             trainable=False)
        mv = tf.get_variable("moving_variance", [size], initializer=tf.ones_initializer(),
                             trainable=False)
        mean, var = tf.nn.moments(h, axes=[0])
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign(mm, mm * decay + mean * (1 - decay)))
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign(mv, mv * decay + var * (1 - decay)))
        m, v = tf.cond(is_training, lambda: (mean, var), lambda: (tf.identity(mm), tf.identity(mv)))
        return tf.nn.batch_normalization(h, m, v, beta, gamma, 1e-3)


w1 = tf.Variable(rng.normal(scale=0.3, size=(6, 12)).astype(np.float32))
w2 = tf.Variable(rng.normal(scale=0.3, size=(12, 1)).astype(np.float32))
b2 = tf.Variable(np.zeros(1, np.float32))
h = tf.nn.relu(batch_norm(tf.matmul(batch_norm(x, "bn0"), w1), "bn1"))
logits = tf.matmul(h, w2) + b2
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=t, logits=logits))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(60):
        i = (step * 32) % 128
        _, l = sess.run([train_op, loss], {x: data[i:i + 32], t: target[i:i + 32], is_training: True})
        print(f"LOSS {l:.6f}")
    ev = sess.run(loss, {x: data, t: target, is_training: False})
    print(f"eval loss {ev:.4f}")
