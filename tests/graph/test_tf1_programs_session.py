"""TF1 programs about sessions, feeds and static shapes, written as TF1 tutorials wrote them
(`tf` is `dualgrad.graph`); expected values come from NumPy formulas written here. Each runs
with the graph optimiser off and on."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from dualgrad import graph as tf

OPTIMIZE = [False, True]
rng = np.random.RandomState(0)


# -- batch norm behind an `is_training` bool placeholder (declared without a shape) -------------
def _batchnorm_mlp():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    is_training = tf.placeholder(tf.bool, name="is_training")
    h = tf.layers.batch_normalization(x, training=is_training, momentum=0.9)
    loss = tf.reduce_sum(h * tf.constant([1.0, 2.0, 3.0]))
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, is_training, h, train_op


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_batch_norm_with_a_bool_placeholder_for_training(optimize):
    x, is_training, h, train_op = _batchnorm_mlp()
    batches = [rng.randn(8, 3).astype(np.float32) * 2 + 1 for _ in range(2)]
    mean, var = np.zeros(3), np.ones(3)
    for b in batches:   # TF1's moving averages: the biased batch variance, momentum 0.9
        mean, var = 0.9 * mean + 0.1 * b.mean(0), 0.9 * var + 0.1 * b.var(0)
    gamma, beta = np.ones(3), -0.1 * 2 * 8 * np.array([1.0, 2.0, 3.0])   # 2 steps, 8 rows
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        for b in batches:
            sess.run(train_op, {x: b, is_training: True})
        test = rng.randn(4, 3).astype(np.float32)
        out = sess.run(h, {x: test, is_training: False})
        moving = {v.op.name: sess.run(v) for v in tf.global_variables() if "moving" in v.name}
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"predicate must be a scalar"):
            sess.run(h, {x: test, is_training: [True, False]})
    np.testing.assert_allclose(moving["batch_normalization/moving_mean"], mean, rtol=1e-5)
    np.testing.assert_allclose(moving["batch_normalization/moving_variance"], var, rtol=1e-5)
    want = gamma * (test - mean) / np.sqrt(var + 1e-3) + beta
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_cond_and_while_loop_take_an_unshaped_bool_placeholder(optimize):
    flag = tf.placeholder(tf.bool)
    x = tf.placeholder(tf.float32, [None])
    y = tf.cond(flag, lambda: x * 2.0, lambda: x - 1.0)
    stop = tf.placeholder(tf.bool)
    n = tf.while_loop(lambda i: tf.logical_and(i < 3, tf.logical_not(stop)), lambda i: i + 1,
                      [tf.constant(0)])
    with tf.Session(optimize=optimize) as sess:
        np.testing.assert_allclose(sess.run(y, {flag: True, x: [1.0, 2.0]}), [2.0, 4.0])
        np.testing.assert_allclose(sess.run(y, {flag: False, x: [1.0, 2.0]}), [0.0, 1.0])
        assert sess.run(n, {stop: False}) == 3 and sess.run(n, {stop: True}) == 0


# -- feeding a Variable or an intermediate tensor, as TF1 allows ---------------------------------
@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_feed_a_variable_and_an_intermediate_tensor(optimize):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    W = tf.Variable([[1.0, 0.0], [0.0, 2.0]], name="W")
    hidden = tf.nn.relu(tf.matmul(x, W), name="hidden")
    logits = tf.reduce_sum(hidden, axis=1) * 3.0
    xb = np.array([[1.0, -1.0], [2.0, 3.0]], np.float32)
    other_w = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(logits, {x: xb}), 3 * np.maximum(xb @ [[1, 0], [0, 2]], 0).sum(1))
        np.testing.assert_allclose(sess.run(logits, {x: xb, W: other_w}),
                                   3 * np.maximum(xb @ other_w, 0).sum(1))
        h = np.array([[1.0, 1.0], [0.5, 0.0]], np.float32)   # no x needed: hidden is fed
        np.testing.assert_allclose(sess.run(logits, {hidden: h}), [6.0, 1.5])
        np.testing.assert_allclose(sess.run(logits, {"hidden:0": h}), [6.0, 1.5])
        np.testing.assert_allclose(sess.run(hidden, {hidden: h}), h)
        np.testing.assert_allclose(sess.run(W), [[1.0, 0.0], [0.0, 2.0]])   # feeding kept it
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(3,\).*'hidden:0'.*"
                                                                 r"expects shape \(\?, 2\)"):
            sess.run(logits, {hidden: np.ones(3, np.float32)})


# -- nested fetch structures ---------------------------------------------------------------------
Stats = collections.namedtuple("Stats", "loss accuracy")


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_fetch_dicts_tuples_and_namedtuples(optimize):
    a = tf.constant(2.0)
    b = tf.constant([1, 2])
    step = tf.no_op()
    with tf.Session(optimize=optimize) as sess:
        out = sess.run({"stats": Stats(a, b), "pair": (a, [b, step]), "od": collections.OrderedDict(z=a)})
    assert isinstance(out["stats"], Stats) and out["stats"].loss == 2.0
    assert isinstance(out["pair"], tuple) and isinstance(out["pair"][1], list)
    assert out["pair"][1][1] is None and list(out["pair"][1][0]) == [1, 2]
    assert isinstance(out["od"], collections.OrderedDict) and out["od"]["z"] == 2.0


# -- static shapes as TF1 code reads them ----------------------------------------------------------
def dense(x, units, name):
    """A layer as TF1 code wrote them by hand: the fan-in from the static shape."""
    in_dim = x.get_shape()[1].value
    with tf.variable_scope(name):
        w = tf.get_variable("w", [in_dim, units], initializer=tf.constant_initializer(0.5))
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
    return tf.matmul(x, w) + b


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_static_shapes_dimension_value_and_set_shape(optimize):
    images = tf.placeholder(tf.float32, name="images")   # shape given later, as after decoding
    images.set_shape([None, 4, 4, 1])
    shape = images.get_shape()
    assert shape.as_list() == [None, 4, 4, 1] and shape[0] is None and shape.ndims == 4
    flat_dim = (shape[1] * shape[2] * shape[3]).value
    assert flat_dim == 16 and int(shape[-1]) == 1 and shape[1:].as_list() == [4, 4, 1]
    assert shape.num_elements() is None and tf.TensorShape([2, 3]).num_elements() == 6
    flat = tf.reshape(images, [-1, flat_dim])
    out = dense(flat, 2, "fc")
    assert out.get_shape().as_list() == [None, 2]
    with pytest.raises(ValueError, match="not compatible"):
        images.set_shape([None, 5, 4, 1])
    with pytest.raises(NotImplementedError, match="refines only placeholders"):
        out.set_shape([8, 2])
    out.set_shape([None, 2])   # nothing new: accepted
    batch = np.arange(32, dtype=np.float32).reshape(2, 4, 4, 1)
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(out, {images: batch}),
                                   np.repeat(0.5 * batch.reshape(2, 16).sum(1, keepdims=True), 2, 1))
        with pytest.raises(tf.errors.InvalidArgumentError, match="expects shape"):
            sess.run(out, {images: np.ones((2, 4, 4), np.float32)})
