"""Linear regression fed by a tf.data pipeline (from_tensor_slices, repeat, batch) through a
one-shot iterator, trained with GradientDescentOptimizer; weights start at zeros. Prints
LOSS lines."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(0)
xs = rng.normal(size=(64, 3)).astype(np.float32)
ys = xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
ds = tf.data.Dataset.from_tensor_slices((xs, ys)).repeat().batch(16)
x, y = tf.data.make_one_shot_iterator(ds).get_next()
w = tf.Variable(np.zeros((3, 1), np.float32))
b = tf.Variable(np.zeros((1,), np.float32))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(60):
        _, l = sess.run([step, loss])
        print(f"LOSS {l:.6f}")
