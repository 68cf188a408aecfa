"""The realistic tier's models in dualgrad's graph engine, written the TF1 way.

Variables start from the shared PyTorch-layout weights (train_models.initial_weights),
converted to TF's layouts: dense kernels (in, out), NHWC images with HWIO filters, the
LSTM as one fused kernel over [x_t, h] unrolled statically (TF1's `static_rnn`), causal
attention masked with `matrix_band_part`. Adam, as in the eager twin.

>>> from dualgrad.comparisons.bench import train_models as M
>>> step = make_step("mlp", M.TINY["mlp"], optimize=True)
>>> step() > 0
True
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import graph

from . import train_models as M


def _var(value, name):
    return graph.Variable(np.ascontiguousarray(value, dtype=np.float32), name=name)


def dense(x, w, name):
    with graph.name_scope(name):
        kernel, bias = _var(w[f"{name}.weight"].T, "kernel"), _var(w[f"{name}.bias"], "bias")
        if len(x.shape) == 2:
            return graph.matmul(x, kernel) + bias
        return graph.tensordot(x, kernel, axes=1) + bias


def layer_norm(x, w, name):
    with graph.name_scope(name):
        gamma, beta = _var(w[f"{name}.weight"], "gamma"), _var(w[f"{name}.bias"], "beta")
        return graph.nn.layer_norm(x, gamma, beta, epsilon=1e-5)


def mlp(x, w, size):
    h = graph.nn.relu(dense(x, w, "fc1"))
    return dense(graph.nn.relu(dense(h, w, "fc2")), w, "fc3")


def cnn(x, w, size):
    h = x
    for i in range(len(size["chans"])):
        with graph.name_scope(f"conv{i}"):
            f = _var(w[f"convs.{i}.weight"].transpose(2, 3, 1, 0), "filters")
            b = _var(w[f"convs.{i}.bias"], "bias")
            h = graph.nn.relu(graph.nn.bias_add(
                graph.nn.conv2d(h, f, strides=[1, 1, 1, 1], padding="SAME"), b))
            h = graph.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    c, side = size["chans"][-1], size["image"] // 2 ** len(size["chans"])
    # NOTE: PyTorch flattens (c, h, w), NHWC code (h, w, c): the kernel's rows are reordered
    kernel = w["fc.weight"].T.reshape(c, side, side, -1).transpose(1, 2, 0, 3)
    with graph.name_scope("fc"):
        k = _var(kernel.reshape(c * side * side, -1), "kernel")
        return graph.matmul(graph.reshape(h, [-1, c * side * side]), k) + _var(w["fc.bias"], "bias")


def _attention(x, w, b, size):
    n, t, d, heads = size["batch"], size["tokens"], size["d"], size["heads"]
    qkv = graph.reshape(dense(x, w, f"{b}.qkv"), (n, t, 3, heads, d // heads))
    qkv = graph.transpose(qkv, (2, 0, 3, 1, 4))
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = graph.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(d // heads))
    causal = graph.matrix_band_part(graph.ones((t, t)), -1, 0) > 0.0
    att = graph.nn.softmax(graph.where_v2(causal, scores, -1e9), axis=-1)
    y = graph.reshape(graph.transpose(graph.matmul(att, v), (0, 2, 1, 3)), (n, t, d))
    return dense(y, w, f"{b}.proj")


def gpt(idx, w, size):
    tok, pos = _var(w["tok.weight"], "tok"), _var(w["pos.weight"], "pos")
    h = graph.nn.embedding_lookup(tok, idx) + pos
    for i in range(size["blocks"]):
        b = f"blocks.{i}"
        h = h + _attention(layer_norm(h, w, f"{b}.ln1"), w, b, size)
        u = graph.nn.gelu(dense(layer_norm(h, w, f"{b}.ln2"), w, f"{b}.fc"), approximate=True)
        h = h + dense(u, w, f"{b}.out")
    return dense(layer_norm(h, w, "ln_f"), w, "head")


def lstm(x, w, size):
    n, hid = size["batch"], size["hidden"]
    kernel = _var(np.concatenate([w["rnn.weight_ih_l0"], w["rnn.weight_hh_l0"]], 1).T, "kernel")
    bias = _var(w["rnn.bias_ih_l0"] + w["rnn.bias_hh_l0"], "bias")
    h = c = graph.zeros((n, hid), graph.float32)
    for t in range(size["steps"]):
        z = graph.matmul(graph.concat([x[:, t], h], 1), kernel) + bias
        i, f, g, o = graph.split(z, 4, axis=1)
        c = graph.sigmoid(f) * c + graph.sigmoid(i) * graph.tanh(g)
        h = graph.sigmoid(o) * graph.tanh(c)
    return dense(h, w, "head")


FORWARD = {"mlp": mlp, "cnn": cnn, "gpt": gpt, "lstm": lstm}


def make_step(name, size, optimize=True, weights=None, memory_budget=None):
    """A zero-argument training step: one Session.run of the loss and Adam's update (its
    Session is the step's `session`, its fetches and feeds `fetches` and `feed`)."""
    weights = M.initial_weights(name, size) if weights is None else weights
    x_np, y_np = M.batch(name, size)
    if name == "cnn":
        x_np = np.ascontiguousarray(x_np.transpose(0, 2, 3, 1))
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.int64 if name == "gpt" else graph.float32, x_np.shape, "x")
        y = graph.placeholder(graph.int64, y_np.shape, "y")
        logits = FORWARD[name](x, weights, size)
        logits = graph.reshape(logits, (-1, logits.shape[-1]))
        loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = graph.train.AdamOptimizer(M.LR).minimize(loss)
        init = graph.global_variables_initializer()
    sess = graph.Session(graph=g, optimize=optimize)
    sess.run(init)
    if memory_budget is not None:   # NOTE: the initializer's plan has no budget to meet
        values = sess.variable_values()
        sess = graph.Session(graph=g, memory_budget=memory_budget)
        sess.load_variable_values(values)
    feed = {x: x_np, y: y_np}

    def step():
        return float(sess.run([loss, train], feed)[0])
    step.session, step.fetches, step.feed = sess, [loss, train], feed
    return step
