"""The CNN, eager (PyTorch style), on 1x8x8 digit images (NCHW).

    conv 3x3 (1->8, pad 1) -> ReLU -> max-pool 2 -> conv 3x3 (8->16, pad 1) -> ReLU
    -> flatten (16*4*4) -> Linear(256, 10)

>>> from dualgrad.comparisons.models import cnn_eager
>>> from dualgrad.comparisons.models.common import cnn_task
>>> trainer = cnn_eager.build(seed=0)
>>> x, y = cnn_task().batches(0)[0]
>>> trainer.predict(x).shape
(64, 10)
"""
from __future__ import annotations

from dualgrad import eager
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

from . import mlp_eager
from .common import numpy_state

LR, MOMENTUM, EPOCHS = 0.1, 0.9, 15


class CNN(nn.Module):
    def __init__(self, c1=8, c2=16, n_out=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc = nn.Linear(c2 * 4 * 4, n_out)

    def forward(self, x):                                  # x: (N, 1, 8, 8)
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)         # (N, 8, 4, 4)
        h = F.relu(self.conv2(h))                          # (N, 16, 4, 4)
        return self.fc(h.flatten(1))                       # (N, 10)


def initial_weights(seed=0) -> dict:
    eager.manual_seed(seed)
    return numpy_state(CNN())


# The PyTorch training step is the MLP's, word for word: see mlp_eager.Trainer.
Trainer = mlp_eager.Trainer


def build(weights=None, seed=0, compiled=False, **opt):
    model = CNN()
    model.load_state_dict(weights if weights is not None else initial_weights(seed))
    return Trainer(model, compiled=compiled, **{"lr": LR, "momentum": MOMENTUM, **opt})
