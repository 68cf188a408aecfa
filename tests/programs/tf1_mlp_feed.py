"""The classic TF1 classifier: placeholders fed through feed_dict, Variables initialised from
NumPy, softmax_cross_entropy_with_logits_v2 on one-hot labels, AdamOptimizer, and an accuracy
from argmax / equal / cast / reduce_mean, evaluated on held-out data."""
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.default_rng(20)
centers = rng.normal(scale=2.0, size=(3, 5))
labels = rng.integers(0, 3, size=192)
data = (centers[labels] + rng.normal(size=(192, 5))).astype(np.float32)
onehot = np.eye(3, dtype=np.float32)[labels]

x = tf.placeholder(tf.float32, [None, 5], name="x")
y = tf.placeholder(tf.float32, [None, 3], name="y")
w1 = tf.Variable(rng.normal(scale=0.3, size=(5, 16)).astype(np.float32), name="w1")
b1 = tf.Variable(np.zeros(16, np.float32), name="b1")
w2 = tf.Variable(rng.normal(scale=0.3, size=(16, 3)).astype(np.float32), name="w2")
b2 = tf.Variable(np.zeros(3, np.float32), name="b2")
logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss)
correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(20):
        for i in range(0, 160, 32):
            _, l = sess.run([train_op, loss], feed_dict={x: data[i:i + 32], y: onehot[i:i + 32]})
            print(f"LOSS {l:.6f}")
    print(f"accuracy {sess.run(accuracy, {x: data[160:], y: onehot[160:]}):.3f}")
