"""eager.optim: torch.optim's optimizers, parameter groups and learning-rate schedulers.

Each optimizer reads its options from its parameter group at every step (so
`param_groups[i]["lr"]` is writable and schedulers work) and applies the rule of
`ops/updates.py`, the same formulas the graph side's optimizers build as nodes.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn, optim
>>> model = nn.Linear(2, 1)
>>> opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> loss = (model(eager.ones(4, 2)) ** 2).mean()
>>> loss.backward(); opt.step(); opt.zero_grad()
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.updates import (adadelta_update, adagrad_update, adam_update, adamax_update,
                                  adamw_update, asgd_update, nadam_update, radam_update,
                                  rmsprop_update, rprop_update, sgd_update)
from ..core import Tensor
from . import lr_scheduler
from .lbfgs import LBFGS
from .optimizer import Optimizer, required


def _native():
    """ops.native, imported on first use (it imports numba) and kept."""
    global _NATIVE
    if _NATIVE is None:
        from dualgrad.ops import native as _NATIVE
    return _NATIVE


_NATIVE = None


def _check(name, value, low=0.0):
    if not value >= low:
        raise ValueError(f"Invalid {name}: {value}")


def _buf(state, key, like, fill=0.0):
    """state[key]'s array, created (as a tensor, like torch's state) on first use."""
    if key not in state:
        state[key] = Tensor(np.full_like(like, fill))
    return state[key]._array


def _count(state):
    """Increment and return the step count, kept as a 0-d float32 tensor as torch does."""
    step = state.get("step")
    n = (0.0 if step is None else float(step._array)) + 1.0
    state["step"] = Tensor(np.array(n, np.float32))
    return n


def _switches(name, **given):
    """torch's implementation switches, as the optimizer takes them: foreach / fused pick
    torch's multi-tensor or fused kernels and capturable its CUDA-graph form, all the same
    update, so they are accepted and kept in the param group as torch keeps them;
    differentiable=True (autograd through the step) raises."""
    if given.get("differentiable"):
        raise NotImplementedError(f"{name}(differentiable=True) is not supported by dualgrad")
    return given


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""
    # NOTE: not flat (see Optimizer._step_flat): its rule is 2-4 NumPy calls, and laying the
    # parameters end to end cost more than it saved, even with the state kept flat (MLP, 4
    # parameters: 18 -> 23 µs a step; RNN, 6: 30 -> 35 µs). After the first step, momentum
    # runs as one in-place loop per parameter (ops/native.sgd_momentum_), bit for bit the rule

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        sw = _switches("SGD", foreach=foreach, differentiable=differentiable, fused=fused)
        _check("learning rate", lr)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, **sw))

    def _update(self, p, g, state, group):
        kept = state.get("momentum_buffer")
        first = kept is None
        if not first and type(kept) is Tensor and group["momentum"] and \
                _native().sgd_momentum_(p._array, g, kept._array, group["lr"], group["momentum"],
                                        group["dampening"], group["weight_decay"],
                                        group["nesterov"]):
            return   # NOTE: written in place (one loop; numba is imported on first use)
        new_p, buf = sgd_update(p._array, g, None if first else state["momentum_buffer"]._array,
                                group["lr"], group["momentum"], group["weight_decay"],
                                group["nesterov"], first, group["dampening"])
        if group["momentum"]:
            if first or buf.dtype != p._array.dtype:   # NOTE: first: buf is the gradient
                buf = np.array(buf, dtype=p._array.dtype, copy=True)
            kept = state.get("momentum_buffer")
            if isinstance(kept, Tensor):
                kept._array = buf
            else:
                state["momentum_buffer"] = Tensor(buf)
        self._write(p, new_p)


class Adam(Optimizer):
    """Adam (Kingma & Ba), torch's defaults: lr=1e-3, betas=(0.9, 0.999), eps=1e-8;
    decoupled_weight_decay=True is AdamW's update, as in torch."""
    _elementwise = True
    _default_decay = 0
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=None,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        sw = _switches(type(self).__name__, foreach=foreach, capturable=capturable,
                       differentiable=differentiable, fused=fused)
        weight_decay = self._default_decay if weight_decay is None else weight_decay
        _betas(lr, eps, betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=bool(amsgrad),
                                      maximize=maximize, **sw,
                                      decoupled_weight_decay=self._decoupled or
                                      bool(decoupled_weight_decay)))

    @staticmethod
    def _rule(group):
        return adamw_update if group.get("decoupled_weight_decay") else adam_update

    def _update(self, p, g, state, group):
        m, v = _buf(state, "exp_avg", p._array), _buf(state, "exp_avg_sq", p._array)
        t = _count(state)
        b1, b2 = group["betas"]
        vmax = _buf(state, "max_exp_avg_sq", p._array) if group.get("amsgrad") else None
        new_p, m2, v2, *vmax = self._rule(group)(p._array, g, m, v, t, group["lr"], b1, b2,
                                                 group["eps"], group["weight_decay"], vmax=vmax)
        state["exp_avg"]._array, state["exp_avg_sq"]._array = m2, v2
        if vmax:   # NOTE: AMSGrad's running maximum, torch's state name
            state["max_exp_avg_sq"]._array = vmax[0]
        self._write(p, new_p)

    # NOTE: after the first step, one in-place loop over all the group's parameters and the
    # flat moments (ops/native.adam_many_), bit for bit the rule above, instead of laying the
    # parameters and gradients end to end, 14 NumPy passes and copying back (the transformer's
    # 19 parameters: 70-74 -> 40 µs a step)
    def _in_place(self, kept, group, maximize):
        vec, steps = kept.vectors, kept.scalars.get("step")
        lr, eps, wd, (b1, b2) = group["lr"], group["eps"], group["weight_decay"], group["betas"]
        if steps is None or len(kept.scalars) != 1 or vec.keys() != _MOMENTS or \
                not all([type(x) in (float, int) for x in (lr, eps, wd, b1, b2)]):
            return False
        native = _native()
        views = kept.in_place.views(native)
        if views is None or any([a.dtype != views[0][0][0].dtype for a in vec.values()]):
            return False
        t = float(steps[0]) + 1.0
        native.adam_many_(*views, vec["exp_avg"], vec["exp_avg_sq"], kept.offset_chunks(native),
                          t, lr, b1, b2, eps, wd, self._rule(group) is adamw_update, maximize)
        steps[:] = t
        return True


_MOMENTS = {"exp_avg", "exp_avg_sq"}


class AdamW(Adam):
    """Adam with torch's decoupled weight decay (default 1e-2): p *= 1 - lr * wd, then Adam."""
    _default_decay = 1e-2
    _decoupled = True


class RMSprop(Optimizer):
    """RMSprop, torch's defaults: lr=1e-2, alpha=0.99, eps=1e-8; momentum and centered."""
    _elementwise = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        sw = _switches("RMSprop", capturable=capturable, foreach=foreach, maximize=maximize,
                       differentiable=differentiable)
        for name, v in (("learning rate", lr), ("epsilon value", eps), ("alpha value", alpha),
                        ("momentum value", momentum), ("weight_decay value", weight_decay)):
            _check(name, v)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay, **sw))

    def _update(self, p, g, state, group):
        _count(state)
        sq = _buf(state, "square_avg", p._array)
        buf = _buf(state, "momentum_buffer", p._array) if group["momentum"] else None
        gavg = _buf(state, "grad_avg", p._array) if group["centered"] else None
        new_p, sq, buf, gavg = rmsprop_update(p._array, g, sq, group["lr"], group["alpha"],
                                              group["eps"], group["weight_decay"],
                                              group["momentum"], buf, group["centered"], gavg)
        state["square_avg"]._array = sq
        if buf is not None:
            state["momentum_buffer"]._array = buf
        if gavg is not None:
            state["grad_avg"]._array = gavg
        self._write(p, new_p)


class Adagrad(Optimizer):
    """Adagrad, torch's defaults: lr=1e-2, lr_decay=0, eps=1e-10, initial accumulator 0."""
    _elementwise = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        sw = _switches("Adagrad", foreach=foreach, maximize=maximize,
                       differentiable=differentiable, fused=fused)
        for name, v in (("learning rate", lr), ("lr_decay value", lr_decay),
                        ("weight_decay value", weight_decay), ("epsilon value", eps),
                        ("initial_accumulator_value value", initial_accumulator_value)):
            _check(name, v)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, **sw))

    def _update(self, p, g, state, group):
        total = _buf(state, "sum", p._array, group["initial_accumulator_value"])
        t = _count(state)
        new_p, total = adagrad_update(p._array, g, total, t, group["lr"], group["lr_decay"],
                                      group["weight_decay"], group["eps"])
        state["sum"]._array = total
        self._write(p, new_p)


class Adadelta(Optimizer):
    """Adadelta, torch's defaults: lr=1.0, rho=0.9, eps=1e-6."""
    _elementwise = True

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        sw = _switches("Adadelta", maximize=maximize, capturable=capturable, foreach=foreach,
                       differentiable=differentiable)
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      **sw))

    def _update(self, p, g, state, group):
        _count(state)
        sq, acc = _buf(state, "square_avg", p._array), _buf(state, "acc_delta", p._array)
        new_p, sq, acc = adadelta_update(p._array, g, sq, acc, group["lr"], group["rho"],
                                         group["eps"], group["weight_decay"])
        state["square_avg"]._array, state["acc_delta"]._array = sq, acc
        self._write(p, new_p)


def _betas(lr, eps, betas):
    _check("learning rate", lr)
    _check("epsilon value", eps)
    if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
        raise ValueError(f"Invalid beta parameters: {betas}")


def _scalar(state, key, value):
    """state[key] as a Python float, created as torch's 0-d float32 tensor holding value."""
    if key not in state:
        state[key] = Tensor(np.array(value, np.float32))
    return float(state[key]._array)


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), torch's defaults: lr=2e-3, betas=(0.9, 0.999),
    eps=1e-8."""
    _elementwise = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        sw = _switches("Adamax", foreach=foreach, maximize=maximize,
                       differentiable=differentiable, capturable=capturable)
        _betas(lr, eps, betas)
        _check("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, **sw))

    def _update(self, p, g, state, group):
        m, u = _buf(state, "exp_avg", p._array), _buf(state, "exp_inf", p._array)
        t = _count(state)
        b1, b2 = group["betas"]
        new_p, m, u = adamax_update(p._array, g, m, u, t, group["lr"], b1, b2, group["eps"],
                                    group["weight_decay"])
        state["exp_avg"]._array, state["exp_inf"]._array = m, u
        self._write(p, new_p)


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum), torch's defaults: lr=2e-3, betas=(0.9, 0.999),
    eps=1e-8, momentum_decay=4e-3; decoupled_weight_decay as AdamW decays."""
    _elementwise = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        sw = _switches("NAdam", maximize=maximize, foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        _betas(lr, eps, betas)
        _check("weight_decay value", weight_decay)
        _check("momentum_decay value", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=bool(decoupled_weight_decay),
                                      **sw))

    def _update(self, p, g, state, group):
        mu_product = _scalar(state, "mu_product", 1.0)
        m, v = _buf(state, "exp_avg", p._array), _buf(state, "exp_avg_sq", p._array)
        t = _count(state)
        b1, b2 = group["betas"]
        new_p, m, v, mu_product = nadam_update(
            p._array, g, m, v, t, mu_product, group["lr"], b1, b2, group["eps"],
            group["weight_decay"], group["momentum_decay"], group["decoupled_weight_decay"])
        state["exp_avg"]._array, state["exp_avg_sq"]._array = m, v
        state["mu_product"]._array = np.array(mu_product, np.float32)
        self._write(p, new_p)


class RAdam(Optimizer):
    """RAdam (rectified Adam), torch's defaults: lr=1e-3, betas=(0.9, 0.999), eps=1e-8;
    decoupled_weight_decay as AdamW decays."""
    _elementwise = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        sw = _switches("RAdam", maximize=maximize, foreach=foreach, capturable=capturable)
        _betas(lr, eps, betas)
        _check("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, **sw,
                                      decoupled_weight_decay=bool(decoupled_weight_decay),
                                      **_switches("RAdam", differentiable=differentiable)))

    def _update(self, p, g, state, group):
        m, v = _buf(state, "exp_avg", p._array), _buf(state, "exp_avg_sq", p._array)
        t = _count(state)
        b1, b2 = group["betas"]
        new_p, m, v = radam_update(p._array, g, m, v, t, group["lr"], b1, b2, group["eps"],
                                   group["weight_decay"], group["decoupled_weight_decay"])
        state["exp_avg"]._array, state["exp_avg_sq"]._array = m, v
        self._write(p, new_p)


class ASGD(Optimizer):
    """Averaged SGD, torch's defaults: lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6; the running
    average of the parameters is state["ax"]."""
    _elementwise = True

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        sw = _switches("ASGD", foreach=foreach, maximize=maximize,
                       differentiable=differentiable, capturable=capturable)
        _check("learning rate", lr)
        _check("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, **sw))

    def _update(self, p, g, state, group):
        eta, mu = _scalar(state, "eta", group["lr"]), _scalar(state, "mu", 1.0)
        ax = _buf(state, "ax", p._array)
        t = _count(state)
        new_p, ax, eta, mu = asgd_update(p._array, g, ax, t, eta, mu, group["lr"],
                                         group["lambd"], group["alpha"], group["t0"],
                                         group["weight_decay"])
        state["ax"]._array = np.array(ax, dtype=p._array.dtype, copy=True)
        state["eta"]._array, state["mu"]._array = (np.array(eta, np.float32),
                                                   np.array(mu, np.float32))
        self._write(p, new_p)


class Rprop(Optimizer):
    """Resilient backpropagation, torch's defaults: lr=1e-2 (each element's first step size),
    etas=(0.5, 1.2), step_sizes=(1e-6, 50)."""
    _elementwise = True

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        sw = _switches("Rprop", foreach=foreach, maximize=maximize,
                       differentiable=differentiable, capturable=capturable)
        _check("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      **sw))

    def _update(self, p, g, state, group):
        prev = _buf(state, "prev", p._array)
        size = _buf(state, "step_size", p._array, group["lr"])
        _count(state)
        (eta_minus, eta_plus), (lo, hi) = group["etas"], group["step_sizes"]
        new_p, prev, size = rprop_update(p._array, np.asarray(g, p._array.dtype), prev, size,
                                         eta_minus, eta_plus, lo, hi)
        state["prev"]._array, state["step_size"]._array = prev, size
        self._write(p, new_p)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
           "Adamax", "NAdam", "RAdam", "ASGD", "Rprop",
           "lr_scheduler", "required"]
