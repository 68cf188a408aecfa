"""TF1's layout and dropout rules on graph.nn: NHWC / HWIO by default, 4-element strides and
ksize, SAME padding for any stride and kernel (TF's split), pools that ignore padding,
bias_add per layout, and `dropout(x, keep_prob)`. Checked against NumPy written from TF's
documented formulas, and against TensorFlow itself where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph

RNG = np.random.default_rng(0)


def run(fetches, feeds=None, optimize=False):
    with graph.Session(optimize=optimize) as s:
        s.run(graph.global_variables_initializer())
        return s.run(fetches, feeds)


def same_pads(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def windows(x, k, s, pads, fill):
    """(N, Ho, Wo, kh, kw, C) windows of an NHWC array padded with `fill`."""
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=fill)
    v = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(1, 2))   # N, H', W', C, kh, kw
    return v[:, ::s[0], ::s[1]].transpose(0, 1, 2, 4, 5, 3)


def np_conv(x, w, s, pads):
    return np.einsum("nijhwc,hwco->nijo", windows(x, w.shape[:2], s, pads, 0.0), w)


CASES = [((7, 6), 3, (1, 1)), ((7, 6), 2, (2, 2)), ((8, 8), 4, (3, 3)), ((7, 6), 3, (2, 1)),
         ((5, 5), 1, (2, 2)), ((6, 7), 5, (2, 2))]


@pytest.mark.parametrize("hw,k,s", CASES)
def test_conv2d_nhwc_same_and_valid_match_tf_formulas(hw, k, s):
    xv = RNG.standard_normal((2, *hw, 3)).astype(np.float32)
    wv = RNG.standard_normal((k, k, 3, 4)).astype(np.float32)
    x = graph.placeholder(graph.float32, (None, *hw, 3))
    same = graph.nn.conv2d(x, wv, strides=[1, *s, 1], padding="SAME")
    valid = graph.nn.conv2d(x, wv, strides=[1, *s, 1], padding="VALID")
    pads = tuple(same_pads(n, k, st) for n, st in zip(hw, s))
    want_same, want_valid = np_conv(xv, wv, s, pads), np_conv(xv, wv, s, ((0, 0), (0, 0)))
    assert same.shape == (None, *want_same.shape[1:])
    assert valid.shape == (None, *want_valid.shape[1:])
    got = run([same, valid], {x: xv})
    np.testing.assert_allclose(got[0], want_same, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], want_valid, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hw,k,s", [c for c in CASES if c[2][0] == c[2][1]])
def test_pools_ignore_padding_as_tf(hw, k, s):
    xv = RNG.standard_normal((2, *hw, 3))
    x = graph.placeholder(graph.float64, (None, *hw, 3))
    ks, st = [1, k, k, 1], [1, *s, 1]
    outs = run([graph.nn.max_pool(x, ks, st, "SAME"), graph.nn.avg_pool(x, ks, st, "SAME"),
                graph.nn.max_pool(x, ks, st, "VALID"), graph.nn.avg_pool(x, ks, st, "VALID")],
               {x: xv})
    pads = tuple(same_pads(n, k, t) for n, t in zip(hw, s))
    wins = windows(xv, (k, k), s, pads, np.nan)
    np.testing.assert_allclose(outs[0], np.nanmax(wins, axis=(3, 4)))
    np.testing.assert_allclose(outs[1], np.nanmean(wins, axis=(3, 4)), rtol=1e-12)
    wins = windows(xv, (k, k), s, ((0, 0), (0, 0)), np.nan)
    np.testing.assert_allclose(outs[2], wins.max(axis=(3, 4)))
    np.testing.assert_allclose(outs[3], wins.mean(axis=(3, 4)), rtol=1e-12)


def test_nchw_is_the_same_computation_transposed():
    xv = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    wv = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    bv = RNG.standard_normal(4).astype(np.float32)
    x = graph.placeholder(graph.float32, (None, 7, 6, 3))
    xc = graph.transpose(x, [0, 3, 1, 2])
    nhwc = graph.nn.max_pool(graph.nn.bias_add(graph.nn.conv2d(x, wv, 2, "SAME"), bv),
                             [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
    nchw = graph.nn.max_pool(graph.nn.bias_add(graph.nn.conv2d(xc, wv, [1, 1, 2, 2], "SAME",
                                                               data_format="NCHW"),
                                               bv, data_format="NCHW"),
                             [1, 1, 2, 2], [1, 1, 1, 1], "SAME", data_format="NCHW")
    a, b = run([nhwc, nchw], {x: xv})
    np.testing.assert_allclose(a, b.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_bias_add_follows_the_layout_and_checks_the_channels():
    v = graph.placeholder(graph.float32, (None, 3, 3, 3))   # W == C: the silent case
    b = np.array([1.0, 2.0, 3.0], np.float32)
    last, first = run([graph.nn.bias_add(v, b), graph.nn.bias_add(v, b, data_format="NCHW")],
                      {v: np.zeros((1, 3, 3, 3))})
    assert (last[0, 0, 0] == b).all() and (first[0, :, 0, 0] == b).all()
    with pytest.raises(graph.ShapeError, match=r"bias_add: bias \(4,\) does not match the "
                                               r"last dim \(3\)"):
        graph.nn.bias_add(v, np.zeros(4, np.float32))


def test_misuse_raises_clear_errors():
    x = graph.placeholder(graph.float32, (None, 8, 8, 1))
    w = np.zeros((3, 3, 1, 2), np.float32)
    with pytest.raises(ValueError, match=r"strides \[2, 1, 1, 1\] must be 1 along the batch"):
        graph.nn.conv2d(x, w, [2, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'"):
        graph.nn.conv2d(x, w, 1, "FULL")
    with pytest.raises(NotImplementedError, match="dilations"):
        graph.nn.conv2d(x, w, 1, "SAME", dilations=[1, 2, 2, 1])
    with pytest.raises(NotImplementedError, match="square windows"):
        graph.nn.max_pool(x, [1, 2, 3, 1], [1, 2, 2, 1], "VALID")
    with pytest.raises(graph.ShapeError, match=r"needs the height of input \(\?, \?, 8, 1\)"):
        graph.nn.conv2d(graph.placeholder(graph.float32, (None, None, 8, 1)), w, 2, "SAME")


# -- dropout ---------------------------------------------------------------------------------
def test_dropout_second_argument_is_keep_prob():
    x = graph.placeholder(graph.float32, (None, 1000))
    out = run(graph.nn.dropout(x, 0.75), {x: np.ones((20, 1000))})
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.01
    by_rate = run(graph.nn.dropout(x, rate=0.75), {x: np.ones((20, 1000))})
    assert abs((by_rate != 0).mean() - 0.25) < 0.01
    assert graph.nn.dropout(x, 1.0) is x


def test_dropout_keep_prob_placeholder_fed_one_at_evaluation():
    x = graph.placeholder(graph.float32, (None, 500))
    keep_prob = graph.placeholder(graph.float32)
    h = graph.nn.dropout(x, keep_prob)
    xv = RNG.standard_normal((4, 500)).astype(np.float32)
    with graph.Session() as s:
        np.testing.assert_array_equal(s.run(h, {x: xv, keep_prob: 1.0}), xv)
        train = s.run(h, {x: xv, keep_prob: 0.5})
    kept = train != 0
    np.testing.assert_allclose(train[kept], xv[kept] * 2, rtol=1e-6)
    assert 0.45 < kept.mean() < 0.55


def test_dropout_noise_shape_shares_the_mask():
    x = graph.placeholder(graph.float32, (None, 6, 6, 8))
    out = run(graph.nn.dropout(x, 0.5, noise_shape=[4, 1, 1, 8]), {x: np.ones((4, 6, 6, 8))})
    assert (out == out[:, :1, :1, :]).all()
    with pytest.raises(ValueError, match="keep_prob in \\(0, 1\\]"):
        graph.nn.dropout(x, 0.0)
    with pytest.raises(ValueError, match="exactly one of keep_prob"):
        graph.nn.dropout(x, 0.5, rate=0.5)


def test_layers_dropout_keeps_tf_argument_order():
    x = graph.placeholder(graph.float32, (None, 100))
    training = graph.placeholder(graph.bool, ())
    d = graph.layers.dropout(x, 0.5, None, None, training)
    with graph.Session() as s:
        assert (s.run(d, {x: np.ones((2, 100)), training: False}) == 1).all()
        assert set(np.unique(s.run(d, {x: np.ones((2, 100)), training: True}))) == {0.0, 2.0}


# -- TensorFlow itself, where installed --------------------------------------------------------
def test_layout_padding_and_dropout_equal_tensorflow():
    tf = pytest.importorskip("tensorflow")
    v1 = tf.compat.v1
    for hw, k, s in CASES:
        xv = RNG.standard_normal((2, *hw, 3)).astype(np.float32)
        wv = RNG.standard_normal((k, k, 3, 4)).astype(np.float32)
        x = graph.placeholder(graph.float32, (None, *hw, 3))
        st = [1, *s, 1]
        ours = [graph.nn.conv2d(x, wv, st, "SAME"), graph.nn.conv2d(x, wv, st, "VALID")]
        theirs = [v1.nn.conv2d(xv, wv, st, "SAME"), v1.nn.conv2d(xv, wv, st, "VALID")]
        if s[0] == s[1]:
            ours += [graph.nn.max_pool(x, [1, k, k, 1], st, "SAME"),
                     graph.nn.avg_pool(x, [1, k, k, 1], st, "SAME")]
            theirs += [v1.nn.max_pool(xv, [1, k, k, 1], st, "SAME"),
                       v1.nn.avg_pool(xv, [1, k, k, 1], st, "SAME")]
        for a, b in zip(run(ours, {x: xv}), theirs):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-4, atol=1e-5)
    ones = np.ones((1, 4000), np.float32)
    theirs = v1.nn.dropout(ones, 0.8).numpy()
    ours = run(graph.nn.dropout(graph.constant(ones), 0.8))
    assert set(np.unique(theirs)) == set(np.unique(ours)) == {0.0, np.float32(1 / 0.8)}
