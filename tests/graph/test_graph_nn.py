"""graph.nn and graph.layers against the op library run on NumPy, and the modules' doctests."""
from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

from dualgrad import graph
from dualgrad import ops

RNG = np.random.default_rng(0)


def run(fetches, feeds=None):
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        return s.run(fetches, feeds)


def test_conv_and_pool_take_nchw_when_asked():
    xv = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    wv = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)      # OIHW, torch's
    hwio = wv.transpose(2, 3, 1, 0)
    x = graph.placeholder(graph.float32, (None, 3, 6, 6))
    same = graph.nn.conv2d(x, hwio, strides=[1, 1, 1, 1], padding="SAME", data_format="NCHW")
    valid = graph.nn.conv2d(x, hwio, [1, 1, 2, 2], "VALID", data_format="NCHW")
    pool = graph.nn.max_pool2d(x, ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2], padding="VALID",
                               data_format="NCHW")
    assert same.shape == (None, 4, 6, 6) and valid.shape == (None, 4, 2, 2)
    got = run([same, valid, pool], {x: xv})
    np.testing.assert_allclose(got[0], ops.conv2d(xv, wv, padding=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], ops.conv2d(xv, wv, stride=2), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[2], ops.max_pool2d(xv, 2))
    with pytest.raises(ValueError, match="data_format must be 'NHWC'"):
        graph.nn.conv2d(x, hwio, 1, "SAME", data_format="NWHC")
    with pytest.raises(ValueError, match=r"must be 1 along the batch and channel dims for "
                                         r"data_format='NCHW'"):
        graph.nn.conv2d(x, hwio, [1, 2, 2, 1], "SAME", data_format="NCHW")


def test_losses_activations_and_norms():
    lv = RNG.standard_normal((4, 5)).astype(np.float32)
    pv = np.abs(RNG.standard_normal((4, 5))).astype(np.float32)
    pv /= pv.sum(1, keepdims=True)
    kv = np.array([0, 4, 2, 2])
    logits = graph.placeholder(graph.float32, (None, 5))
    probs = graph.placeholder(graph.float32, (None, 5))
    labels = graph.placeholder(graph.int64, (None,))
    outs = run({
        "dense_ce": graph.nn.softmax_cross_entropy_with_logits(labels=probs, logits=logits),
        "sparse_ce": graph.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                        logits=logits),
        "softmax": graph.nn.softmax(logits), "log_softmax": graph.nn.log_softmax(logits),
        "gelu": graph.nn.gelu(logits), "gelu_tanh": graph.nn.gelu(logits, approximate=True),
        "ln": graph.nn.layer_norm(logits, np.ones(5, np.float32), np.zeros(5, np.float32)),
        "l2": graph.nn.l2_loss(logits), "bias": graph.nn.bias_add(logits, np.arange(5.0,
                                                                          dtype=np.float32)),
    }, {logits: lv, probs: pv, labels: kv})
    logp = lv - np.log(np.exp(lv).sum(1, keepdims=True))
    np.testing.assert_allclose(outs["dense_ce"], -(pv * logp).sum(1), rtol=1e-5)
    np.testing.assert_allclose(outs["sparse_ce"], -logp[np.arange(4), kv], rtol=1e-5)
    np.testing.assert_allclose(outs["softmax"], np.exp(logp), rtol=1e-5)
    np.testing.assert_allclose(outs["log_softmax"], logp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs["gelu"], ops.gelu(lv), rtol=1e-6)
    np.testing.assert_allclose(outs["gelu_tanh"], ops.gelu(lv, approximate="tanh"), rtol=1e-6)
    np.testing.assert_allclose(outs["ln"], ops.layer_norm(lv), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs["l2"], 0.5 * (lv * lv).sum(), rtol=1e-5)
    np.testing.assert_allclose(outs["bias"], lv + np.arange(5.0), rtol=1e-6)
    with pytest.raises(ValueError, match="labels= and logits="):
        graph.nn.sparse_softmax_cross_entropy_with_logits(labels=labels)


def test_embedding_lookup_and_dropout():
    table = graph.Variable(np.arange(12, dtype=np.float32).reshape(4, 3), name="emb")
    ids = graph.placeholder(graph.int64, (None, 2))
    got = run(graph.nn.embedding_lookup(table, ids), {ids: [[3, 0], [1, 1]]})
    np.testing.assert_array_equal(got, np.arange(12).reshape(4, 3)[[[3, 0], [1, 1]]])
    x = graph.ones((200, 50))
    d = run(graph.nn.dropout(x, rate=0.3))
    assert abs((d == 0).mean() - 0.3) < 0.03 and np.allclose(d[d != 0], 1 / 0.7)
    training = graph.placeholder(graph.bool, ())
    ld = graph.layers.dropout(x, rate=0.5, training=training)
    assert (run(ld, {training: False}) == 1.0).all()
    assert (run(ld, {training: True}) == 0.0).any()


def test_dense_and_layers_make_named_variables():
    x = graph.placeholder(graph.float32, (None, 8, 8, 1))
    h = graph.layers.conv2d(x, 4, 3, padding="same", activation=graph.nn.relu, name="c1")
    p = graph.layers.max_pooling2d(h, 2, 2)
    f = graph.layers.flatten(p)
    out = graph.nn.dense(f, 3, name="head")
    names = [v.name for v in graph.trainable_variables()]
    assert names == ["c1/kernel:0", "c1/bias:0", "head/kernel:0", "head/bias:0"]
    assert graph.trainable_variables()[0].shape == (3, 3, 1, 4)    # HWIO, as TF
    assert h.shape == (None, 8, 8, 4) and f.shape == (None, 64) and out.shape == (None, 3)
    assert run(out, {x: np.ones((2, 8, 8, 1))}).shape == (2, 3)
    with pytest.raises(graph.ShapeError, match="must be known"):
        graph.nn.dense(graph.placeholder(graph.float32, (2, None)), 3)


@pytest.mark.parametrize("module", ["graph", "graph.core", "graph.variables", "graph.session",
                                    "graph.gradients", "graph.control_flow", "graph.math_ops",
                                    "graph.nn", "graph.layers", "graph.train",
                                    "graph.serialize", "graph.inspect", "graph.dtypes",
                                    "graph.errors", "graph.array_ops", "graph.init_ops",
                                    "graph.variable_scope", "graph.rnn_cell", "graph.rnn",
                                    "graph.saver", "graph.metrics", "graph.config",
                                    "graph.scatter_nd_ops", "graph.segment_ops"])
def test_docstring_examples_run(module):
    graph.reset_default_graph()
    result = doctest.testmod(importlib.import_module(f"dualgrad.{module}"), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_v1_cross_entropy_backpropagates_only_into_logits_v2_into_labels_too():
    # TF1: softmax_cross_entropy_with_logits stops gradients at labels; _v2 does not
    x = graph.Variable(RNG.standard_normal((4, 5)).astype(np.float32))
    p = graph.Variable(np.full((4, 5), 0.2, np.float32))
    v1 = graph.reduce_sum(graph.nn.softmax_cross_entropy_with_logits(labels=p, logits=x))
    v2 = graph.reduce_sum(graph.nn.softmax_cross_entropy_with_logits_v2(labels=p, logits=x))
    g1 = graph.gradients(v1, [x, p])
    g2 = graph.gradients(v2, [x, p])
    assert g1[1] is None
    gx1, gx2, gp2, xv = run([g1[0], g2[0], g2[1], x])
    np.testing.assert_allclose(gx1, gx2)
    logp = xv - np.log(np.exp(xv).sum(-1, keepdims=True))
    np.testing.assert_allclose(gp2, -logp, rtol=1e-5)
