"""TF1 programs with learning-rate schedules, `tf.case` and running sums / products. `tf` is
`dualgrad.graph`; expected values are NumPy formulas written here (TF1's documented ones),
gradients are checked against finite differences. Each runs with the optimiser off and on."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dualgrad import graph as tf

OPTIMIZE = [False, True]


# -- a regression trained with a piecewise-constant schedule and momentum -------------------------
@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_momentum_regression_with_piecewise_constant_schedule(optimize):
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None])
    w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.piecewise_constant(global_step, [2, 4], [0.1, 0.05, 0.01])
    train_op = tf.train.MomentumOptimizer(lr, 0.9).minimize(loss, global_step=global_step)
    xb = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
    yb = np.array([1.0, 2.0, 0.0], np.float32)
    wv, acc, lrs = np.zeros(2), np.zeros(2), []
    for step in range(6):   # TF1's momentum: acc = m * acc + g; w -= lr * acc
        rate = 0.1 if step <= 2 else 0.05 if step <= 4 else 0.01
        g = 2 * xb.T @ (xb @ wv - yb) / len(yb)
        acc = 0.9 * acc + g
        wv = wv - rate * acc
        lrs.append(rate)
    got = []
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(6):
            got.append(float(sess.run(lr)))
            sess.run(train_op, {x: xb, y: yb})
        np.testing.assert_allclose(sess.run(w), wv, rtol=1e-5)
        assert sess.run(global_step) == 6
    np.testing.assert_allclose(got, lrs, rtol=1e-6)


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_decay_schedules_follow_tf1_formulas(optimize):
    step = tf.placeholder(tf.int64, [])
    got = {
        "poly": tf.train.polynomial_decay(0.1, step, 5, 0.01, power=2.0),
        "poly_cycle": tf.train.polynomial_decay(0.1, step, 5, 0.01, power=0.5, cycle=True),
        "natural": tf.train.natural_exp_decay(0.1, step, 3, 0.5),
        "natural_stair": tf.train.natural_exp_decay(0.1, step, 3, 0.5, staircase=True),
        "inverse": tf.train.inverse_time_decay(0.1, step, 3, 0.5),
        "inverse_stair": tf.train.inverse_time_decay(0.1, step, 3, 0.5, staircase=True),
        "cosine": tf.train.cosine_decay(0.1, step, 6, alpha=0.1),
    }

    def want(s):
        p = min(s, 5)
        cyc = 5 * max(math.ceil(s / 5), 1)
        c = min(s, 6)
        return {"poly": 0.09 * (1 - p / 5) ** 2 + 0.01,
                "poly_cycle": 0.09 * (1 - s / cyc) ** 0.5 + 0.01,
                "natural": 0.1 * math.exp(-0.5 * s / 3),
                "natural_stair": 0.1 * math.exp(-0.5 * (s // 3)),
                "inverse": 0.1 / (1 + 0.5 * s / 3), "inverse_stair": 0.1 / (1 + 0.5 * (s // 3)),
                "cosine": 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * c / 6)) + 0.1)}
    with tf.Session(optimize=optimize) as sess:
        for s in range(12):
            out = sess.run(got, {step: s})
            for k, v in want(s).items():
                assert out[k] == pytest.approx(v, rel=1e-5, abs=1e-7), (k, s)
    with pytest.raises(ValueError, match="one more than"):
        tf.train.piecewise_constant(step, [1, 2], [0.1, 0.2])


# -- tf.case: an activation chosen at run time -------------------------------------------------------
@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_case_picks_the_first_true_branch_and_differentiates(optimize):
    kind = tf.placeholder(tf.int32, [], name="kind")
    x = tf.Variable([-1.0, 0.5, 2.0])
    y = tf.case([(tf.equal(kind, 0), lambda: tf.nn.relu(x)),
                 (tf.less(kind, 2), lambda: tf.tanh(x)),
                 (tf.less(kind, 3), lambda: x * x)],
                default=lambda: tf.negative(x))
    grad = tf.gradients(tf.reduce_sum(y), x)[0]
    strict = tf.case({tf.equal(kind, 0): lambda: tf.constant(1.0),
                      tf.equal(kind, 1): lambda: tf.constant(2.0)})
    overlap = tf.case([(kind > 0, lambda: tf.constant(1)), (kind > 1, lambda: tf.constant(2))],
                      default=lambda: tf.constant(0), exclusive=True)
    xv = np.array([-1.0, 0.5, 2.0], np.float32)
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        for k, f, df in [(0, np.maximum(xv, 0), (xv > 0) * 1.0),
                         (1, np.tanh(xv), 1 - np.tanh(xv) ** 2),
                         (2, xv * xv, 2 * xv), (7, -xv, -np.ones(3))]:
            out, g = sess.run([y, grad], {kind: k})
            np.testing.assert_allclose(out, f, rtol=1e-6)
            np.testing.assert_allclose(g, df, rtol=1e-6)
        assert sess.run(strict, {kind: 1}) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions evaluated as True"):
            sess.run(strict, {kind: 5})
        assert sess.run(overlap, {kind: 0}) == 0 and sess.run(overlap, {kind: 1}) == 1
        with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive=True: more than 1"):
            sess.run(overlap, {kind: 2})


# -- running sums and products: discounted returns, survival probabilities ----------------------
@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_cumsum_and_cumprod_with_exclusive_and_reverse(optimize):
    rewards = tf.placeholder(tf.float32, [None, 4])
    keep = tf.placeholder(tf.float32, [None, 4])
    returns_to_go = tf.cumsum(rewards, axis=1, reverse=True)
    before = tf.cumsum(rewards, axis=1, exclusive=True)
    survive = tf.cumprod(keep, axis=1, exclusive=True)          # P(alive before step t)
    tail = tf.math.cumprod(keep, axis=-1, exclusive=True, reverse=True)
    col = tf.cumprod(keep, axis=0, reverse=True)
    r = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 2.0, 0.0]], np.float32)
    k = np.array([[0.9, 0.8, 0.5, 0.2], [1.0, 0.5, 0.5, 2.0]], np.float32)
    with tf.Session(optimize=optimize) as sess:
        out = sess.run([returns_to_go, before, survive, tail, col], {rewards: r, keep: k})
    np.testing.assert_allclose(out[0], np.cumsum(r[:, ::-1], 1)[:, ::-1])
    np.testing.assert_allclose(out[1], np.concatenate([np.zeros((2, 1)), np.cumsum(r, 1)[:, :-1]], 1))
    np.testing.assert_allclose(out[2], np.concatenate([np.ones((2, 1)), np.cumprod(k, 1)[:, :-1]], 1),
                               rtol=1e-6)
    np.testing.assert_allclose(out[3], [[0.08, 0.1, 0.2, 1.0], [0.5, 1.0, 2.0, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(out[4], np.cumprod(k[::-1], 0)[::-1], rtol=1e-6)


def test_cumprod_gradient_matches_finite_differences():
    x = tf.placeholder(tf.float64, [2, 3])
    weights = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]])
    f = tf.reduce_sum(tf.cumprod(x, axis=1, exclusive=True, reverse=True) * weights)
    g = tf.gradients(f, x)[0]
    xv = np.array([[0.7, -1.3, 2.0], [1.5, 0.4, -0.8]])
    with tf.Session(optimize=False) as sess:
        got = sess.run(g, {x: xv})
        num = np.zeros_like(xv)
        for i in np.ndindex(xv.shape):
            d = np.zeros_like(xv)
            d[i] = 1e-6
            num[i] = (sess.run(f, {x: xv + d}) - sess.run(f, {x: xv - d})) / 2e-6
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)
