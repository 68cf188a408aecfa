"""TF1's variable scopes and initialisers, dynamic shapes, old argument names, and the RNN
cells and drivers, against NumPy written from TF's formulas (and TensorFlow, if installed)."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

RNG = np.random.default_rng(0)


def run(fetches, feeds=None, optimize=False):
    with tf.Session(optimize=optimize) as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feeds)


# -- variable scopes -----------------------------------------------------------------------------
def test_get_variable_reuse_rules_and_names():
    with tf.variable_scope("model"):
        with tf.variable_scope("layer1"):
            w = tf.get_variable("w", [3, 2])
            y = tf.matmul(tf.ones([1, 3]), w)
    assert w.name == "model/layer1/w:0" and y.name.startswith("model/layer1/")
    with tf.variable_scope("model", reuse=True):
        assert tf.get_variable("layer1/w", [3, 2]) is w
        with tf.variable_scope("layer1"):        # reuse is inherited
            assert tf.get_variable("w") is w
    with pytest.raises(ValueError, match="Variable model/layer1/w already exists, disallowed"):
        with tf.variable_scope("model/layer1"):
            tf.get_variable("w", [3, 2])
    with pytest.raises(ValueError, match="Variable other/w does not exist"):
        with tf.variable_scope("other", reuse=True):
            tf.get_variable("w", [3, 2])
    with pytest.raises(ValueError, match=r"specified shape \(2, 2\) and found shape \(3, 2\)"):
        with tf.variable_scope("model/layer1", reuse=True):
            tf.get_variable("w", [2, 2])
    made = []
    for _ in range(2):
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            made.append(tf.get_variable("v", [4]))
    assert made[0] is made[1]
    with tf.variable_scope("model") as scope:
        scope.reuse_variables()
        assert tf.get_variable("layer1/w") is w
    with tf.variable_scope(None, default_name="block") as a, \
            tf.variable_scope(None, default_name="block") as b:
        pass
    assert (a.name, b.name) == ("block", "block/block")


def test_scope_initializer_dtype_and_default_glorot():
    with tf.variable_scope("s", initializer=tf.constant_initializer(3.0)):
        c = tf.get_variable("c", [2])
        i = tf.get_variable("i", [2], dtype=tf.int32, initializer=tf.zeros_initializer())
    g = tf.get_variable("g", [60, 40])
    cv, iv, gv = run([c, i, g])
    assert (cv == 3).all() and iv.dtype == np.int32 and gv.dtype == np.float32
    lim = np.sqrt(6 / 100)
    assert np.abs(gv).max() <= lim and np.abs(gv).max() > 0.9 * lim


def test_initializers_follow_tf_formulas():
    shape = (3, 3, 32, 64)            # a conv kernel: fans are 9*32 and 9*64
    fan_in, fan_out = 9 * 32, 9 * 64
    vals = run([tf.random_normal_initializer(1.0, 2.0, seed=1)(shape),
                tf.truncated_normal_initializer(0.0, 2.0, seed=2)(shape),
                tf.glorot_uniform_initializer(seed=3)(shape),
                tf.glorot_normal_initializer(seed=4)(shape),
                tf.variance_scaling_initializer(2.0, "fan_in", "uniform", seed=5)(shape),
                tf.random_uniform_initializer(-1, 1, seed=6)(shape)])
    rn, tn, gu, gn, vs, ru = vals
    assert abs(rn.mean() - 1) < 0.05 and abs(rn.std() - 2) < 0.05
    assert np.abs(tn).max() <= 4.0 and abs(tn.std() - 2 * 0.8796) < 0.05
    assert np.abs(gu).max() <= np.sqrt(6 / (fan_in + fan_out))
    assert abs(gn.std() - np.sqrt(2 / (fan_in + fan_out))) < 0.002
    assert np.abs(vs).max() <= np.sqrt(3 * 2.0 / fan_in)
    assert ru.min() >= -1 and ru.max() < 1
    assert tf.constant_initializer([1, 2])((3,)).tolist() == [1, 2, 2]


def test_graph_seed_makes_sessions_agree():
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(42)
        a = tf.get_variable("a", [5], initializer=tf.random_normal_initializer())
        b = tf.Variable(tf.truncated_normal([5]))
        init = tf.global_variables_initializer()
    draws = []
    for _ in range(2):
        with tf.Session(graph=g) as s:
            s.run(init)
            draws.append(s.run([a, b]))
    np.testing.assert_array_equal(draws[0][0], draws[1][0])
    np.testing.assert_array_equal(draws[0][1], draws[1][1])
    assert not np.array_equal(draws[0][0], draws[0][1])


# -- dynamic shapes and unknown rank ----------------------------------------------------------------
def test_unknown_rank_placeholder_and_shape_ops():
    x = tf.placeholder(tf.float32)
    assert x.shape.ndims is None and str(x.shape) == "<unknown>"
    with pytest.raises(ValueError, match="unknown rank"):
        len(x.shape)
    total = tf.reduce_sum(x)
    assert total.shape == ()
    flat = tf.reshape(x, [-1, 4])
    assert flat.shape == (None, 4)
    z = tf.zeros(tf.shape(x))
    outs = run([tf.shape(x), tf.size(x), tf.rank(x), total, flat, z, tf.gradients(total, x)[0]],
               {x: np.ones((2, 3, 4), np.float32)})
    assert outs[0].tolist() == [2, 3, 4] and int(outs[1]) == 24 and int(outs[2]) == 3
    assert float(outs[3]) == 24 and outs[4].shape == (6, 4) and outs[5].shape == (2, 3, 4)
    assert (outs[6] == 1).all()


def test_dynamic_dims_fill_range_reshape_unstack():
    x = tf.placeholder(tf.float32, [None, 3])
    batch = tf.shape(x)[0]
    f = tf.fill([batch, 2], 7.0)
    r = tf.range(batch)
    back = tf.reshape(tf.reshape(x, [-1]), [batch, -1])
    cols = tf.unstack(x, axis=1)
    assert f.shape == (None, 2) and tf.zeros(tf.shape(x)).shape == (None, 3)
    assert len(cols) == 3 and cols[0].shape == (None,)
    xv = RNG.standard_normal((4, 3)).astype(np.float32)
    for opt in (False, True):
        fv, rv, bv, cv = run([f, r, back, cols], {x: xv}, optimize=opt)
        assert fv.shape == (4, 2) and (fv == 7).all() and rv.tolist() == [0, 1, 2, 3]
        np.testing.assert_array_equal(bv, xv)
        np.testing.assert_array_equal(cv[2], xv[:, 2])
    (g,) = tf.gradients(tf.reduce_sum(back * back), [x])
    np.testing.assert_allclose(run(g, {x: xv}), 2 * xv, rtol=1e-6)


def test_old_argument_names():
    x = tf.placeholder(tf.float32, [None, 3])
    xv = RNG.standard_normal((2, 3)).astype(np.float32)
    s, m, a, e, sm = run([tf.reduce_sum(x, reduction_indices=1, keep_dims=True),
                          tf.reduce_mean(x, reduction_indices=[0]),
                          tf.argmax(x, dimension=1), tf.expand_dims(x, dim=0),
                          tf.nn.softmax(x, dim=-1)], {x: xv})
    np.testing.assert_allclose(s, xv.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(m, xv.mean(0), rtol=1e-6)
    assert a.tolist() == xv.argmax(1).tolist() and e.shape == (1, 2, 3)
    np.testing.assert_allclose(sm.sum(1), 1, rtol=1e-6)
    with pytest.raises(ValueError, match="both 'keep_dims' and 'keepdims'"):
        tf.reduce_sum(x, keepdims=True, keep_dims=True)


# -- RNN cells ------------------------------------------------------------------------------------
def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def np_lstm(x, c, h, kernel, bias, forget_bias=1.0):
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    return c, np.tanh(c) * sigmoid(o)


def np_gru(x, h, gk, gb, ck, cb):
    r, u = np.split(sigmoid(np.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
    c = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    return u * h + (1 - u) * c


@pytest.mark.parametrize("kind", ["basic_rnn", "lstm", "gru"])
def test_cells_match_tf_formulas(kind):
    x = tf.placeholder(tf.float64, (None, 3))
    xv, hv, cv = (RNG.standard_normal((2, n)) for n in (3, 4, 4))
    if kind == "lstm":
        cell = tf.nn.rnn_cell.BasicLSTMCell(4, forget_bias=0.5)
        state = tf.nn.rnn_cell.LSTMStateTuple(tf.constant(cv), tf.constant(hv))
    else:
        cell = (tf.nn.rnn_cell.BasicRNNCell if kind == "basic_rnn" else tf.nn.rnn_cell.GRUCell)(4)
        state = tf.constant(hv)
    out, new = cell(x, state)
    variables = tf.trainable_variables()
    got, new_v, ws = run([out, new, variables], {x: xv})
    names = [v.name for v in variables]
    if kind == "lstm":
        assert names == ["basic_lstm_cell/kernel:0", "basic_lstm_cell/bias:0"]
        c_want, h_want = np_lstm(xv, cv, hv, *ws, forget_bias=0.5)
        np.testing.assert_allclose(new_v.c, c_want, rtol=1e-10)
        np.testing.assert_allclose(got, h_want, rtol=1e-10)
    elif kind == "gru":
        assert names == ["gru_cell/gates/kernel:0", "gru_cell/gates/bias:0",
                         "gru_cell/candidate/kernel:0", "gru_cell/candidate/bias:0"]
        assert (ws[1] == 1).all()      # the gates' bias starts at 1.0, as TF's
        np.testing.assert_allclose(got, np_gru(xv, hv, *ws), rtol=1e-10)
    else:
        np.testing.assert_allclose(got, np.tanh(np.concatenate([xv, hv], 1) @ ws[0] + ws[1]),
                                   rtol=1e-10)


def test_dynamic_rnn_sequence_length_and_static_rnn_agree_with_numpy():
    x = tf.placeholder(tf.float64, (None, 5, 3))
    lengths = tf.placeholder(tf.int32, (None,))
    cell = tf.nn.rnn_cell.LSTMCell(4)
    outs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float64)
    s_outs, s_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), sequence_length=lengths,
                                       dtype=tf.float64)
    assert [v.name for v in tf.trainable_variables()] == ["rnn/lstm_cell/kernel:0",
                                                          "rnn/lstm_cell/bias:0"]
    xv, lv = RNG.standard_normal((3, 5, 3)), np.array([5, 2, 0], np.int32)
    for opt in (False, True):
        got, st, s_got, s_st, (kernel, bias) = run(
            [outs, state, tf.stack(s_outs, axis=1), s_state, tf.trainable_variables()],
            {x: xv, lengths: lv}, optimize=opt)
        c, h = np.zeros((3, 4)), np.zeros((3, 4))
        want = np.zeros((3, 5, 4))
        for t in range(5):
            c2, h2 = np_lstm(xv[:, t], c, h, kernel, bias)
            alive = (t < lv)[:, None]
            want[:, t] = np.where(alive, h2, 0)
            c, h = np.where(alive, c2, c), np.where(alive, h2, h)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(s_got, want, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(st.h, h, rtol=1e-9)
        np.testing.assert_allclose(s_st.c, c, rtol=1e-9)


def test_gradients_through_dynamic_rnn_match_finite_differences():
    x = tf.placeholder(tf.float64, (2, 4, 3))
    cell = tf.nn.rnn_cell.GRUCell(3)
    outs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64, time_major=True)
    loss = tf.reduce_sum(outs * outs) + tf.reduce_sum(state)
    (gx,) = tf.gradients(loss, [x])
    xv = RNG.standard_normal((2, 4, 3))
    with tf.Session(optimize=False) as s:
        s.run(tf.global_variables_initializer())
        g = s.run(gx, {x: xv})
        eps, k = 1e-6, (1, 2, 0)
        up, down = xv.copy(), xv.copy()
        up[k] += eps
        down[k] -= eps
        fd = (s.run(loss, {x: up}) - s.run(loss, {x: down})) / (2 * eps)
    assert g[k] == pytest.approx(fd, rel=1e-5)


def test_bidirectional_dynamic_rnn_reverses_each_sequence():
    x = tf.placeholder(tf.float64, (None, 4, 2))
    lengths = tf.placeholder(tf.int32, (None,))
    fw, bw = tf.nn.rnn_cell.BasicRNNCell(3), tf.nn.rnn_cell.BasicRNNCell(3)
    (o_fw, o_bw), (s_fw, s_bw) = tf.nn.bidirectional_dynamic_rnn(
        fw, bw, x, sequence_length=lengths, dtype=tf.float64)
    names = [v.name for v in tf.trainable_variables()]
    assert names[0] == "bidirectional_rnn/fw/basic_rnn_cell/kernel:0"
    assert names[2] == "bidirectional_rnn/bw/basic_rnn_cell/kernel:0"
    xv, lv = RNG.standard_normal((2, 4, 2)), np.array([4, 2], np.int32)
    got_bw, sb, (_, _, kb, bb) = run([o_bw, s_bw, tf.trainable_variables()],
                                     {x: xv, lengths: lv})
    for b in range(2):
        h = np.zeros(3)
        for t in reversed(range(lv[b])):
            h = np.tanh(np.concatenate([xv[b, t], h]) @ kb + bb)
            np.testing.assert_allclose(got_bw[b, t], h, rtol=1e-9)
        np.testing.assert_allclose(sb[b], h, rtol=1e-9)
        assert (got_bw[b, lv[b]:] == 0).all()


def test_multi_cell_dropout_wrapper_and_names():
    x = tf.placeholder(tf.float32, (None, 6, 3))
    keep = tf.placeholder(tf.float32)
    cells = tf.nn.rnn_cell.MultiRNNCell([
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(4), output_keep_prob=keep),
        tf.nn.rnn_cell.GRUCell(2)])
    outs, state = tf.nn.dynamic_rnn(cells, x, dtype=tf.float32)
    assert [v.name for v in tf.trainable_variables()][:2] == [
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0",
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias:0"]
    assert isinstance(state[0], tf.nn.rnn_cell.LSTMStateTuple) and state[1].shape == (None, 2)
    xv = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    a, b = run([outs, outs], {x: xv, keep: 1.0})
    assert a.shape == (2, 6, 2)
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell


def test_cells_equal_tensorflow():
    tfr = pytest.importorskip("tensorflow")
    v1 = tfr.compat.v1
    try:
        ref_cell = v1.nn.rnn_cell.GRUCell(4)
        xv, hv = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4))
        ref_out, _ = ref_cell(tfr.constant(xv), tfr.constant(hv))
    except (AttributeError, ImportError, TypeError, ValueError) as e:
        pytest.skip(f"TensorFlow's v1 cells do not run eagerly here: {e}")
    weights = [w.numpy() for w in ref_cell.weights]
    np.testing.assert_allclose(ref_out.numpy(), np_gru(xv, hv, *weights), rtol=1e-6)
