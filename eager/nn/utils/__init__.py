"""nn.utils: gradient clipping, weight_norm and spectral_norm (norms.py), and `rnn`.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> w = nn.Parameter(eager.ones(4))
>>> w.grad = eager.full((4,), 3.0)
>>> float(nn.utils.clip_grad_norm_([w], max_norm=1.0)), round(float(w.grad.norm()), 4)
(6.0, 1.0)
"""
from __future__ import annotations

import warnings

import numpy as np

from dualgrad import ops
from dualgrad.ops import distributed as _mpi
from ...core import Tensor, traced_step
from . import rnn
from .norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm
from . import parametrize, parametrizations


def _with_grads(parameters):
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in parameters if p.grad is not None]


def _grads(parameters):
    return [p.grad for p in _with_grads(parameters)]


def _clip_norm_traced(tr, params, max_norm, norm_type, error_if_nonfinite):
    """clip_grad_norm_ inside compile(): eager's formula (the norm in float64, cast to the
    gradients' dtype, the coefficient from it), as graph ops; each .grad written per call."""
    if not params:
        return Tensor(np.array(0.0, np.float32))
    if error_if_nonfinite:
        tr.break_here("item")   # NOTE: the check reads the norm's value
    grads = [tr.grad_value(p) for p in params]
    norm_type = float(norm_type)
    if norm_type == float("inf"):
        norms = [g.abs().max() for g in grads]
        total = norms[0]
        for n in norms[1:]:
            total = ops.maximum(total, n)
    else:
        norms = [(ops.cast(g, "float64").abs() ** norm_type).sum() ** (1.0 / norm_type)
                 for g in grads]
        total = sum([n ** norm_type for n in norms]) ** (1.0 / norm_type)
    total = ops.cast(total, grads[0].dtype)
    coef = ops.minimum(float(max_norm) / (ops.cast(total, "float64") + 1e-6), 1.0)
    for p, g in zip(params, grads):
        tr.set_grad_value(p, g * ops.cast(coef, g.dtype))
    return total


def _total_norm(grads, sharded, norm_type):
    """The joint norm; the gradients of sharded parameters (this rank's rows of each) are
    combined over the ranks, so every rank gets the norm of the whole gradients, as torch's
    DTensors give."""
    if norm_type == float("inf"):
        parts = [np.abs(g._array).max() if g._array.size else 0.0 for g in grads]
        combine = "max"
    else:
        parts = [np.sum(np.abs(g._array.astype(np.float64)) ** norm_type) for g in grads]
        combine = "sum"
    local = np.array([max((v for v, s in zip(parts, sharded) if not s), default=0.0)
                      if combine == "max" else
                      sum(v for v, s in zip(parts, sharded) if not s)], np.float64)
    if any(sharded):
        mine = [v for v, s in zip(parts, sharded) if s]
        shard = np.array([max(mine) if combine == "max" else sum(mine)], np.float64)
        _mpi.all_reduce(shard, combine, check=False)
        local = np.maximum(local, shard) if combine == "max" else local + shard
    return local[0] if combine == "max" else local[0] ** (1.0 / norm_type)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale all gradients together so that their joint norm is at most max_norm; returns the
    norm before clipping (as torch: clip_coef = max_norm / (total_norm + 1e-6), capped at 1)."""
    tr = traced_step()
    if tr is not None:
        return _clip_norm_traced(tr, _with_grads(parameters), max_norm, norm_type,
                                 error_if_nonfinite)
    params = _with_grads(parameters)
    grads = [p.grad for p in params]
    if not grads:
        return Tensor(np.array(0.0, np.float32))
    norm_type = float(norm_type)
    total = _total_norm(grads, [getattr(p, "sharded", False) for p in params], norm_type)
    total = np.asarray(total, grads[0]._array.dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           f"`parameters` is non-finite, so it cannot be clipped. To disable "
                           f"this error and scale the gradients by the non-finite norm anyway, "
                           f"set `error_if_nonfinite=False`")
    coef = min(float(max_norm) / (float(total) + 1e-6), 1.0)
    for g in grads:
        g._array *= np.asarray(coef, g._array.dtype)
    return Tensor(total)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """The deprecated name of clip_grad_norm_ (the same, with torch's FutureWarning)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    tr = traced_step()
    if tr is not None:
        for p in _with_grads(parameters):
            tr.set_grad_value(p, tr.grad_value(p).clamp(-clip_value, clip_value))
        return
    for g in _grads(parameters):
        np.clip(g._array, -clip_value, clip_value, out=g._array)


def parameters_to_vector(parameters):
    """All parameters flattened into one vector (differentiable, as torch's)."""
    return ops.concat(*[p.reshape(-1) for p in parameters], axis=0)


def vector_to_parameters(vec, parameters):
    """Each parameter's values from its slice of vec, in order (their .data, as torch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[start:start + n].detach().reshape(tuple(p.shape)).clone()
        start += n


__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm", "parametrize", "parametrizations"]
