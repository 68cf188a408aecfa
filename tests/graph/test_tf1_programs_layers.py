"""TF1 programs built with `tf.layers` and variable scopes: weight sharing between towers,
weight decay through regularizers. `tf` is `dualgrad.graph`; the expected values are NumPy
formulas written here. Each runs with the graph optimiser off and on."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

OPTIMIZE = [False, True]


# -- a siamese network: two towers, one set of weights ----------------------------------------------
def tower(x):
    h = tf.layers.dense(x, 4, activation=tf.nn.relu, name="fc1")
    return tf.layers.dense(h, 2, name="fc2")


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_siamese_towers_share_weights_with_auto_reuse(optimize):
    left = tf.placeholder(tf.float32, [None, 3], name="left")
    right = tf.placeholder(tf.float32, [None, 3], name="right")
    with tf.variable_scope("siamese", reuse=tf.AUTO_REUSE):
        a = tower(left)
    with tf.variable_scope("siamese", reuse=tf.AUTO_REUSE):
        b = tower(right)
    assert [v.name for v in tf.trainable_variables()] == [
        "siamese/fc1/kernel:0", "siamese/fc1/bias:0", "siamese/fc2/kernel:0", "siamese/fc2/bias:0"]
    distance = tf.reduce_sum(tf.square(a - b), axis=1)
    x = np.random.RandomState(1).randn(5, 3).astype(np.float32)
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        out_a, out_b, d = sess.run([a, b, distance], {left: x, right: x})
        k1, b1, k2, b2 = sess.run(tf.trainable_variables())
    np.testing.assert_allclose(out_a, out_b)
    np.testing.assert_allclose(d, 0.0)
    np.testing.assert_allclose(out_a, np.maximum(x @ k1 + b1, 0) @ k2 + b2, rtol=1e-5, atol=1e-6)


def test_unnamed_layers_are_found_again_when_a_scope_is_reentered_with_reuse():
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.variable_scope("model"):
        h1 = tf.layers.dense(tf.layers.dense(x, 4), 2)
        bn1 = tf.layers.batch_normalization(h1, training=True)
    with tf.variable_scope("model", reuse=True):
        h2 = tf.layers.dense(tf.layers.dense(x, 4), 2)
        tf.layers.batch_normalization(h2, training=False)
    assert [v.op.name for v in tf.global_variables()] == [
        "model/dense/kernel", "model/dense/bias", "model/dense_1/kernel", "model/dense_1/bias",
        "model/batch_normalization/gamma", "model/batch_normalization/beta",
        "model/batch_normalization/moving_mean", "model/batch_normalization/moving_variance"]
    assert bn1.name.startswith("model/batch_normalization/")
    more = tf.layers.dense(x, 1)            # top level: dense, dense_1, … are never reset
    again = tf.layers.dense(x, 1)
    assert [v.op.name for v in tf.trainable_variables()[-4:]] == [
        "dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
    assert more is not again


def test_a_layer_name_used_twice_without_reuse_raises_as_tf1():
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.dense(x, 2, name="logits")
    with pytest.raises(ValueError, match="Variable logits/kernel already exists"):
        tf.layers.dense(x, 2, name="logits")
    y = tf.layers.dense(x, 2, name="logits", reuse=True)   # the layer's own reuse flag
    assert y.shape.as_list() == [None, 2] and len(tf.trainable_variables()) == 2
    with pytest.raises(ValueError, match="Variable conv/kernel does not exist"):
        tf.layers.conv2d(tf.reshape(x, [-1, 1, 3, 1]), 2, 1, name="conv", reuse=True)


# -- weight decay: regularizers on layers, get_variable and variable scopes ------------------------
@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_weight_decay_with_l2_regularizers(optimize):
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    l2 = tf.contrib.layers.l2_regularizer(0.01)
    h = tf.layers.dense(x, 3, activation=tf.nn.tanh, kernel_regularizer=l2,
                        kernel_initializer=tf.constant_initializer(0.5))
    with tf.variable_scope("out", regularizer=tf.contrib.layers.l1_regularizer(0.1)):
        w = tf.get_variable("w", [3, 1], initializer=tf.constant_initializer(-1.0))
    pred = tf.matmul(h, w)
    mse = tf.losses.mean_squared_error(y, pred)
    total = tf.losses.get_total_loss()
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 2
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(total)
    xb = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    yb = np.array([[0.5], [-0.5]], np.float32)
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        got_total, got_reg = sess.run([total, tf.losses.get_regularization_loss()], {x: xb, y: yb})
        sess.run(train_op, {x: xb, y: yb})
        w_after = sess.run(w)
    k, wv = np.full((2, 3), 0.5), np.full((3, 1), -1.0)
    hv = np.tanh(xb @ k)
    reg = 0.01 * (k ** 2).sum() / 2 + 0.1 * np.abs(wv).sum()
    assert got_reg == pytest.approx(reg, rel=1e-5)
    assert got_total == pytest.approx(((hv @ wv - yb) ** 2).mean() + reg, rel=1e-5)
    grad_w = 2 * hv.T @ (hv @ wv - yb) / 2 + 0.1 * np.sign(wv)
    np.testing.assert_allclose(w_after, wv - 0.1 * grad_w, rtol=1e-5)


def test_regularizer_arguments_as_tf1():
    assert tf.contrib.layers.l2_regularizer(0.0)(tf.constant([1.0])) is None
    with pytest.raises(ValueError, match="cannot be an integer"):
        tf.contrib.layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="less than 0"):
        tf.contrib.layers.l1_regularizer(-0.5)
    x = tf.placeholder(tf.float32, [None, 2])
    with pytest.raises(NotImplementedError, match="constraints"):
        tf.layers.dense(x, 2, kernel_constraint=lambda w: w)
    with pytest.raises(NotImplementedError, match="renorm"):
        tf.layers.batch_normalization(x, renorm=True)
