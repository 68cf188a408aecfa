"""What both versions of a model share: the task (data, batches) and the initial weights.

A *task* turns the digits into the numpy arrays one model consumes, batch by batch, so the
eager and the graph trainer are fed identical inputs in an identical order. Each batch is a
tuple of arrays ending with the labels `y`; `test_inputs()` is the held-out set in the same
layout (without `y`).

Initial weights are made once, by the eager module (torch's initialisation, seeded by
`eager.manual_seed`), and handed to the graph version as a dict of numpy arrays: that is
the shared way to start both from the same point. `numpy_state(module)` does the export.

Each model file offers the same small protocol, so the CLI, the benchmark and the tests drive
every model alike:

    trainer = build(weights=None, seed=0, **options)  # a Trainer
    trainer.step(*batch) -> float        # one training step on a batch, returns the loss
    trainer.predict(*inputs) -> ndarray  # logits, no training
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import data as D


def compile_fn(fn):
    """`compiler.compile(fn)`: eager code traced into an optimised graph (the third way)."""
    from dualgrad import compiler
    return compiler.compile(fn)


def numpy_state(module) -> dict[str, np.ndarray]:
    """An eager module's state_dict as fresh float32 numpy arrays (name -> array)."""
    return {k: np.array(v.numpy(), copy=True) for k, v in module.state_dict().items()}


@dataclass
class Task:
    """The data side of one model: how to cut the digits into its batches."""
    name: str
    train: tuple                     # arrays over the training set, labels last
    test: tuple                      # held-out arrays, labels last
    make_batches: Callable           # (epoch) -> list of index arrays into `train`
    meta: dict = field(default_factory=dict)

    def batches(self, epoch: int = 0) -> list[tuple]:
        return [tuple(a[idx] for a in self.train) for idx in self.make_batches(epoch)]

    def test_inputs(self) -> tuple:
        return self.test[:-1]

    @property
    def y_test(self) -> np.ndarray:
        return self.test[-1]


def mlp_task(batch_size=64, seed=0) -> Task:
    d = D.digits()
    return Task("mlp", (d.x_train, d.y_train), (d.x_test, d.y_test),
                lambda e: D.batches(len(d.y_train), batch_size, seed, e))


def cnn_task(batch_size=64, seed=0) -> Task:
    d = D.digits()
    return Task("cnn", (D.images(d.x_train), d.y_train), (D.images(d.x_test), d.y_test),
                lambda e: D.batches(len(d.y_train), batch_size, seed, e))


def rnn_task(batch_size=16, seed=0) -> Task:
    """Row sequences of 5-8 steps, batched by length (every batch has one length)."""
    d = D.digits()
    tr, te = D.row_sequences(d.x_train, seed=1), D.row_sequences(d.x_test, seed=2)
    return Task("rnn", (tr.x, tr.lengths, tr.mask, d.y_train),
                (te.x, te.lengths, te.mask, d.y_test),
                lambda e: D.length_batches(tr.lengths, batch_size, seed, e))


def transformer_task(batch_size=64, seed=0) -> Task:
    """Row sequences as tokens, padded to 8 with a mask; batches of mixed lengths."""
    d = D.digits()
    tr, te = D.row_sequences(d.x_train, seed=1), D.row_sequences(d.x_test, seed=2)
    return Task("transformer", (tr.x, tr.mask, d.y_train), (te.x, te.mask, d.y_test),
                lambda e: D.batches(len(d.y_train), batch_size, seed, e))


TASKS = {"mlp": mlp_task, "cnn": cnn_task, "rnn": rnn_task, "transformer": transformer_task}


def evaluate(trainer, task: Task) -> float:
    """Held-out accuracy of a trainer on its task."""
    return D.accuracy(trainer.predict(*task.test_inputs()), task.y_test)


def fit(trainer, task: Task, epochs: int, on_step=None) -> list[float]:
    """Train for `epochs` over the task's batches; returns every step's loss."""
    losses = []
    for epoch in range(epochs):
        for batch in task.batches(epoch):
            losses.append(trainer.step(*batch))
            if on_step is not None:
                on_step(epoch, len(losses), losses[-1])
    return losses


class GraphTrainer:
    """What the graph models' trainers share once their graph is built: a cross-entropy loss on
    `self.logits` against the labels placeholder `self.y`, the optimizer's train op, and a
    Session; `step` and `predict` are one `Session.run` each. A subclass builds its graph,
    calls `finish` inside it, and says how a batch's inputs are fed (`feed`).
    """

    def finish(self, optimizer, optimize=True, distributed=False):
        """Add the loss, the train op and the initializer to the graph being built (call it in
        `with self.graph.as_default():`) and start the Session."""
        from dualgrad import graph
        self.loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(
            labels=self.y, logits=self.logits), name="loss")
        self.train_op = distribute(optimizer, distributed).minimize(self.loss)
        init = graph.global_variables_initializer()
        self.sess = graph.Session(graph=self.graph, optimize=optimize)
        self.sess.run(init)

    def feed(self, *inputs) -> dict:
        """The feed_dict for a batch's inputs (everything but the labels)."""
        raise NotImplementedError

    def step(self, *batch):
        *inputs, y = batch
        feed = self.feed(*inputs)
        feed[self.y] = y
        loss, _ = self.sess.run([self.loss, self.train_op], feed)
        return float(loss)

    def predict(self, *inputs):
        return self.sess.run(self.logits, self.feed(*inputs))


def given(value):
    """An initializer that returns `value` (TF1's `constant_initializer`)."""
    return lambda shape, dtype: value


def distribute(optimizer, distributed):
    """A graph model's optimizer, wrapped in Horovod's DistributedOptimizer when `distributed`
    (`mpiexec -n N dualgrad train MODEL --mode graph --distributed ddp`)."""
    if not distributed:
        return optimizer
    from dualgrad.graph import distributed as hvd
    return hvd.DistributedOptimizer(optimizer)
