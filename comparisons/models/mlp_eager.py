"""The MLP, eager (PyTorch style): a Module, and a loop that calls it.

    64 pixels -> Linear(64, 128) -> ReLU -> Linear(128, 10) -> logits

Each line runs as it is read: `print(h.shape)` or a breakpoint inside `forward` works.

>>> from dualgrad.comparisons.models import mlp_eager
>>> from dualgrad.comparisons.models.common import mlp_task, fit, evaluate
>>> trainer = mlp_eager.build(seed=0)
>>> losses = fit(trainer, mlp_task(), epochs=1)
>>> losses[-1] < losses[0]
True
"""
from __future__ import annotations

from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from .common import compile_fn, numpy_state

LR, MOMENTUM, EPOCHS = 0.1, 0.9, 20


class MLP(nn.Module):
    def __init__(self, n_in=64, hidden=128, n_out=10):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h)


def initial_weights(seed=0) -> dict:
    """The starting point both versions share: torch's init under `eager.manual_seed(seed)`."""
    eager.manual_seed(seed)
    return numpy_state(MLP())


class Trainer:
    """model + optimiser; `train_step` is the whole PyTorch training step (compiled: traced
    whole, forward, backward and the optimizer's update, as torch.compile of a step)."""

    def __init__(self, model, lr=LR, momentum=MOMENTUM, compiled=False):
        self.model = model
        self.opt = optim.SGD(model.parameters(), lr=lr, momentum=momentum)
        self.train_step = compile_fn(self._train_step) if compiled else self._train_step

    def _train_step(self, x, y):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss

    def step(self, x, y):
        return self.train_step(eager.from_numpy(x), eager.from_numpy(y)).item()

    def predict(self, x):
        with eager.no_grad():
            return self.model(eager.from_numpy(x)).numpy()


def build(weights=None, seed=0, compiled=False, **opt):
    model = MLP()
    model.load_state_dict(weights if weights is not None else initial_weights(seed))
    return Trainer(model, compiled=compiled, **opt)
