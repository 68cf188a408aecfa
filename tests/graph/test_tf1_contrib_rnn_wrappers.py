"""contrib.rnn's OutputProjectionWrapper, ResidualWrapper, LayerNormBasicLSTMCell and
static_bidirectional_rnn, contrib.layers.layer_norm and contrib.legacy_seq2seq, against a
NumPy reference of TF 1.15's definitions (TF 2.21 has no contrib, and its v1 cells do not run
here)."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

RNG = np.random.default_rng(17)


def _rnn(xs, lengths, kernel, bias):
    """BasicRNNCell over a list of (batch, depth) inputs, held past each length."""
    h, outs = np.zeros((xs[0].shape[0], bias.shape[0])), []
    for t, x in enumerate(xs):
        new = np.tanh(np.concatenate([x, h], 1) @ kernel + bias)
        live = (t < lengths)[:, None]
        h = np.where(live, new, h)
        outs.append(np.where(live, new, 0.0))
    return outs, h


def _reverse(xs, lengths):
    out = [x.copy() for x in xs]
    for b, n in enumerate(lengths):
        for t in range(n):
            out[t][b] = xs[n - 1 - t][b]
    return out


def test_static_bidirectional_rnn_with_projection_and_residual_wrappers():
    lengths = np.array([4, 2, 3])
    xs = [RNG.standard_normal((3, 3)) for _ in range(4)]
    with tf.Graph().as_default():
        fw = tf.contrib.rnn.OutputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(5), 2,
                                                    activation=tf.nn.relu)
        bw = tf.contrib.rnn.ResidualWrapper(tf.nn.rnn_cell.BasicRNNCell(3))
        outs, st_fw, st_bw = tf.contrib.rnn.static_bidirectional_rnn(
            fw, bw, [tf.constant(x) for x in xs], dtype=tf.float64, sequence_length=lengths)
        names = [v.name[:-2] for v in tf.trainable_variables()]
        assert names == ["bidirectional_rnn/fw/output_projection_wrapper/basic_rnn_cell/kernel",
                         "bidirectional_rnn/fw/output_projection_wrapper/basic_rnn_cell/bias",
                         "bidirectional_rnn/fw/output_projection_wrapper/kernel",
                         "bidirectional_rnn/fw/output_projection_wrapper/bias",
                         "bidirectional_rnn/bw/basic_rnn_cell/kernel",
                         "bidirectional_rnn/bw/basic_rnn_cell/bias"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for v in tf.trainable_variables():
                if v.name.endswith("bias:0"):
                    sess.run(v.assign(RNG.standard_normal(v.shape)))
            w = dict(zip(names, sess.run(tf.trainable_variables())))
            got, got_fw, got_bw = sess.run([outs, st_fw, st_bw])
    k = "bidirectional_rnn/fw/output_projection_wrapper/"
    f_out, f_h = _rnn(xs, lengths, w[k + "basic_rnn_cell/kernel"], w[k + "basic_rnn_cell/bias"])
    f_out = [np.where((t < lengths)[:, None], np.maximum(o @ w[k + "kernel"] + w[k + "bias"], 0),
                      0.0) for t, o in enumerate(f_out)]
    rev = _reverse(xs, lengths)
    b_out, b_h = _rnn(rev, lengths, w["bidirectional_rnn/bw/basic_rnn_cell/kernel"],
                      w["bidirectional_rnn/bw/basic_rnn_cell/bias"])
    # residual: inputs + output, zeroed past a length as static_rnn zeroes any cell's output
    b_out = _reverse([np.where((t < lengths)[:, None], x + o, 0.0)
                      for t, (x, o) in enumerate(zip(rev, b_out))], lengths)
    for t in range(4):
        np.testing.assert_allclose(got[t], np.concatenate([f_out[t], b_out[t]], 1),
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_fw, f_h, rtol=1e-10)
    np.testing.assert_allclose(got_bw, b_h, rtol=1e-10)


def test_wrapper_misuse():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="output_size must be > 0"):
            tf.contrib.rnn.OutputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(2), 0)
        cell = tf.contrib.rnn.ResidualWrapper(tf.nn.rnn_cell.BasicRNNCell(4))
        x = tf.constant(np.zeros((2, 3)))
        with pytest.raises(ValueError, match="must have the same shape"):
            cell(x, cell.zero_state(2, tf.float64))


def test_legacy_model_with_buckets_rnn_decoder_and_sequence_losses():
    legacy = tf.contrib.legacy_seq2seq
    V, steps = 5, 4
    enc_x = [RNG.standard_normal((3, 2)) for _ in range(steps)]
    dec_x = [RNG.standard_normal((3, 2)) for _ in range(steps)]
    targets = [RNG.integers(0, V, 3) for _ in range(steps)]
    weights = [(RNG.random(3) > 0.3).astype(np.float64) for _ in range(steps)]
    buckets = [(2, 2), (4, 3)]
    with tf.Graph().as_default():
        enc = tf.nn.rnn_cell.BasicRNNCell(4, name="encoder")
        dec = tf.contrib.rnn.OutputProjectionWrapper(tf.nn.rnn_cell.BasicRNNCell(4), V)

        def seq2seq(encoder_inputs, decoder_inputs):
            _, state = tf.nn.static_rnn(enc, encoder_inputs, dtype=tf.float64)
            return legacy.rnn_decoder(decoder_inputs, state, dec)
        outputs, losses = legacy.model_with_buckets(
            [tf.constant(x) for x in enc_x], [tf.constant(x) for x in dec_x],
            [tf.constant(t) for t in targets], [tf.constant(w) for w in weights], buckets,
            seq2seq)
        per_example = legacy.sequence_loss_by_example(outputs[1], [tf.constant(t) for t in
                                                                   targets[:3]],
                                                      [tf.constant(w) for w in weights[:3]],
                                                      average_across_timesteps=False)
        assert len(tf.trainable_variables()) == 6   # one set, shared by the buckets
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w = {v.name[:-2]: sess.run(v) for v in tf.trainable_variables()}
            got_losses, got_outputs, got_per = sess.run([losses, outputs, per_example])
    for (n_in, n_out), loss, outs in zip(buckets, got_losses, got_outputs):
        _, h = _rnn(enc_x[:n_in], np.full(3, n_in), w["rnn/encoder/kernel"],
                    w["rnn/encoder/bias"])
        k = "rnn_decoder/output_projection_wrapper/"
        logits = []
        for x in dec_x[:n_out]:
            h = np.tanh(np.concatenate([x, h], 1) @ w[k + "basic_rnn_cell/kernel"] +
                        w[k + "basic_rnn_cell/bias"])
            logits.append(h @ w[k + "kernel"] + w[k + "bias"])
        np.testing.assert_allclose(outs, logits, rtol=1e-10)
        cross = [np.log(np.exp(lg).sum(1)) - lg[np.arange(3), t]
                 for lg, t in zip(logits, targets)]
        per = sum(c * wt for c, wt in zip(cross, weights)) / (sum(weights[:n_out]) + 1e-12)
        np.testing.assert_allclose(loss, per.sum() / 3, rtol=1e-10)
        if n_out == 3:
            np.testing.assert_allclose(got_per, sum(c * wt for c, wt in zip(cross, weights)),
                                       rtol=1e-10)
    with pytest.raises(ValueError, match=r"Length of targets \(1\) must be at least"):
        legacy.model_with_buckets([1, 2, 3, 4], [1], [1], [1, 2, 3], buckets, seq2seq)


def _ln(x, gamma, beta, axes):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


@pytest.mark.parametrize("layer_norm", [True, False])
def test_layer_norm_basic_lstm_cell_matches_the_reference(layer_norm):
    xs = RNG.standard_normal((2, 3, 3))
    with tf.Graph().as_default():
        cell = tf.contrib.rnn.LayerNormBasicLSTMCell(4, forget_bias=0.5, layer_norm=layer_norm)
        outs, state = tf.nn.dynamic_rnn(cell, tf.constant(xs), dtype=tf.float64)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w = {}
            for v in tf.global_variables():
                key = v.name[:-2].split("layer_norm_basic_lstm_cell/")[1]
                if key != "kernel":   # gains 1, shifts and bias 0 by default: make them matter
                    sess.run(v.assign(RNG.standard_normal(v.shape)))
                w[key] = sess.run(v)
            got, got_state = sess.run([outs, state])
    norm = (lambda x, k: _ln(x, w[k + "/gamma"], w[k + "/beta"], [1])) if layer_norm \
        else (lambda x, k: x)
    c, h = np.zeros((2, 4)), np.zeros((2, 4))
    for t in range(3):
        z = np.concatenate([xs[:, t], h], 1) @ w["kernel"] + (0 if layer_norm else w["bias"])
        i, j, f, o = [norm(g, k) for g, k in zip(np.split(z, 4, axis=1),
                                                 ("input", "transform", "forget", "output"))]
        c = norm(c * _sig(f + 0.5) + _sig(i) * np.tanh(j), "state")
        h = np.tanh(c) * _sig(o)
        np.testing.assert_allclose(got[:, t], h, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_state.c, c, rtol=1e-9, atol=1e-12)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def test_contrib_layer_norm_axes_and_variables():
    x = RNG.standard_normal((2, 3, 4))
    with tf.Graph().as_default():
        y = tf.contrib.layers.layer_norm(tf.constant(x), begin_norm_axis=2, scope="ln")
        z = tf.contrib.layers.layer_norm(tf.constant(x), begin_params_axis=1, center=False)
        names = [v.name for v in tf.global_variables()]
        assert names == ["ln/beta:0", "ln/gamma:0", "LayerNorm/gamma:0"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            gamma = RNG.standard_normal((3, 4))
            sess.run(tf.global_variables()[2].assign(gamma))
            got_y, got_z = sess.run([y, z])
    np.testing.assert_allclose(got_y, _ln(x, 1.0, 0.0, [2]), rtol=1e-9)
    np.testing.assert_allclose(got_z, _ln(x, gamma, 0.0, [1, 2]), rtol=1e-9)
    with pytest.raises(ValueError, match="must be < rank"):
        tf.contrib.layers.layer_norm(tf.constant(x), begin_norm_axis=3)
