"""TF1's optimizers, gradient clipping and learning-rate decay, against NumPy written from
TF1's update formulas (and values TensorFlow 1's RMSPropOptimizer printed for this problem)."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

W0 = np.array([1.0, -2.0], np.float32)
SCALE = np.array([1.0, 3.0], np.float32)


def steps(opt, n=3, optimize=False):
    w = tf.Variable(W0)
    train = opt.minimize(tf.reduce_sum(w * w * SCALE))
    out = []
    with tf.Session(optimize=optimize) as s:
        s.run(tf.global_variables_initializer())
        for _ in range(n):
            s.run(train)
            out.append(s.run(w))
    return np.array(out)


def grad(w):
    return 2 * w * SCALE


@pytest.mark.parametrize("optimize", [False, True])
def test_rmsprop_with_momentum_equals_tf1(optimize):
    # printed by tf.compat.v1.train.RMSPropOptimizer(0.1, momentum=0.5) on this problem
    tf1 = [[0.8245884, -1.693214], [0.59954554, -1.332838], [0.387154, -1.0017285]]
    np.testing.assert_allclose(steps(tf.train.RMSPropOptimizer(0.1, momentum=0.5),
                                     optimize=optimize), tf1, rtol=1e-5)


def test_rmsprop_centered_adagrad_adadelta_follow_tf1_formulas():
    w, ms, mg, mom = W0.astype(np.float64), np.ones(2), np.zeros(2), np.zeros(2)
    want = []
    for _ in range(3):
        g = grad(w)
        ms = 0.9 * ms + 0.1 * g * g
        mg = 0.9 * mg + 0.1 * g
        mom = 0.1 * g / np.sqrt(ms + 1e-10 - mg * mg)
        w = w - mom
        want.append(w)
    np.testing.assert_allclose(steps(tf.train.RMSPropOptimizer(0.1, centered=True)), want,
                               rtol=1e-5)
    w, acc, want = W0.astype(np.float64), np.full(2, 0.1), []
    for _ in range(3):
        g = grad(w)
        acc = acc + g * g
        w = w - 0.5 * g / np.sqrt(acc)
        want.append(w)
    np.testing.assert_allclose(steps(tf.train.AdagradOptimizer(0.5)), want, rtol=1e-5)
    w, acc, upd, want = W0.astype(np.float64), np.zeros(2), np.zeros(2), []
    for _ in range(3):
        g = grad(w)
        acc = 0.95 * acc + 0.05 * g * g
        delta = np.sqrt(upd + 1e-8) / np.sqrt(acc + 1e-8) * g
        upd = 0.95 * upd + 0.05 * delta * delta
        w = w - 1.0 * delta
        want.append(w)
    np.testing.assert_allclose(steps(tf.train.AdadeltaOptimizer(1.0)), want, rtol=1e-4)


def test_clip_by_global_norm_and_value():
    a = tf.constant([3.0, 4.0])
    b = tf.constant([[12.0]])
    (ca, none, cb), norm = tf.clip_by_global_norm([a, None, b], 6.5)
    with tf.Session() as s:
        va, vb, n = s.run([ca, cb, norm])
    assert none is None and float(n) == pytest.approx(13.0)
    np.testing.assert_allclose(va, [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(vb, [[6.0]], rtol=1e-6)


def test_compute_apply_gradients_with_clipping_global_step_and_decay():
    w = tf.Variable(W0)
    loss = tf.reduce_sum(w * w * SCALE)
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, decay_steps=2, decay_rate=0.5, staircase=True)
    opt = tf.train.GradientDescentOptimizer(lr)
    grads, variables = zip(*opt.compute_gradients(loss))
    clipped, _ = tf.clip_by_global_norm(grads, 1.0)
    train = opt.apply_gradients(zip(clipped, variables), global_step=step)
    wv, lrs = W0.astype(np.float64), []
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for k in range(4):
            lrs.append(float(s.run(lr)))
            s.run(train)
            g = grad(wv)
            wv = wv - 0.1 * 0.5 ** (k // 2) * g * min(1.0, 1.0 / np.linalg.norm(g))
        np.testing.assert_allclose(s.run(w), wv, rtol=1e-5)
        assert int(s.run(step)) == 4
    assert lrs == pytest.approx([0.1, 0.1, 0.05, 0.05])


@pytest.mark.parametrize("kw", [{}, {"l1_regularization_strength": 0.5,
                                     "l2_regularization_strength": 0.1},
                                {"learning_rate_power": -0.7, "initial_accumulator_value": 0.5,
                                 "l2_shrinkage_regularization_strength": 0.2}])
def test_ftrl_equals_tf1(kw):
    tf1 = pytest.importorskip("tensorflow").compat.v1
    g = tf1.Graph()
    with g.as_default():
        w = tf1.Variable(W0)
        train = tf1.train.FtrlOptimizer(0.3, **kw).minimize(tf1.reduce_sum(w * w * SCALE))
        with tf1.Session(graph=g) as s:
            s.run(tf1.global_variables_initializer())
            want = [(s.run(train), s.run(w))[1] for _ in range(4)]
    with tf.Graph().as_default():
        got = steps(tf.train.FtrlOptimizer(0.3, **kw), n=4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
