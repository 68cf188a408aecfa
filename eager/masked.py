"""torch.masked's reductions and normalisations: each treats the elements where `mask` is
False as absent (the reduction's identity stands in: 0 for sum, 1 for prod, -inf for amax
and softmax, NaN for median), compositions of the ordinary functions, so differentiable as
those are.

>>> from dualgrad import eager as torch
>>> x = torch.tensor([[1.0, 2.0, 3.0]])
>>> torch.masked.sum(x, 1, mask=torch.tensor([[True, False, True]])).tolist()
[4.0]
"""
from __future__ import annotations

import math

import numpy as np
from dualgrad.ops.rules import HALF, floating

from dualgrad import ops

from .core import Tensor, default_float
from .functions import _arr, _t

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "norm", "var", "std", "softmax", "log_softmax", "softmin", "normalize",
           "logaddexp", "logsumexp"]


def _prep(input, mask, dtype=None):  # noqa: A002
    """(x in dtype, the mask as a bool array of x's shape)."""
    x = _t(input)
    if dtype is not None:
        x = ops.cast(x, np.dtype(dtype)) if x.dtype != np.dtype(dtype) else x
    m = np.ones(tuple(x.shape), bool) if mask is None else \
        np.broadcast_to(np.asarray(_arr(mask)).astype(bool), tuple(x.shape))
    return x, m


def _extreme(dt, high):
    if floating(dt):
        return math.inf if high else -math.inf
    if dt.kind == "b":
        return high
    info = np.iinfo(dt)
    return info.max if high else info.min


def _keep(fn):
    """fn's result in the input's dtype (or `dtype=`), as torch.masked casts it."""
    def run(input, *args, dtype=None, **kwargs):  # noqa: A002
        x = _t(input)
        out = fn(x, *args, dtype=dtype, **kwargs)
        want = np.dtype(dtype) if dtype is not None else x.dtype
        return out if out.dtype == want else ops.cast(out, want)
    run.__name__ = run.__qualname__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _scalar_safe(fn):
    """fn on a 0-d input: as a 1-element vector reduced over dim 0, shaped back to 0-d."""
    def run(input, *args, mask=None, **kwargs):  # noqa: A002
        x = _t(input)
        if x.ndim:
            return fn(x, *args, mask=mask, **kwargs)
        m = None if mask is None else ops.reshape(_t(mask), (1,))
        args = tuple(0 if i == 0 and a is not None and not isinstance(a, float) and
                     fn.__name__ not in ("norm", "normalize") else a for i, a in enumerate(args))
        out = fn(ops.reshape(x, (1,)), *args, mask=m, **kwargs)
        return ops.reshape(out, ()) if out.ndim else out
    run.__name__ = run.__qualname__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _half(fn):
    """float16 computed in float32 and rounded once, as torch's CPU kernels do."""
    def run(input, *args, dtype=None, **kwargs):  # noqa: A002
        x = _t(input)
        if x.dtype == np.float16 and dtype is None:   # NOTE: bfloat16's ops accumulate in float32
            return ops.cast(fn(ops.cast(x, np.float32), *args, **kwargs), x.dtype)
        return fn(x, *args, dtype=dtype, **kwargs)
    run.__name__ = run.__qualname__ = fn.__name__
    return run


def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001, A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, 0).sum(_dims(dim, x.ndim), keepdim)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    y = ops.where(m, x, 1)
    if dim is None:
        return y.prod() if not keepdim else ops.reshape(y.prod(), (1,) * x.ndim)
    for d in sorted((d % max(x.ndim, 1) for d in _dims(dim, x.ndim)), reverse=True):
        y = y.prod(d, keepdim)
    return y


def cumsum(input, dim, *, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, 0).cumsum(dim)


def cumprod(input, dim, *, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, 1).cumprod(dim)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, _extreme(x.dtype, False)).amax(_dims(dim, x.ndim), keepdim)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, _extreme(x.dtype, True)).amin(_dims(dim, x.ndim), keepdim)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, _extreme(x.dtype, False)).argmax(dim, keepdim)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return ops.where(m, x, _extreme(x.dtype, True)).argmin(dim, keepdim)


def _count(m, dims, keepdim, dt):
    return np.sum(m, axis=dims, keepdims=keepdim).astype(dt)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    dims = _dims(dim, x.ndim)
    total = ops.where(m, x, 0).sum(dims, keepdim)
    return total / _count(m, dims, keepdim, total.dtype if floating(total.dtype)
                          else np.float32)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    if not floating(x.dtype):
        x = ops.cast(x, np.float32)
    return ops.where(m, x, math.nan).nanmedian(dim, keepdim).values


def norm(input, ord, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    from .linalg import vector_norm
    x, m = _prep(input, mask, dtype)
    fill = math.inf if ord == -math.inf or (ord is not None and ord < 0) else 0.0
    return vector_norm(ops.where(m, x, fill), ord, _dims(dim, x.ndim), keepdim)


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,  # noqa: A002
        mask=None):
    x, m = _prep(input, mask, dtype)
    if not floating(x.dtype):
        x = ops.cast(x, np.float32)
    dims = _dims(dim, x.ndim)
    corr = correction if correction is not None else (0 if unbiased is False else 1)
    n = _count(m, dims, True, x.dtype)
    mu = ops.where(m, x, 0).sum(dims, True) / n
    dev = ops.where(m, x - mu, 0)
    out = (dev * dev).sum(dims, True) / np.maximum(n - corr, 0)
    return out if keepdim else ops.squeeze(out, axis=tuple(d % max(x.ndim, 1) for d in dims))


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,  # noqa: A002
        mask=None):
    return ops.sqrt(var(input, dim, unbiased, correction=correction, keepdim=keepdim,
                        dtype=dtype, mask=mask))


def softmax(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """0 where masked; NaN along a slice masked whole (0 / 0), as torch's."""
    x, m = _prep(input, mask, dtype)
    return ops.softmax(ops.where(m, x, -math.inf), axis=dim)


def log_softmax(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """-inf where masked (and those outputs' gradients flow on, as torch's)."""
    x, m = _prep(input, mask, dtype)
    return ops.log_softmax(ops.where(m, x, -math.inf), axis=dim)


def softmin(input, dim, *, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    return softmax(-x, dim, mask=m)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):  # noqa: A002
    x, m = _prep(input, mask, dtype)
    n = norm(x, ord, dim, keepdim=True, mask=m)
    return ops.where(m, x / ops.maximum(n, eps), 0.0)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """An integer input's masked elements are its dtype's least value, its logsumexp taken
    in the default float and truncated back (_keep), as torch's."""
    x, m = _prep(input, mask, dtype)
    x = ops.where(m, x, _extreme(x.dtype, False))
    if not floating(x.dtype):
        x = ops.cast(x, default_float())
    return ops.logsumexp(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):  # noqa: A002
    from .pointwise import logaddexp as plain
    x, mx = _prep(input, input_mask, dtype)
    y, my = _prep(other, other_mask, dtype)
    return plain(ops.where(mx, x, -math.inf), ops.where(my, y, -math.inf))


sum = _scalar_safe(sum)   # noqa: A001
prod, amax, amin, mean, norm, logsumexp = (_scalar_safe(f) for f in (
    prod, amax, amin, mean, norm, logsumexp))
cumsum, cumprod, argmax, argmin, logsumexp = (_keep(f) for f in (
    cumsum, cumprod, argmax, argmin, logsumexp))
log_softmax, normalize, cumsum = _half(log_softmax), _half(normalize), _half(cumsum)


def _sum_type(fn):
    def run(input, *args, dtype=None, **kwargs):  # noqa: A002
        out = fn(input, *args, dtype=dtype, **kwargs)
        return ops.cast(out, np.int64) if dtype is None and out.dtype.kind in "bu" else out
    run.__name__ = run.__qualname__ = fn.__name__
    return run


sum, _prod = _sum_type(sum), _sum_type(prod)   # noqa: A001 - integers sum to int64, as torch


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The product of the unmasked elements (1 where none is)."""
    if isinstance(input, Tensor) and input.ndim == 0 and mask is None and \
            dim in (None, (), []) and dtype in (None, input.dtype) and (input.dtype in (
                np.int64, np.float32, np.float64) or input.dtype in HALF):
        return input   # NOTE: torch returns the 0-d input itself (a write through it shows)
    return _prod(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
