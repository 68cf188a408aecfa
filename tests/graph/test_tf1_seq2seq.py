"""tf.contrib.seq2seq attention decoding: BahdanauAttention / LuongAttention, AttentionWrapper,
TrainingHelper / GreedyEmbeddingHelper, BasicDecoder, dynamic_decode.

TF 2.21 has no contrib.seq2seq and tensorflow_addons does not install beside it, so the values
are checked against a NumPy reference of TF 1.15's equations and of dynamic_decode's loop
(finished, lengths, impute_finished, maximum_iterations), written here from TF's code; the
gradients against finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

s2s = tf.contrib.seq2seq
RNG = np.random.default_rng(5)
B, MT, MD, UNITS = 2, 5, 3, 6          # batch, memory time, memory depth, LSTM units
MEM = RNG.standard_normal((B, MT, MD))
MEM_LEN = np.array([5, 3])
X = RNG.standard_normal((B, 4, 2))
X_LEN = np.array([4, 2])
VOCAB, EMB = 7, 2
EMBEDDING = RNG.standard_normal((VOCAB, EMB))


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _build(kind, layer_size, output_attention, helper_kind, end_token=0,
           maximum_iterations=None, impute=False):
    mem = tf.constant(MEM)
    if kind == "bahdanau":
        mech = s2s.BahdanauAttention(4, mem, memory_sequence_length=MEM_LEN, normalize=True)
    else:
        mech = s2s.LuongAttention(UNITS, mem, memory_sequence_length=MEM_LEN, scale=True)
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(UNITS), mech,
                                attention_layer_size=layer_size, alignment_history=True,
                                output_attention=output_attention)
    if helper_kind == "training":
        helper = s2s.TrainingHelper(tf.constant(X), X_LEN)
    else:
        helper = s2s.GreedyEmbeddingHelper(tf.constant(EMBEDDING), tf.constant([1, 2]),
                                           end_token)
    decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(B, tf.float64),
                               output_layer=tf.layers.Dense(VOCAB, use_bias=False))
    return s2s.dynamic_decode(decoder, impute_finished=impute,
                              maximum_iterations=maximum_iterations)


def _weights(sess):
    """Every variable by the last part of its name; zero-initialised ones set at random so
    that they are tested (the same values whatever ran before)."""
    rng, out = np.random.default_rng(9), {}
    for v in tf.global_variables():
        key = "/".join(v.name[:-2].split("/")[-2:])
        if key in ("bahdanau_attention/attention_b", "bahdanau_attention/attention_g",
                   "luong_attention/attention_g", "basic_lstm_cell/bias"):
            sess.run(v.assign(rng.standard_normal(v.shape) * 0.5))
        out[key] = sess.run(v)
    return out


def _reference(w, kind, layer_size, output_attention, helper_kind, end_token=0,
               maximum_iterations=None, impute=False):
    """TF 1.15's dynamic_decode over BasicDecoder(AttentionWrapper(BasicLSTMCell)), in NumPy."""
    mask = np.arange(MT)[None, :] < MEM_LEN[:, None]
    values = MEM * mask[..., None]
    keys = values @ w["memory_layer/kernel"]

    def attend(q):
        if kind == "bahdanau":
            v = w["bahdanau_attention/attention_v"]
            v = w["bahdanau_attention/attention_g"] * v / np.sqrt((v * v).sum())
            pq = q @ w["query_layer/kernel"]
            score = (v * np.tanh(keys + pq[:, None] + w["bahdanau_attention/attention_b"])
                     ).sum(2)
        else:
            score = np.einsum("bu,btu->bt", q, keys) * w["luong_attention/attention_g"]
        return _softmax(np.where(mask, score, -np.inf))

    att_size = layer_size or MD
    c, h = np.zeros((B, UNITS)), np.zeros((B, UNITS))
    attention, align = np.zeros((B, att_size)), np.zeros((B, MT))
    history = []
    if helper_kind == "training":
        finished = X_LEN <= 0
        inp = X[:, 0]
    else:
        finished = np.zeros(B, bool)
        inp = EMBEDDING[[1, 2]]
    if maximum_iterations is not None:
        finished = finished | (maximum_iterations <= 0)
    lengths, t, outs, ids_all = np.zeros(B, int), 0, [], []
    while not finished.all():
        z = np.concatenate([inp, attention, h], 1) @ w["basic_lstm_cell/kernel"] + \
            w["basic_lstm_cell/bias"]
        i, j, f, o = np.split(z, 4, axis=1)
        new_c = _sig(f + 1.0) * c + _sig(i) * np.tanh(j)
        new_h = _sig(o) * np.tanh(new_c)
        a = attend(new_h)
        ctx = np.einsum("bt,btd->bd", a, values)
        new_att = ctx if layer_size is None else \
            np.concatenate([new_h, ctx], 1) @ w["attention_layer/kernel"]
        logits = (new_att if output_attention else new_h) @ w["dense/kernel"]
        ids = logits.argmax(-1)
        if helper_kind == "training":
            fin_h = t + 1 >= X_LEN
            nxt = np.zeros_like(inp) if fin_h.all() else X[:, min(t + 1, X.shape[1] - 1)]
        else:
            fin_h = ids == end_token
            nxt = EMBEDDING[[1, 2]] if fin_h.all() else EMBEDDING[ids]
        next_fin = fin_h | finished
        lengths = np.where(~finished, t + 1, lengths)
        if maximum_iterations is not None:
            next_fin = next_fin | (t + 1 >= maximum_iterations)
        history.append(a)
        if impute:
            keep = finished[:, None]
            logits, ids = np.where(keep, 0, logits), np.where(finished, 0, ids)
            new_c, new_h = np.where(keep, c, new_c), np.where(keep, h, new_h)
            new_att, a = np.where(keep, attention, new_att), np.where(keep, align, a)
        outs.append(logits)
        ids_all.append(ids)
        c, h, attention, align, inp, finished, t = new_c, new_h, new_att, a, nxt, next_fin, t + 1
    return np.stack(outs, 1), np.stack(ids_all, 1), lengths, (c, h, attention, align,
                                                               np.stack(history), t)


CASES = {
    "bahdanau-training-imputed": dict(kind="bahdanau", layer_size=4, output_attention=True,
                                      helper_kind="training", impute=True),
    "luong-greedy-max-iterations": dict(kind="luong", layer_size=None, output_attention=False,
                                        helper_kind="greedy", maximum_iterations=5),
}


def _run(kw, end_token, weights=None):
    """(weights, [outputs, final state, lengths, stacked alignment history])."""
    with tf.Graph().as_default():
        tf.set_random_seed(6)   # NOTE: weights whose greedy ids are not all one token
        outputs, state, lengths = _build(**kw, end_token=end_token)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if weights is None:
                weights = _weights(sess)
            for v in tf.global_variables():
                sess.run(v.assign(weights["/".join(v.name[:-2].split("/")[-2:])]))
            return weights, sess.run([outputs, state, lengths,
                                      state.alignment_history.stack()])


@pytest.mark.parametrize("case", sorted(CASES))
def test_decoding_matches_the_numpy_reference(case):
    kw = CASES[case]
    greedy = kw["helper_kind"] == "greedy"
    w, got = _run(kw, end_token=-1 if greedy else 0)
    end = 0
    if greedy:   # an end token one sequence emits after its 1st step and the other never:
        free = _reference(w, **kw, end_token=-1)[1]   # one ends early, one at the limit
        ends = {k: [int(np.argmax(r == k)) + 1 if (r == k).any() else 5 for r in free]
                for k in range(VOCAB)}
        end = next(k for k, n in ends.items() if min(n) >= 2 and min(n) < 5 and max(n) == 5)
        _, got = _run(kw, end, w)
    out, st, lens, hist = got
    logits, ids, want_lens, (c, h, att, align, want_hist, steps) = _reference(
        w, **kw, end_token=end)
    if greedy:
        assert list(want_lens) == ends[end]
    np.testing.assert_array_equal(lens, want_lens)
    np.testing.assert_allclose(out.rnn_output, logits, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(out.sample_id, ids)
    np.testing.assert_allclose(st.cell_state.c, c, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st.cell_state.h, h, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st.attention, att, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st.alignments, align, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hist, want_hist, rtol=1e-9, atol=1e-12)
    assert st.time == steps and hist.shape == (steps, B, MT)


def test_variable_names_and_gradients_match_finite_differences():
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        outputs, state, _ = _build("bahdanau", 4, True, "training", impute=True)
        names = [v.name for v in tf.trainable_variables()]
        assert names == [
            "memory_layer/kernel:0", "decoder/attention_wrapper/basic_lstm_cell/kernel:0",
            "decoder/attention_wrapper/basic_lstm_cell/bias:0",
            "decoder/attention_wrapper/bahdanau_attention/query_layer/kernel:0",
            "decoder/attention_wrapper/bahdanau_attention/attention_v:0",
            "decoder/attention_wrapper/bahdanau_attention/attention_g:0",
            "decoder/attention_wrapper/bahdanau_attention/attention_b:0",
            "decoder/attention_wrapper/attention_layer/kernel:0", "decoder/dense/kernel:0"]
        loss = tf.reduce_sum(tf.square(outputs.rnn_output)) + tf.reduce_sum(state.attention)
        variables = tf.trainable_variables()
        grads = tf.gradients(loss, variables)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _weights(sess)
            got = sess.run(grads)
            for var, g in zip(variables, got):
                value = np.array(sess.run(var))
                k = tuple(s // 2 for s in value.shape)
                fd = []
                for eps in (1e-6, -1e-6):
                    moved = value.copy()
                    moved[k] += eps
                    sess.run(var.assign(moved))
                    fd.append(sess.run(loss))
                sess.run(var.assign(value))
                assert g[k] == pytest.approx((fd[0] - fd[1]) / 2e-6, rel=1e-5, abs=1e-8), \
                    var.name


def test_misuse_raises_tf_errors():
    with tf.Graph().as_default():
        mem = tf.constant(MEM)
        mech = s2s.LuongAttention(4, mem)
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(UNITS), mech)
        with pytest.raises(ValueError, match="Incompatible or unknown inner dimensions"):
            cell(tf.constant(X[:, 0]), cell.zero_state(B, tf.float64))
        with pytest.raises(TypeError, match="Expected state to be instance of "
                                            "AttentionWrapperState"):
            s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(4), s2s.LuongAttention(4, mem))(
                tf.constant(X[:, 0]), tf.constant(np.zeros((B, 4))))
        with pytest.raises(TypeError, match="attention_mechanism must be an "
                                            "AttentionMechanism"):
            s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(4), mem)
        with pytest.raises(NotImplementedError, match="several attention mechanisms"):
            s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(4), [mech, mech])
        with pytest.raises(TypeError, match="helper must be a Helper"):
            s2s.BasicDecoder(cell, None, None)
        with pytest.raises(TypeError, match="Expected decoder to be type Decoder"):
            s2s.dynamic_decode(cell)
        with pytest.raises(ValueError, match="start_tokens must be a vector"):
            s2s.GreedyEmbeddingHelper(tf.constant(EMBEDDING), tf.constant(1), 0)
        state = cell.zero_state(B, tf.float64).clone(attention=tf.constant(np.ones((B, MD))))
        assert isinstance(state, s2s.AttentionWrapperState)


def test_dynamic_rnn_drives_the_wrapper_as_dynamic_decode_does():
    """The same cell over the same inputs: dynamic_rnn and dynamic_decode(TrainingHelper) give
    the same outputs; with sequence_length, dynamic_rnn holds a finished example's state but
    lets the time and the alignment history run on, as TF1 (a scalar, a TensorArray)."""
    with tf.Graph().as_default():
        mech = s2s.BahdanauAttention(4, tf.constant(MEM), memory_sequence_length=MEM_LEN)
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicLSTMCell(UNITS), mech,
                                    attention_layer_size=3, alignment_history=True)
        x = tf.constant(X)
        with tf.variable_scope("decoder"):   # NOTE: so that both drivers share the variables
            by_rnn, _ = tf.nn.dynamic_rnn(cell, x, initial_state=cell.zero_state(B, tf.float64))
        helper = s2s.TrainingHelper(x, [4, 4])
        by_decode, _, _ = s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, cell.zero_state(
            B, tf.float64)))
        held, st = tf.nn.dynamic_rnn(cell, x, sequence_length=X_LEN, scope="decoder",
                                     initial_state=cell.zero_state(B, tf.float64))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b, h, s, hist = sess.run([by_rnn, by_decode.rnn_output, held, st,
                                         st.alignment_history.stack()])
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(h[0], a[0], rtol=1e-12)
    np.testing.assert_allclose(h[1, :2], a[1, :2], rtol=1e-12)
    assert not h[1, 2:].any() and s.time == 4 and hist.shape == (4, B, MT)
    np.testing.assert_allclose(s.alignments[1], hist[1, 1], rtol=1e-12)   # held at step 2


def test_sample_embedding_helper_draws_from_the_tempered_softmax():
    with tf.Graph().as_default():
        logits = np.log(np.array([[0.1, 0.2, 0.7]] * 4000))
        helper = s2s.SampleEmbeddingHelper(tf.constant(np.eye(3)), tf.zeros([4000], tf.int32),
                                           2, softmax_temperature=2.0, seed=3)
        ids = helper.sample(0, tf.constant(logits), None)
        with tf.Session() as sess:
            got = sess.run(ids)
        p = np.sqrt([0.1, 0.2, 0.7])
        assert got.dtype == np.int32
        np.testing.assert_allclose(np.bincount(got, minlength=3) / 4000, p / p.sum(), atol=0.03)

    def decode(helper_cls, **kw):
        with tf.Graph().as_default():
            tf.set_random_seed(6)
            cell = tf.nn.rnn_cell.GRUCell(5)
            helper = helper_cls(tf.constant(EMBEDDING), tf.constant([1, 2]), -1, **kw)
            dec = s2s.BasicDecoder(cell, helper, cell.zero_state(B, tf.float64),
                                   output_layer=tf.layers.Dense(VOCAB))
            out, _, lengths = s2s.dynamic_decode(dec, maximum_iterations=6)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                return sess.run([out.sample_id, lengths])

    greedy, lengths = decode(s2s.GreedyEmbeddingHelper)
    cold, _ = decode(s2s.SampleEmbeddingHelper, softmax_temperature=1e-9, seed=1)
    hot = [decode(s2s.SampleEmbeddingHelper, softmax_temperature=50.0, seed=1)[0]
           for _ in range(2)]
    np.testing.assert_array_equal(cold, greedy)   # a cold softmax samples the argmax
    assert list(lengths) == [6, 6] and hot[0].shape == (B, 6)
    np.testing.assert_array_equal(hot[0], hot[1])   # seeded: the same draws again
    assert (hot[0] != greedy).any()
