"""contrib.rnn's OutputProjectionWrapper and ResidualWrapper and static_bidirectional_rnn,
against a NumPy reference of TF 1.15's definitions (TF 2.21's v1 cells do not run here)."""
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
