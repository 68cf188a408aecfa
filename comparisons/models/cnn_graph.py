"""The CNN, graph (TensorFlow 1.x style), on 8x8x1 digit images (NHWC).

    conv 3x3 (1->8, SAME) -> relu -> max-pool 2 -> conv 3x3 (8->16, SAME) -> relu
    -> reshape (-1, 256) -> dense 10

Written the low-level TF1 way: NHWC images, explicit `Variable`s for HWIO filters and
biases, `nn.conv2d(x, w, strides=[1, 1, 1, 1], padding='SAME')`, `nn.bias_add`,
`nn.max_pool(ksize=[1, 2, 2, 1])`. The eager twin is PyTorch's NCHW with (out, in, kh, kw)
filters, so `initial_weights` converts its weights to TF's layouts (filters to HWIO, the
dense kernel's rows to the NHWC flattening order), and the feed transposes the shared NCHW
batches to NHWC.

>>> from dualgrad.comparisons.models import cnn_graph
>>> trainer = cnn_graph.build(seed=0)
>>> trainer.logits.shape
TensorShape([None, 10])
"""
from __future__ import annotations

from dualgrad import graph

from .common import GraphTrainer

LR, MOMENTUM, EPOCHS = 0.1, 0.9, 15


def initial_weights(seed=0) -> dict:
    """The eager model's initial weights (PyTorch layouts), shared by both styles."""
    from . import cnn_eager
    return cnn_eager.initial_weights(seed)


def tf_layouts(w) -> dict:
    """PyTorch's (out, in, kh, kw) filters as TF's (kh, kw, in, out); the dense kernel as
    (in, out) with its rows in NHWC flattening order (h, w, c) instead of NCHW's (c, h, w)."""
    fc = w["fc.weight"].T.reshape(16, 4, 4, 10).transpose(1, 2, 0, 3).reshape(256, 10)
    return {"conv1": w["conv1.weight"].transpose(2, 3, 1, 0), "conv1_b": w["conv1.bias"],
            "conv2": w["conv2.weight"].transpose(2, 3, 1, 0), "conv2_b": w["conv2.bias"],
            "fc": fc, "fc_b": w["fc.bias"]}


def nhwc(x):
    """The shared batches are NCHW (the eager twin's layout); TF1 code feeds NHWC."""
    return x.transpose(0, 2, 3, 1)


def conv_relu(x, filters, bias, name):
    with graph.name_scope(name):
        w = graph.Variable(filters, name="filters")
        b = graph.Variable(bias, name="bias")
        conv = graph.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
        return graph.nn.relu(graph.nn.bias_add(conv, b))


class Trainer(GraphTrainer):
    def __init__(self, weights, lr=LR, momentum=MOMENTUM, optimize=True, distributed=False):
        w = tf_layouts(weights)
        self.graph = graph.Graph()
        with self.graph.as_default():
            self.x = graph.placeholder(graph.float32, (None, 8, 8, 1), name="x")
            self.y = graph.placeholder(graph.int64, (None,), name="y")
            h = conv_relu(self.x, w["conv1"], w["conv1_b"], "conv1")              # (?, 8, 8, 8)
            h = graph.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID",
                                  name="pool")                                    # (?, 4, 4, 8)
            h = conv_relu(h, w["conv2"], w["conv2_b"], "conv2")                   # (?, 4, 4, 16)
            h = graph.reshape(h, [-1, 4 * 4 * 16])
            with graph.name_scope("dense"):
                kernel = graph.Variable(w["fc"], name="kernel")
                bias = graph.Variable(w["fc_b"], name="bias")
                self.logits = graph.matmul(h, kernel) + bias
            self.finish(graph.train.MomentumOptimizer(lr, momentum), optimize, distributed)

    def feed(self, x):
        return {self.x: nhwc(x)}


def build(weights=None, seed=0, optimize=True, **opt):
    return Trainer(weights if weights is not None else initial_weights(seed),
                   optimize=optimize, **opt)
