"""A TF1 program with tf.app.flags and tf.app.run(main): a bidirectional recurrent tagger
unrolled in Python over tf.unstack'ed time steps (a tanh cell each way, weights shared over
time with variable_scope reuse), concatenated outputs, a per-step softmax loss, RMSProp."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
flags = tf.app.flags
flags.DEFINE_integer("steps", 100, "training steps")
flags.DEFINE_float("learning_rate", 0.03, "RMSProp learning rate")
FLAGS = flags.FLAGS
T, V, H = 6, 5, 8


def cell(x_t, h, scope, rng):
    with tf.variable_scope(scope, reuse=tf.AUTO_REUSE):
        wx = tf.get_variable("wx", initializer=rng.normal(scale=0.4, size=(V, H)).astype(np.float32))
        wh = tf.get_variable("wh", initializer=rng.normal(scale=0.4, size=(H, H)).astype(np.float32))
        return tf.tanh(tf.matmul(x_t, wx) + tf.matmul(h, wh))


def main(_):
    rng = np.random.default_rng(26)
    seq = tf.placeholder(tf.int32, [None, T])
    tags = tf.placeholder(tf.int32, [None, T])
    steps = tf.unstack(tf.one_hot(seq, V), axis=1)
    h0 = tf.zeros_like(tf.matmul(steps[0], tf.zeros([V, H])))
    fw, h = [], h0
    for x_t in steps:
        h = cell(x_t, h, "fw", rng)
        fw.append(h)
    bw, h = [], h0
    for x_t in reversed(steps):
        h = cell(x_t, h, "bw", rng)
        bw.insert(0, h)
    out = tf.stack([tf.concat([f, b], axis=1) for f, b in zip(fw, bw)], axis=1)
    w_out = tf.Variable(rng.normal(scale=0.4, size=(2 * H, 2)).astype(np.float32))
    logits = tf.reshape(tf.matmul(tf.reshape(out, [-1, 2 * H]), w_out), [-1, T, 2])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tags,
                                                                          logits=logits))
    train_op = tf.train.RMSPropOptimizer(FLAGS.learning_rate).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(FLAGS.steps):
            s = rng.integers(0, V, size=(16, T))
            t = np.zeros_like(s)
            t[:, 1:-1] = (s[:, :-2] < s[:, 2:])     # needs both directions
            _, l = sess.run([train_op, loss], {seq: s, tags: t})
            print(f"LOSS {l:.6f}")


if __name__ == "__main__":
    tf.app.run(main)
