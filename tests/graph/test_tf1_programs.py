"""Classic TF1 example programs, written the way public TF1 tutorials write them, run on
dualgrad.graph unmodified (`tf` is `dualgrad.graph`). Each learns the digits, and runs with
the graph optimiser on and off with equal results."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf
from dualgrad.comparisons.data import digits

D = digits()
STEPS, BATCH = 60, 64


def one_hot(y):
    return np.eye(10, dtype=np.float32)[y]


def batches(steps=STEPS):
    for i in range(steps):
        lo = (i * BATCH) % (len(D.y_train) - BATCH)
        yield D.x_train[lo:lo + BATCH], D.y_train[lo:lo + BATCH]


def train(build, optimize, steps=STEPS):
    """Run a program's graph: (losses, held-out accuracy). `build` returns x, y, the loss,
    the train op, the accuracy and the extra feeds for training and for evaluation."""
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(0)
        x, y, loss, train_op, accuracy, train_feed, eval_feed = build()
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=g, optimize=optimize) as sess:
        sess.run(init)
        for bx, by in batches(steps):
            _, l_ = sess.run([train_op, loss], feed_dict={x: bx, y: one_hot(by), **train_feed})
            losses.append(float(l_))
        acc = sess.run(accuracy, {x: D.x_test, y: one_hot(D.y_test), **eval_feed})
    return np.array(losses), float(acc)


def check(build, min_acc, drop=0.5, **kw):
    off, acc_off = train(build, optimize=False, **kw)
    on, acc_on = train(build, optimize=True, **kw)
    np.testing.assert_allclose(on, off, rtol=1e-4, atol=1e-6)
    assert acc_on == pytest.approx(acc_off, abs=1e-6)
    assert off[-10:].mean() < drop * off[:5].mean()
    assert acc_off >= min_acc, acc_off


def accuracy_of(logits, y):
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
    return tf.reduce_mean(tf.cast(correct, tf.float32))


# -- logistic regression -----------------------------------------------------------------------
def logistic_regression():
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.float32, [None, 10])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), axis=1))
    optimizer = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    return x, y, cost, optimizer, accuracy_of(pred, y), {}, {}


def test_logistic_regression():
    check(logistic_regression, 0.85)


# -- multilayer perceptron with dropout (keep_prob placeholder) ----------------------------------
def mlp():
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)
    weights = {"h1": tf.Variable(tf.random_normal([64, 128], stddev=0.1, seed=1)),
               "out": tf.Variable(tf.random_normal([128, 10], stddev=0.1, seed=2))}
    biases = {"b1": tf.Variable(tf.zeros([128])), "out": tf.Variable(tf.zeros([10]))}
    layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["h1"]), biases["b1"]))
    layer_1 = tf.nn.dropout(layer_1, keep_prob)
    logits = tf.matmul(layer_1, weights["out"]) + biases["out"]
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=y))
    train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss_op)
    return (x, y, loss_op, train_op, accuracy_of(logits, y), {keep_prob: 0.8},
            {keep_prob: 1.0})


def test_mlp_with_keep_prob_placeholder():
    check(mlp, 0.9)


# -- convolutional network, NHWC -----------------------------------------------------------------
def conv_net():
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.float32, [None, 10])
    image = tf.reshape(x, shape=[-1, 8, 8, 1])
    wc1 = tf.Variable(tf.random_normal([3, 3, 1, 16], stddev=0.3, seed=1))
    bc1 = tf.Variable(tf.zeros([16]))
    conv1 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(image, wc1, strides=[1, 1, 1, 1],
                                                   padding="SAME"), bc1))
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    wc2 = tf.Variable(tf.random_normal([3, 3, 16, 32], stddev=0.1, seed=2))
    conv2 = tf.nn.relu(tf.nn.conv2d(pool1, wc2, strides=[1, 2, 2, 1], padding="SAME"))
    flat = tf.reshape(conv2, [-1, 2 * 2 * 32])
    wd = tf.Variable(tf.random_normal([2 * 2 * 32, 10], stddev=0.1, seed=3))
    logits = tf.matmul(flat, wd)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=y))
    train_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
    return x, y, loss, train_op, accuracy_of(logits, y), {}, {}


def test_nhwc_conv_net():
    check(conv_net, 0.85)


# -- recurrent networks: each image read row by row (8 steps of 8 pixels) ------------------------
def rows(x):
    return x.reshape(-1, 8, 8)


def static_rnn_classifier():
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.float32, [None, 10])
    seq = tf.unstack(tf.reshape(x, [-1, 8, 8]), 8, 1)
    lstm_cell = tf.contrib.rnn.BasicLSTMCell(32, forget_bias=1.0)
    outputs, states = tf.contrib.rnn.static_rnn(lstm_cell, seq, dtype=tf.float32)
    weights = tf.get_variable("out_w", [32, 10],
                              initializer=tf.random_normal_initializer(stddev=0.1, seed=1))
    biases = tf.get_variable("out_b", [10], initializer=tf.zeros_initializer())
    logits = tf.matmul(outputs[-1], weights) + biases
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=y))
    train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss_op)
    return x, y, loss_op, train_op, accuracy_of(logits, y), {}, {}


def test_static_rnn_lstm():
    check(static_rnn_classifier, 0.7)


def dynamic_rnn_classifier():
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)
    seq = tf.reshape(x, [-1, 8, 8])
    lengths = tf.fill([tf.shape(x)[0]], 8)
    cells = [tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(32),
                                           output_keep_prob=keep_prob),
             tf.nn.rnn_cell.LSTMCell(32)]
    with tf.variable_scope("encoder", initializer=tf.glorot_uniform_initializer(seed=3)):
        outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), seq,
                                           sequence_length=lengths, dtype=tf.float32)
    last = state[-1].h
    logits = tf.layers.dense(last, 10)
    loss_op = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.argmax(y, 1), logits=logits))
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss_op)
    return x, y, loss_op, train_op, accuracy_of(logits, y), {keep_prob: 0.9}, {keep_prob: 1.0}


def test_dynamic_rnn_stacked_gru_lstm_with_dropout():
    check(dynamic_rnn_classifier, 0.75)


# -- autoencoder ---------------------------------------------------------------------------------
def autoencoder():
    x = tf.placeholder(tf.float32, [None, 64])
    y = tf.placeholder(tf.float32, [None, 10])   # unused by the loss: reconstruction only

    def layer(inp, n, name):
        with tf.variable_scope(name):
            w = tf.get_variable("w", [inp.shape[1], n],
                                initializer=tf.truncated_normal_initializer(stddev=0.1, seed=4))
            b = tf.get_variable("b", [n], initializer=tf.constant_initializer(0.0))
            return tf.nn.sigmoid(tf.add(tf.matmul(inp, w), b))
    encoded = layer(layer(x, 32, "enc1"), 16, "enc2")
    decoded = layer(layer(encoded, 32, "dec1"), 64, "dec2")
    loss = tf.reduce_mean(tf.pow(x - decoded, 2))
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    # the "accuracy" of a reconstruction: 1 - mean squared error
    return x, y, loss, train_op, 1.0 - loss, {}, {}


def test_autoencoder_reconstructs():
    check(autoencoder, 0.9, drop=0.7)
