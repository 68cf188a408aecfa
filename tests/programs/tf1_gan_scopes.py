"""A GAN in TF1 style: generator and discriminator built by functions under
tf.variable_scope with reuse=tf.AUTO_REUSE and get_variable (initialisers from NumPy), the
two optimizers given var_list from get_collection(TRAINABLE_VARIABLES, scope); noise and
data fed from NumPy. LEARNED: the generated mean's distance to the data mean."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(22)
inits = {}


def dense(h, name, n_out):
    n_in = h.get_shape().as_list()[-1]
    if name not in inits:
        inits[name] = rng.normal(scale=0.5, size=(n_in, n_out)).astype(np.float32)
    w = tf.get_variable(name + "_w", initializer=inits[name])
    b = tf.get_variable(name + "_b", initializer=np.zeros(n_out, np.float32))
    return tf.matmul(h, w) + b


def generator(z):
    with tf.variable_scope("G", reuse=tf.AUTO_REUSE):
        return dense(tf.nn.leaky_relu(dense(z, "g1", 16), 0.2), "g2", 1)


def discriminator(v):
    with tf.variable_scope("D", reuse=tf.AUTO_REUSE):
        return dense(tf.nn.leaky_relu(dense(v, "d1", 16), 0.2), "d2", 1)


z = tf.placeholder(tf.float32, [None, 2])
real = tf.placeholder(tf.float32, [None, 1])
fake = generator(z)
d_real, d_fake = discriminator(real), discriminator(fake)
xent = tf.nn.sigmoid_cross_entropy_with_logits
d_loss = tf.reduce_mean(xent(labels=tf.ones_like(d_real), logits=d_real)) + \
    tf.reduce_mean(xent(labels=tf.zeros_like(d_fake), logits=d_fake))
g_loss = tf.reduce_mean(xent(labels=tf.ones_like(d_fake), logits=d_fake))
d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="D")
g_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="G")
d_step = tf.train.AdamOptimizer(0.01, beta1=0.5).minimize(d_loss, var_list=d_vars)
g_step = tf.train.AdamOptimizer(0.01, beta1=0.5).minimize(g_loss, var_list=g_vars)
fixed = rng.normal(size=(256, 2)).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    before = abs(sess.run(fake, {z: fixed}).mean() - 4.0)
    for step in range(300):
        feed = {z: rng.normal(size=(32, 2)).astype(np.float32),
                real: rng.normal(4.0, 0.5, size=(32, 1)).astype(np.float32)}
        _, dl = sess.run([d_step, d_loss], feed)
        _, gl = sess.run([g_step, g_loss], feed)
        print(f"LOSS {dl + gl:.6f}")
    after = abs(sess.run(fake, {z: fixed}).mean() - 4.0)
    print(f"LEARNED {before:.6f} {after:.6f}")
