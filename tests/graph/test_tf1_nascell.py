"""tf.contrib.rnn.NASCell: its equations against a NumPy reference written from TF 1.15's
contrib code (TF 2.21 has no contrib), driven by dynamic_rnn with sequence lengths, and its
gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

RNG = np.random.default_rng(11)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _nas_step(x, c, m, kernel, recurrent, bias, proj):
    n = kernel.shape[1] // 8
    a, b = x @ kernel, m @ recurrent + (0 if bias is None else bias)
    a, b = [a[:, i * n:(i + 1) * n] for i in range(8)], [b[:, i * n:(i + 1) * n]
                                                         for i in range(8)]
    layer1 = [_sig(a[0] + b[0]), np.maximum(a[1] + b[1], 0), _sig(a[2] + b[2]),
              np.maximum(a[3] * b[3], 0), np.tanh(a[4] + b[4]), _sig(a[5] + b[5]),
              np.tanh(a[6] + b[6]), _sig(a[7] + b[7])]
    l2 = [np.tanh(layer1[0] * layer1[1]), np.tanh(layer1[2] + layer1[3]),
          np.tanh(layer1[4] * layer1[5]), _sig(layer1[6] + layer1[7])]
    new_c = np.tanh(l2[0] + c) * l2[1]
    new_m = np.tanh(new_c * np.tanh(l2[2] + l2[3]))
    return new_c, (new_m if proj is None else new_m @ proj)


@pytest.mark.parametrize("num_proj,use_bias", [(None, False), (3, True)])
def test_nas_cell_in_dynamic_rnn_matches_the_reference(num_proj, use_bias):
    batch, steps, depth, n = 3, 4, 2, 5
    lengths = np.array([4, 2, 0], np.int32)
    xv = RNG.standard_normal((batch, steps, depth))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, (None, steps, depth))
        cell = tf.contrib.rnn.NASCell(n, num_proj=num_proj, use_bias=use_bias)
        assert cell.output_size == (num_proj or n)
        outs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float64)
        names = [v.name for v in tf.trainable_variables()]
        want_names = ["rnn/nas_cell/recurrent_kernel:0", "rnn/nas_cell/kernel:0"] + \
            ["rnn/nas_cell/bias:0"] * use_bias + \
            ["rnn/nas_cell/projection_weights:0"] * (num_proj is not None)
        assert names == want_names
        variables = {v.name.split("/")[-1][:-2]: v for v in tf.trainable_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if use_bias:   # zeros by default: give it values so that it is tested
                sess.run(variables["bias"].assign(RNG.standard_normal(8 * n)))
            w = sess.run(variables)
            got_outs, got_state = sess.run([outs, state], {x: xv})
    c, m = np.zeros((batch, n)), np.zeros((batch, num_proj or n))
    want = np.zeros((batch, steps, num_proj or n))
    for t in range(steps):
        new_c, new_m = _nas_step(xv[:, t], c, m, w["kernel"], w["recurrent_kernel"],
                                 w.get("bias"), w.get("projection_weights"))
        live = (t < lengths)[:, None]
        c, m = np.where(live, new_c, c), np.where(live, new_m, m)
        want[:, t] = np.where(live, new_m, 0.0)
    np.testing.assert_allclose(got_outs, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_state.c, c, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_state.h, m, rtol=1e-10, atol=1e-12)


def test_nas_cell_gradients_match_finite_differences():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, (2, 3, 2))
        cell = tf.contrib.rnn.NASCell(3, num_proj=2, use_biases=True)
        outs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
        loss = tf.reduce_sum(outs * outs) + tf.reduce_sum(state.c)
        wrt = [x] + tf.trainable_variables()
        grads = tf.gradients(loss, wrt)
        xv = RNG.standard_normal((2, 3, 2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(cell.bias.assign(RNG.standard_normal(24) * 0.5))
            got = sess.run(grads, {x: xv})
            for var, g in zip(wrt[1:], got[1:]):
                value = sess.run(var)
                for k in [(0,) * value.ndim, tuple(s - 1 for s in value.shape)]:
                    fd = []
                    for eps in (1e-6, -1e-6):
                        moved = value.copy()
                        moved[k] += eps
                        sess.run(var.assign(moved))
                        fd.append(sess.run(loss, {x: xv}))
                    sess.run(var.assign(value))
                    assert g[k] == pytest.approx((fd[0] - fd[1]) / 2e-6, rel=1e-5, abs=1e-8)
            up, down = xv.copy(), xv.copy()
            up[1, 2, 0] += 1e-6
            down[1, 2, 0] -= 1e-6
            fd = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / 2e-6
    assert got[0][1, 2, 0] == pytest.approx(fd, rel=1e-5)
