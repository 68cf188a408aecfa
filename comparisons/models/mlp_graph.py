"""The MLP, graph (TensorFlow 1.x style): describe the computation, then run it.

    x (None, 64) -> dense1 (relu, 128) -> dense2 (10) -> logits

Nothing is computed while the model is built: `placeholder`s stand for the batches fed at
run time, `Variable`s hold the weights across runs, `gradients` and the optimizer's update
ops are more nodes of the same graph, and `Session.run` executes the part of the graph a
fetch needs. Shape errors with known dims surface while building, before any data exists.

Weights follow TF's layout, kernel (in, out), so `x @ kernel`; the eager version's Linear
weight is torch's (out, in). `build(weights=...)` takes the eager model's state_dict as
numpy arrays and transposes it, so both versions start from the same point.

>>> from dualgrad.comparisons.models import mlp_graph
>>> from dualgrad.comparisons.models.common import mlp_task, fit
>>> trainer = mlp_graph.build(seed=0)
>>> trainer.logits.shape          # static shape, known at build time
TensorShape([None, 10])
>>> losses = fit(trainer, mlp_task(), epochs=1)
>>> losses[-1] < losses[0]
True
"""
from __future__ import annotations

from dualgrad import graph

from .common import distribute, given

LR, MOMENTUM, EPOCHS = 0.1, 0.9, 20


def initial_weights(seed=0) -> dict:
    """The eager model's initial state_dict (the shared starting point), as numpy."""
    from . import mlp_eager
    return mlp_eager.initial_weights(seed)


class Trainer:
    """The graph, its train op and a Session; `step` is one `Session.run`.

    NOTE: spelled out here on purpose, although it is what `common.GraphTrainer` does for the
    other graph models: this file is the side-by-side showcase of a whole TF1 training step
    (docs/tutorial.md), as mlp_eager.py is of PyTorch's.
    """

    def __init__(self, weights, lr=LR, momentum=MOMENTUM, optimize=True, distributed=False):
        self.graph = graph.Graph()
        with self.graph.as_default():
            self.x = graph.placeholder(graph.float32, (None, 64), name="x")
            self.y = graph.placeholder(graph.int64, (None,), name="y")
            h = graph.nn.dense(self.x, 128, activation=graph.nn.relu, name="dense1",
                               kernel_initializer=given(weights["fc1.weight"].T),
                               bias_initializer=given(weights["fc1.bias"]))
            self.logits = graph.nn.dense(h, 10, name="dense2",
                                         kernel_initializer=given(weights["fc2.weight"].T),
                                         bias_initializer=given(weights["fc2.bias"]))
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
