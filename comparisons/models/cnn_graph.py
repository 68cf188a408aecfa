"""The CNN, graph (TensorFlow 1.x style), on 1x8x8 digit images (NCHW).

    conv 3x3 (1->8, SAME) -> relu -> max-pool 2 -> conv 3x3 (8->16, SAME) -> relu
    -> reshape (-1, 256) -> dense 10

Written the low-level TF1 way: explicit `Variable`s for filters and biases, `nn.conv2d`,
`nn.max_pool2d`. dualgrad keeps the op library's NCHW layout and (out, in, kh, kw) filters
in both engines, so the eager weights are used as they are (only the dense kernel is
transposed to TF's (in, out)).

>>> from dualgrad.comparisons.models import cnn_graph
>>> trainer = cnn_graph.build(seed=0)
>>> trainer.logits.shape
(None, 10)
"""
from __future__ import annotations

from dualgrad import graph

from .common import distribute

LR, MOMENTUM, EPOCHS = 0.1, 0.9, 15


def initial_weights(seed=0) -> dict:
    from . import cnn_eager
    return cnn_eager.initial_weights(seed)


def conv_relu(x, filters, bias, name):
    with graph.name_scope(name):
        w = graph.Variable(filters, name="filters")
        b = graph.Variable(bias.reshape(1, -1, 1, 1), name="bias")
        return graph.nn.relu(graph.nn.conv2d(x, w, strides=1, padding="SAME") + b)


class Trainer:
    def __init__(self, weights, lr=LR, momentum=MOMENTUM, optimize=True, distributed=False):
        w = weights
        self.graph = graph.Graph()
        with self.graph.as_default():
            self.x = graph.placeholder(graph.float32, (None, 1, 8, 8), name="x")
            self.y = graph.placeholder(graph.int64, (None,), name="y")
            h = conv_relu(self.x, w["conv1.weight"], w["conv1.bias"], "conv1")   # (?, 8, 8, 8)
            h = graph.nn.max_pool2d(h, 2, 2, name="pool")                         # (?, 8, 4, 4)
            h = conv_relu(h, w["conv2.weight"], w["conv2.bias"], "conv2")        # (?, 16, 4, 4)
            h = graph.reshape(h, (-1, 16 * 4 * 4))
            with graph.name_scope("dense"):
                kernel = graph.Variable(w["fc.weight"].T, name="kernel")
                bias = graph.Variable(w["fc.bias"], name="bias")
                self.logits = graph.matmul(h, kernel) + bias
            self.loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(
                labels=self.y, logits=self.logits), name="loss")
            opt = distribute(graph.train.MomentumOptimizer(lr, momentum), distributed)
            self.train_op = opt.minimize(self.loss)
            init = graph.global_variables_initializer()
        self.sess = graph.Session(graph=self.graph, optimize=optimize)
        self.sess.run(init)

    def step(self, x, y):
        loss, _ = self.sess.run([self.loss, self.train_op], {self.x: x, self.y: y})
        return float(loss)

    def predict(self, x):
        return self.sess.run(self.logits, {self.x: x})


def build(weights=None, seed=0, optimize=True, **opt):
    return Trainer(weights if weights is not None else initial_weights(seed),
                   optimize=optimize, **opt)
