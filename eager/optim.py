"""eager.optim: SGD, Adam and AdamW with torch.optim's interface and formulas.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn, optim
>>> model = nn.Linear(2, 1)
>>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> loss = (model(eager.ones(4, 2)) ** 2).mean()
>>> loss.backward(); opt.step(); opt.zero_grad()
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.updates import adam_update, adamw_update, sgd_update


class Optimizer:
    def __init__(self, params, defaults):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = defaults
        self.state = {id(p): {} for p in self.params}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.data[...] = 0

    def step(self):
        for p in self.params:
            if p.grad is not None:
                self._update(p, p.grad.data, self.state[id(p)])

    def _update(self, p, g, state):
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov and weight decay."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
        if lr < 0:
            raise ValueError(f"invalid learning rate {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      nesterov=nesterov))
        self.lr, self.momentum, self.weight_decay, self.nesterov = lr, momentum, weight_decay, \
            nesterov

    def _update(self, p, g, state):
        first = "buf" not in state
        new_p, buf = sgd_update(p.data, g, state.get("buf"), self.lr, self.momentum,
                                self.weight_decay, self.nesterov, first)
        if self.momentum:
            state["buf"] = buf if not first else np.array(buf, copy=True)
        np.copyto(p.data, new_p, casting="same_kind")


class Adam(Optimizer):
    """Adam (Kingma & Ba), torch's defaults: lr=1e-3, betas=(0.9, 0.999), eps=1e-8."""
    _rule = staticmethod(adam_update)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay

    def _update(self, p, g, state):
        if not state:
            state.update(t=0, m=np.zeros_like(p.data), v=np.zeros_like(p.data))
        state["t"] += 1
        new_p, state["m"], state["v"] = self._rule(
            p.data, g, state["m"], state["v"], state["t"], self.lr, self.betas[0],
            self.betas[1], self.eps, self.weight_decay)
        np.copyto(p.data, new_p, casting="same_kind")


class AdamW(Adam):
    """Adam with torch's decoupled weight decay: p -= lr * weight_decay * p, then Adam."""
    _rule = staticmethod(adamw_update)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
