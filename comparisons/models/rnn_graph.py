"""The recurrent model, graph (TensorFlow 1.x style): padding, masks and a fixed unroll.

A graph is built once, before any batch exists, so it cannot loop "as long as this batch
is". Two TF1 answers, both here:

- `unroll="static"` (TF1's `static_rnn`): every sequence is padded to the longest possible
  (8 rows) and the cell is built 8 times in a Python loop *at build time*. A mask (N, 8)
  fed with each batch says which steps are real; `where_v2(mask_t, new_state, state)` keeps
  the last real state of a sequence that has ended. Every batch pays for 8 steps.
- `unroll="while_loop"` (TF1's `dynamic_rnn`): one cell inside `graph.while_loop`, run for
  as many steps as a scalar placeholder `steps` says (fed with the batch's longest length,
  so a batch of 5-row digits runs 5 steps); the mask still handles sequences of different
  lengths within one batch.

The LSTM is written out by hand in TF1's fused form: one kernel (8 + 64, 4*64) applied to
[x_t, h], gates in torch's order (i, f, g, o) so the eager weights carry over.

>>> from dualgrad.comparisons.models import rnn_graph
>>> trainer = rnn_graph.build(seed=0)
>>> trainer.logits.shape
TensorShape([None, 10])
"""
from __future__ import annotations

import numpy as np

from dualgrad import graph

from .common import GraphTrainer

LR, MOMENTUM, EPOCHS, HIDDEN, STEPS = 0.1, 0.9, 20, 64, 8


def initial_weights(seed=0) -> dict:
    from . import rnn_eager
    return rnn_eager.initial_weights(seed)


class LSTM:
    """TF1-style cell: one fused kernel over [x, h]."""

    def __init__(self, w):
        with graph.name_scope("lstm"):
            self.kernel = graph.Variable(np.concatenate([w["cell.weight_ih"].T,
                                                         w["cell.weight_hh"].T]), name="kernel")
            # NOTE: two biases, as torch's cell has: one summed bias would be the same
            # function but a different parametrisation, so SGD would move it twice as fast.
            self.bias_ih = graph.Variable(w["cell.bias_ih"], name="bias_ih")
            self.bias_hh = graph.Variable(w["cell.bias_hh"], name="bias_hh")
        self.hidden = w["cell.weight_hh"].shape[1]

    def __call__(self, x_t, h, c):
        z = graph.matmul(graph.concat([x_t, h], axis=1), self.kernel) + self.bias_ih + self.bias_hh
        i, f, g, o = graph.split(z, 4, axis=1)
        c = graph.sigmoid(f) * c + graph.sigmoid(i) * graph.tanh(g)
        return graph.sigmoid(o) * graph.tanh(c), c


def static_rnn(cell, x, mask, h, c, steps=None):
    """Build the cell STEPS times; mask (N, STEPS) freezes ended sequences."""
    for t in range(STEPS):
        h2, c2 = cell(x[:, t], h, c)
        going = graph.expand_dims(mask[:, t], 1) > 0.0
        h, c = graph.where_v2(going, h2, h), graph.where_v2(going, c2, c)
    return h


def dynamic_rnn(cell, x, mask, h, c, steps):
    """One cell inside while_loop; `steps` is a tensor whose value comes with the batch."""
    x_tm = graph.transpose(x, (1, 0, 2))          # time-major (T, N, 8)
    m_tm = graph.transpose(mask, (1, 0))          # (T, N)

    def body(t, h, c):
        h2, c2 = cell(graph.gather(x_tm, t), h, c)
        going = graph.expand_dims(graph.gather(m_tm, t), 1) > 0.0
        return t + 1, graph.where_v2(going, h2, h), graph.where_v2(going, c2, c)

    _, h, _ = graph.while_loop(lambda t, h, c: t < steps, body,
                               [graph.constant(0, graph.int64), h, c])
    return h


class Trainer(GraphTrainer):
    def __init__(self, weights, lr=LR, momentum=MOMENTUM, optimize=True, distributed=False,
                 unroll="static"):
        w = weights
        self.graph = graph.Graph()
        with self.graph.as_default():
            self.x = graph.placeholder(graph.float32, (None, STEPS, 8), name="x")
            self.mask = graph.placeholder(graph.float32, (None, STEPS), name="mask")
            self.y = graph.placeholder(graph.int64, (None,), name="y")
            self.steps = graph.placeholder(graph.int64, (), name="steps")
            cell = LSTM(w)
            # (N, H) zeros: the batch size N is known only when a batch is fed
            zeros = graph.zeros_like(self.mask[:, :1]) + np.zeros((1, cell.hidden), np.float32)
            run = {"static": static_rnn, "while_loop": dynamic_rnn}[unroll]
            h = run(cell, self.x, self.mask, zeros, zeros, self.steps)
            self.unroll = unroll
            with graph.name_scope("head"):
                kernel = graph.Variable(w["head.weight"].T, name="kernel")
                bias = graph.Variable(w["head.bias"], name="bias")
                self.logits = graph.matmul(h, kernel) + bias
            self.finish(graph.train.MomentumOptimizer(lr, momentum), optimize, distributed)

    def feed(self, x, lengths, mask):
        # NOTE: the static unroll needs only the mask; while_loop also the longest length.
        feed = {self.x: x, self.mask: mask}
        if self.unroll == "while_loop":
            feed[self.steps] = np.int64(np.max(lengths))
        return feed


def build(weights=None, seed=0, optimize=True, **opt):
    return Trainer(weights if weights is not None else initial_weights(seed),
                   optimize=optimize, **opt)
