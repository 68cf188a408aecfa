"""The recurrent model, eager (PyTorch style): an LSTM cell run by a Python loop.

Each digit is read row by row (8 pixels per step), with 0-3 of its last rows dropped, so
sequences have 5-8 steps. Eager code needs no padding machinery: the loop runs for as many
steps as this batch has, decided by Python at run time (`int(lengths.max())`), and an
ordinary `if` keeps the last state of sequences that ended early. Training batches are
bucketed by length (`data.length_batches`), so there the `if` never fires; the held-out
set mixes lengths and takes it.

    for t in range(steps): h, c = LSTMCell(8, 64)(x[:, t], (h, c))
    logits = Linear(64, 10)(h)

Compare rnn_graph.py, where the number of steps must be part of the graph.

>>> from dualgrad.comparisons.models import rnn_eager
>>> from dualgrad.comparisons.models.common import rnn_task
>>> x, lengths, mask, y = rnn_task().batches(0)[0]
>>> rnn_eager.build(seed=0).predict(x, lengths, mask).shape == (len(y), 10)
True
"""
from __future__ import annotations

import numpy as np

from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from .common import compile_fn, numpy_state

LR, MOMENTUM, EPOCHS, HIDDEN = 0.1, 0.9, 20, 64


class RowLSTM(nn.Module):
    def __init__(self, n_in=8, hidden=HIDDEN, n_out=10):
        super().__init__()
        self.cell = nn.LSTMCell(n_in, hidden)
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x, lengths):
        """x: (N, T, 8) padded rows; lengths: the N true lengths (numpy array or tuple)."""
        lengths = np.asarray(lengths)
        steps, shortest = int(lengths.max()), int(lengths.min())
        h, c = self.cell(x[:, 0])                    # the state after the first row
        for t in range(1, steps):                    # a plain Python loop, as long as needed
            h2, c2 = self.cell(x[:, t], (h, c))
            if t < shortest:                         # every sequence is still going
                h, c = h2, c2
            else:                                    # some have ended: keep their last state
                going = eager.from_numpy((lengths > t)[:, None])
                h, c = eager.where(going, h2, h), eager.where(going, c2, c)
        return self.head(h)


def initial_weights(seed=0) -> dict:
    eager.manual_seed(seed)
    return numpy_state(RowLSTM())


class Trainer:
    def __init__(self, model, lr=LR, momentum=MOMENTUM, compiled=False):
        self.model = model
        self.opt = optim.SGD(model.parameters(), lr=lr, momentum=momentum)
        self.compiled = compiled
        self.train_step = compile_fn(self._train_step) if compiled else self._train_step

    def _train_step(self, x, lengths, y):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x, lengths), y)
        loss.backward()
        self.opt.step()
        return loss

    def step(self, x, lengths, mask, y):
        # NOTE: the mask is the graph version's; eager only needs the lengths. Compiled, they
        # go as a tuple: a Python value that is part of the trace's signature.
        lengths = tuple(int(v) for v in lengths) if self.compiled else np.asarray(lengths)
        return self.train_step(eager.from_numpy(x), lengths, eager.from_numpy(y)).item()

    def predict(self, x, lengths, mask):
        with eager.no_grad():
            return self.model(eager.from_numpy(x), np.asarray(lengths)).numpy()


def build(weights=None, seed=0, compiled=False, **opt):
    model = RowLSTM()
    model.load_state_dict(weights if weights is not None else initial_weights(seed))
    return Trainer(model, compiled=compiled, **opt)
