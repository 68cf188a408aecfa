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


# NOTE: below this many parameters the flat pass's gathers and scatters cost more than the
# per-parameter NumPy calls they save (measured: SGD on 4-6 parameters 17-45 µs per
# parameter against 28-60 µs flat; Adam on 19 parameters 185 µs against 102 µs flat)
FLAT_MIN = 8


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
        groups = {}
        for p in self.params:
            if p.grad is not None:
                g = p.grad.data
                key = (g.dtype, p.data.dtype, self._phase(self.state[id(p)]))
                groups.setdefault(key, []).append(p)
        for group in groups.values():
            if len(group) >= FLAT_MIN and group[0].data.dtype == group[0].grad.data.dtype:
                self._flat_step(group)
            else:
                for p in group:
                    self._update(p, p.grad.data, self.state[id(p)])

    def _update(self, p, g, state):
        raise NotImplementedError

    # NOTE: the multi-tensor path (torch's foreach): the rule runs once on all parameters of a
    # group laid end to end, instead of ~5-12 NumPy calls per parameter; the state arrays
    # stay per parameter (views into one flat buffer). Same elementwise arithmetic, so the
    # same bits as parameter by parameter.
    _STATE_ARRAYS = ()

    def _phase(self, state):
        """What must be equal for parameters to share one flat update (e.g. Adam's t)."""
        return None

    def _flat_step(self, group):
        flat = _FlatGroup(group, self.state, self._STATE_ARRAYS)
        p_all = np.concatenate([p.data.reshape(-1) for p in group])
        g_all = np.concatenate([p.grad.data.reshape(-1) for p in group])
        holder = _Holder(p_all, flat.gather())
        self._update(holder, g_all, holder.state)
        flat.scatter(holder.data, holder.state)


class _Holder:
    """Stands for one parameter in `_update`: the group's values laid end to end."""

    def __init__(self, data, state):
        self.data, self.state = data, state


class _FlatGroup:
    """The parameters of one flat update: offsets, and their state arrays gathered."""

    def __init__(self, params, states, keys):
        self.params, self.states, self.keys = params, [states[id(p)] for p in params], keys
        sizes = [p.data.size for p in params]
        self.bounds = np.cumsum([0] + sizes).tolist()

    def gather(self):
        merged = {}
        for k, v in self.states[0].items():
            if k in self.keys:
                merged[k] = np.concatenate([s[k].reshape(-1) for s in self.states])
            else:
                merged[k] = v
        return merged

    def scatter(self, new_p, merged):
        b = self.bounds
        for i, (p, st) in enumerate(zip(self.params, self.states)):
            lo, hi = b[i], b[i + 1]
            np.copyto(p.data, new_p[lo:hi].reshape(p.data.shape), casting="same_kind")
            for k, v in merged.items():
                st[k] = v[lo:hi].reshape(p.data.shape) if k in self.keys else v


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov and weight decay."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
        if lr < 0:
            raise ValueError(f"invalid learning rate {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      nesterov=nesterov))
        self.lr, self.momentum, self.weight_decay, self.nesterov = lr, momentum, weight_decay, \
            nesterov

    _STATE_ARRAYS = ("buf",)

    def _phase(self, state):
        return "buf" in state

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

    _STATE_ARRAYS = ("m", "v")

    def _phase(self, state):
        return state.get("t", 0)

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
