"""The Optimizer base class: parameter groups, per-parameter state, state_dict, closures.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn, optim
>>> model = nn.Sequential(nn.Linear(2, 4), nn.Linear(4, 1))
>>> opt = optim.SGD([{"params": model[0].parameters()},
...                  {"params": model[1].parameters(), "lr": 1e-3}], lr=0.1, momentum=0.9)
>>> [g["lr"] for g in opt.param_groups]
[0.1, 0.001]
>>> opt.param_groups[0]["lr"] = 0.05          # what schedulers do
"""
from __future__ import annotations

import copy
from collections import defaultdict

import numpy as np
from dualgrad.ops.rules import floating

from ..core import Tensor, traced_step, zero_grads
from ..grad_mode import enable_grad
from ..meta import optimizer_step
from .flat import FlatState, gather


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _as_groups(params):
    if isinstance(params, Tensor):
        raise TypeError("params argument given to the optimizer should be an iterable of "
                        "Tensors or dicts, but got a Tensor")
    groups = list(params)
    if not groups:
        raise ValueError("optimizer got an empty parameter list")
    if not isinstance(groups[0], dict):
        groups = [{"params": groups}]
    return groups


class Optimizer:
    """torch.optim.Optimizer: `param_groups` (a list of dicts, each with its own options),
    `state` (per parameter), `zero_grad`, `step(closure)`, `state_dict`/`load_state_dict`.

    A subclass gives its defaults and `_update(p, grad_array, state, group)`, which calls the
    rule of ops/updates.py on arrays and writes the result into `p._array`.
    """

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = defaultdict(dict)
        self.param_groups = []
        for group in _as_groups(params):
            self.add_param_group(group)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        zero_grads([p for group in self.param_groups for p in group["params"]], set_to_none)

    def step(self, closure=None):
        """One update of every parameter with a gradient; `closure` re-evaluates the loss."""
        tr = traced_step()
        if tr is not None:   # NOTE: inside compile(): this step runs after the plan, each call
            if closure is not None:
                tr.break_here("step")
            tr.defer_step(self)
            return None
        if optimizer_step([p for group in self.param_groups for p in group["params"]]):
            return None    # NOTE: meta tensors (eager/meta.py): gradients' shapes checked only
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            live = [p for p in group["params"] if p.grad is not None]
            if self._elementwise and len(live) > 1 and self._step_flat(live, group):
                continue
            for p in live:
                g = p.grad._array
                self._update(p, -g if group.get("maximize") else g, self.state[p], group)
        return loss

    def _update(self, p, g, state, group):
        raise NotImplementedError

    # -- all of a group's parameters in one update ------------------------------------------------
    # NOTE: an `_elementwise` optimizer's rule treats every element alike, so running it once
    # on the group's parameters, gradients and state laid end to end gives, element for
    # element, the same float32 operations as running it per parameter, in ~14 NumPy calls
    # instead of ~14 per parameter (torch's foreach / multi-tensor apply). The state stays
    # flat across steps, each parameter's state tensors views of it (flat.py).
    _elementwise = False

    def _step_flat(self, live, group):
        """Update `live` (parameters with gradients) as one flat array; False (nothing done)
        when they cannot be: mixed dtypes, or states that are not alike (e.g. a parameter
        that skipped steps, so its step count differs)."""
        dtype = live[0]._array.dtype
        if any([p._array.dtype != dtype or p.grad._array.dtype != dtype for p in live]):
            return False
        cache = self.__dict__.setdefault("_flat", {})
        key = tuple([id(p) for p in live])
        kept = cache.get(key)
        maximize = group.get("maximize")
        if kept is not None and kept.valid(self.state):
            if self._in_place(kept, group, maximize):
                return True
            flat_p, flat_g = kept.gather(maximize)
            state = kept.for_rule()
            self._update(Tensor(flat_p), flat_g, state, group)
            kept.scatter()
            if kept.store(state):
                return True
        else:
            state = gather(self.state, live)
            if state is None:
                return False
            flat_p = np.concatenate([p._array.reshape(-1) for p in live])
            flat_g = np.concatenate([p.grad._array.reshape(-1) for p in live])
            flat_g = -flat_g if maximize else flat_g
            self._update(Tensor(flat_p), flat_g, state, group)
            off = 0
            for p in live:
                a = p._array
                np.copyto(a, flat_p[off:off + a.size].reshape(a.shape), casting="same_kind")
                off += a.size
        if len(cache) > 2 * len(self.param_groups):
            cache.clear()
        cache[key] = FlatState(self.state, live, state, {id(flat_p), id(flat_g)})
        return True

    def _in_place(self, kept, group, maximize):
        """The step on `kept` (a valid FlatState) by a native in-place loop over the
        parameters and the flat state; False (nothing done) where there is none."""
        return False

    @staticmethod
    def _write(p, new):
        np.copyto(p._array, new, casting="same_kind")

    # -- checkpoints ----------------------------------------------------------------------------
    def _index(self):
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self):
        """{'state': {index: {name: tensor or number}}, 'param_groups': [{options, 'params':
        [indices]}]}, as torch: parameters are referred to by their position."""
        index = {id(p): i for i, p in enumerate(self._index())}
        groups = []
        for g in self.param_groups:
            out = {k: v for k, v in g.items() if k != "params"}
            out["params"] = [index[id(p)] for p in g["params"]]
            groups.append(out)
        state = {index[id(p)]: {k: _copy(v) for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index and s}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups, saved = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {}
        for g, s in zip(groups, saved):
            by_index.update(zip(s["params"], g["params"]))
        self.state = defaultdict(dict)
        for k, s in state_dict["state"].items():
            p = by_index[int(k)]
            self.state[p] = {name: _cast_like(v, p) for name, v in s.items()}
        for g, s in zip(groups, saved):
            g.update({k: copy.deepcopy(v) for k, v in s.items() if k != "params"})

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines += [""] * (i > 0) + [f"Parameter Group {i}"]   # NOTE: a blank line between
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def refuse_in_trace():
    """A learning-rate scheduler's step inside compile() would change the rates once, while
    tracing, and never at a later call: a graph break (the call runs eagerly)."""
    tr = traced_step()
    if tr is not None:
        tr.break_here("step")


def _copy(v):
    if isinstance(v, Tensor):
        return Tensor(v._array.copy())
    return copy.deepcopy(v)


def _cast_like(v, p):
    """A loaded state value as a tensor of its own, floats in the parameter's dtype."""
    if isinstance(v, Tensor) or isinstance(v, np.ndarray):
        arr = np.array(getattr(v, "_array", v), copy=True)
        if floating(arr.dtype) and arr.ndim:
            arr = arr.astype(p._array.dtype)
        return Tensor(arr)
    return copy.deepcopy(v)
