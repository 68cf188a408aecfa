"""One transformer encoder block, graph (TensorFlow 1.x style), on digits as row tokens.

The same block as transformer_eager.py, built once as a graph: `placeholder`s for the
padded tokens (None, 8, 8) and their mask (None, 8); the mask enters the attention scores
through `where_v2` (the `where` that broadcasts, as eager code's) — padding and masks are
the transformer's own idiom, so here the two styles look most alike. What differs: every shape is checked
while building (a wrong head split fails before any data exists), and the optimiser sees
the whole block at once (GELU, layer norm and softmax chains become fused loops).

>>> from dualgrad.comparisons.models import transformer_graph
>>> trainer = transformer_graph.build(seed=0)
>>> trainer.logits.shape
TensorShape([None, 10])
"""
from __future__ import annotations

import math

from dualgrad import graph

from .common import GraphTrainer, given

LR, EPOCHS = 3e-3, 15
D_MODEL, HEADS, D_FF, TOKENS = 32, 4, 64, 8
NEG = -1e9


def initial_weights(seed=0) -> dict:
    from . import transformer_eager
    return transformer_eager.initial_weights(seed)


def dense(x, w, name, activation=None):
    """graph.nn.dense with the eager Linear's weights (transposed to TF's (in, out))."""
    return graph.nn.dense(x, w[f"{name}.weight"].shape[0], activation=activation, name=name,
                          kernel_initializer=given(w[f"{name}.weight"].T),
                          bias_initializer=given(w[f"{name}.bias"]))


def layer_norm(x, w, name):
    with graph.name_scope(name):
        gamma = graph.Variable(w[f"{name}.weight"], name="gamma")
        beta = graph.Variable(w[f"{name}.bias"], name="beta")
        return graph.nn.layer_norm(x, gamma, beta, epsilon=1e-5)


def self_attention(x, mask, w):
    with graph.name_scope("attn"):
        dh = D_MODEL // HEADS
        qkv = graph.reshape(dense(x, w, "attn.qkv"), (-1, TOKENS, 3, HEADS, dh))
        qkv = graph.transpose(qkv, (2, 0, 3, 1, 4))                  # (3, N, H, T, dh)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = graph.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(dh))
        keep = graph.reshape(mask, (-1, 1, 1, TOKENS)) > 0.0
        att = graph.nn.softmax(graph.where_v2(keep, scores, NEG), axis=-1)
        y = graph.reshape(graph.transpose(graph.matmul(att, v), (0, 2, 1, 3)),
                          (-1, TOKENS, D_MODEL))
        return dense(y, w, "attn.out")


class Trainer(GraphTrainer):
    def __init__(self, weights, lr=LR, optimize=True, distributed=False):
        w = weights
        self.graph = graph.Graph()
        with self.graph.as_default():
            self.x = graph.placeholder(graph.float32, (None, TOKENS, 8), name="x")
            self.mask = graph.placeholder(graph.float32, (None, TOKENS), name="mask")
            self.y = graph.placeholder(graph.int64, (None,), name="y")
            pos = graph.Variable(w["pos"], name="pos")
            h = dense(self.x, w, "embed") + pos
            h = h + self_attention(layer_norm(h, w, "ln1"), self.mask, w)
            u = dense(layer_norm(h, w, "ln2"), w, "ff1",
                      activation=lambda t: graph.nn.gelu(t, approximate=True))
            h = h + dense(u, w, "ff2")
            m = graph.expand_dims(self.mask, -1)
            pooled = graph.reduce_sum(h * m, axis=1) / graph.reduce_sum(m, axis=1)
            self.logits = dense(layer_norm(pooled, w, "ln_out"), w, "head")
            self.finish(graph.train.AdamOptimizer(lr), optimize, distributed)

    def feed(self, x, mask):
        return {self.x: x, self.mask: mask}


def build(weights=None, seed=0, optimize=True, **opt):
    return Trainer(weights if weights is not None else initial_weights(seed),
                   optimize=optimize, **opt)
