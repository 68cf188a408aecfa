"""tf.contrib.seq2seq.BeamSearchDecoder and gather_tree against a NumPy reference of TF 1.15's
beam search (the masking of finished beams, GNMT's length penalty, top-k over beam x word,
the parents' states, gather_tree's backtracking), written here from TF's code: TF 2.21 has no
contrib.seq2seq."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

s2s = tf.contrib.seq2seq
B, W, V, U, E = 2, 3, 6, 5, 4
RNG = np.random.default_rng(21)
EMB = RNG.standard_normal((V, E))
START = np.array([1, 2])


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _gather_tree_ref(step_ids, parent_ids, max_len, end):
    T = step_ids.shape[0]
    out = np.full_like(step_ids, end)
    for b in range(step_ids.shape[1]):
        n = min(T, max_len[b])
        for k in range(step_ids.shape[2]):
            if n <= 0:
                continue
            out[n - 1, b, k] = step_ids[n - 1, b, k]
            parent = parent_ids[n - 1, b, k]
            for t in range(n - 2, -1, -1):
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
            done = False
            for t in range(n):
                if done:
                    out[t, b, k] = end
                elif out[t, b, k] == end:
                    done = True
    return out


def _beam_ref(w, end, max_iter, penalty):
    """TF 1.15's dynamic_decode over BeamSearchDecoder(BasicLSTMCell, output Dense)."""
    words = np.arange(V)
    c, h = np.zeros((B, W, U)), np.zeros((B, W, U))
    beam0 = np.arange(W)[None, :] == 0
    log_probs = np.where(beam0, 0.0, -np.inf).repeat(B, 0)
    done = ~beam0.repeat(B, 0)
    lengths = np.zeros((B, W), np.int64)
    inp = EMB[START][:, None, :].repeat(W, 1)
    finished, seq_len, t = done | (max_iter <= 0), np.zeros((B, W), int), 0
    scores_all, ids_all, parents_all = [], [], []
    while not finished.all():
        z = np.concatenate([inp, h], 2) @ w["basic_lstm_cell/kernel"] + w["basic_lstm_cell/bias"]
        i, j, f, o = np.split(z, 4, axis=2)
        c2 = _sig(f + 1.0) * c + _sig(i) * np.tanh(j)
        h2 = _sig(o) * np.tanh(c2)
        logits = h2 @ w["dense/kernel"] + w["dense/bias"]
        m = logits.max(-1, keepdims=True)
        lsm = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
        only_end = np.where(words == end, 0.0, np.finfo(np.float64).min)
        step = np.where(done[..., None], only_end, lsm)
        total = log_probs[..., None] + step
        new_len = ((words != end)[None, None, :] & ~done[..., None]) + lengths[..., None]
        pen = (((5.0 + new_len.astype(np.float32)) ** np.float32(penalty)) /
               np.float32(6.0 ** penalty)).astype(np.float64) if penalty else 1.0
        flat = (total / pen).reshape(B, W * V)
        idx = np.argsort(-flat, axis=1, kind="stable")[:, :W]
        best = np.take_along_axis(flat, idx, 1)
        log_probs = np.take_along_axis(total.reshape(B, W * V), idx, 1)
        word, beam = idx % V, idx // V
        was_done = np.take_along_axis(done, beam, 1)
        lengths = np.take_along_axis(lengths, beam, 1) + ~was_done
        done = was_done | (word == end)
        c = np.take_along_axis(c2, beam[..., None], 1)
        h = np.take_along_axis(h2, beam[..., None], 1)
        inp = EMB[START][:, None, :].repeat(W, 1) if done.all() else EMB[word]
        seq_len = np.where(~finished, t + 1, seq_len)
        finished = done | (t + 1 >= max_iter)
        scores_all.append(best)
        ids_all.append(word)
        parents_all.append(beam)
        t += 1
    ids, parents = np.stack(ids_all), np.stack(parents_all)
    predicted = _gather_tree_ref(ids, parents, lengths.max(1), end)
    return (predicted.transpose(1, 0, 2), np.stack(scores_all).transpose(1, 0, 2),
            parents.transpose(1, 0, 2), seq_len, log_probs, lengths, done)


def _run(end, max_iter, penalty, weights=None):
    with tf.Graph().as_default():
        tf.set_random_seed(4)
        cell = tf.nn.rnn_cell.BasicLSTMCell(U)
        init = s2s.tile_batch(cell.zero_state(B, tf.float64), W)
        dec = s2s.BeamSearchDecoder(cell, tf.constant(EMB), tf.constant(START), end, init, W,
                                    output_layer=tf.layers.Dense(V),
                                    length_penalty_weight=penalty)
        out, st, lens = s2s.dynamic_decode(dec, maximum_iterations=max_iter)
        assert out.predicted_ids.shape == (B, None, W)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            rng = np.random.default_rng(8)
            for v in tf.global_variables():
                key = "/".join(v.name[:-2].split("/")[-2:])
                if weights is None:
                    value = sess.run(v)
                    if key.endswith("bias"):   # zeros by default: make them matter
                        value = rng.standard_normal(v.shape)
                    sess.run(v.assign(value))
                else:
                    sess.run(v.assign(weights[key]))
            got = sess.run([out, st, lens])
            weights = {"/".join(v.name[:-2].split("/")[-2:]): sess.run(v)
                       for v in tf.global_variables()}
    return weights, got


@pytest.mark.parametrize("penalty", [0.0, 0.6])
def test_beam_search_matches_the_numpy_reference(penalty):
    w, _ = _run(-1, 7, penalty)
    free = _beam_ref(w, -1, 7, penalty)[0]   # no end token: choose one the beams emit
    end = int(np.bincount(free[:, 1:4].ravel(), minlength=V).argmax())
    _, (out, st, lens) = _run(end, 7, penalty, w)
    predicted, scores, parents, seq_len, log_probs, lengths, done = _beam_ref(
        w, end, 7, penalty)
    assert (lengths < 7).any() and done.any()   # some beams ended with the end token
    np.testing.assert_array_equal(out.predicted_ids, predicted)
    np.testing.assert_allclose(out.beam_search_decoder_output.scores, scores, rtol=1e-9)
    np.testing.assert_array_equal(out.beam_search_decoder_output.parent_ids, parents)
    np.testing.assert_array_equal(lens, seq_len)
    np.testing.assert_allclose(st.log_probs, log_probs, rtol=1e-9)
    np.testing.assert_array_equal(st.lengths, lengths)
    np.testing.assert_array_equal(st.finished, done)


def test_gather_tree_follows_the_parents_and_ends_at_the_end_token():
    ids = RNG.integers(0, 5, size=(6, 3, 4)).astype(np.int32)
    parents = RNG.integers(0, 4, size=(6, 3, 4)).astype(np.int32)
    lengths = np.array([6, 3, 0], np.int32)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(s2s.gather_tree(tf.constant(ids), tf.constant(parents),
                                       tf.constant(lengths), 2))
    np.testing.assert_array_equal(got, _gather_tree_ref(ids, parents, lengths, 2))


def test_beam_search_with_attention_and_coverage_penalty_runs_and_misuse():
    with tf.Graph().as_default():
        memory = s2s.tile_batch(tf.constant(RNG.standard_normal((B, 5, 3))), W)
        mech = s2s.LuongAttention(U, memory, memory_sequence_length=s2s.tile_batch(
            tf.constant([5, 2]), W))
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(U), mech,
                                    attention_layer_size=U)
        init = cell.zero_state(B * W, tf.float64)
        dec = s2s.BeamSearchDecoder(cell, tf.constant(EMB), tf.constant(START), 0, init, W,
                                    output_layer=tf.layers.Dense(V),
                                    coverage_penalty_weight=0.4)
        out, st, _ = s2s.dynamic_decode(dec, maximum_iterations=4)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            ids, probs = sess.run([out.predicted_ids, st.accumulated_attention_probs])
        assert ids.shape[0] == B and ids.shape[2] == W and probs.shape == (B, W, 5)
        assert not probs[1, :, 2:].any()   # steps past the memory's length get no attention
        with pytest.raises(NotImplementedError, match="alignment_history"):
            history = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(U), mech,
                                           alignment_history=True)
            s2s.BeamSearchDecoder(history, tf.constant(EMB), tf.constant(START), 0,
                                  history.zero_state(B * W, tf.float64), W)
        plain = tf.nn.rnn_cell.BasicLSTMCell(U)
        with pytest.raises(ValueError, match="coverage_penalty_weight must be 0.0"):
            s2s.BeamSearchDecoder(plain, tf.constant(EMB), tf.constant(START), 0,
                                  plain.zero_state(B * W, tf.float64), W,
                                  coverage_penalty_weight=1.0).initialize()
        with pytest.raises(ValueError, match="start_tokens must be a vector"):
            s2s.BeamSearchDecoder(plain, tf.constant(EMB), tf.constant(1), 0,
                                  plain.zero_state(B * W, tf.float64), W)
