"""torch's order statistics and the reductions eager/functions.py lacks: median, nanmedian,
kthvalue, mode, cummax, cummin, quantile, nanquantile, nansum, nanmean, trace, dist, histc,
and the products mv and cross; the Tensor methods of the same names.

Which element is selected (the sort order, a NaN, the tie torch picks) is computed with NumPy
on the values; the result is then gathered with the op library's `gather`, so gradients flow
to the selected elements as torch's do. Those that return (values, indices) return the
namedtuple torch does (`torch.return_types.median`, …), kept in `eager.return_types`.

>>> from dualgrad import eager
>>> x = eager.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
>>> x.median(dim=1).values.tolist(), eager.quantile(x, 0.5).item()
([2.0, 4.0], 2.5)
"""
from __future__ import annotations

import types
from collections import namedtuple

import numpy as np
from dualgrad.eager.amp import keeps_fp32
from dualgrad.ops.rules import floating

from dualgrad import ops
from dualgrad.ops.rules import norm_axis

from .core import Tensor
from .factories import linspace_values
from .functions import _arr, _beta_alpha, _no_grad_tensor, _t, accumulate, diagonal, isnan

return_types = types.SimpleNamespace(**{
    n: namedtuple(n, "values indices") for n in ("median", "nanmedian", "kthvalue", "mode",
                                                "cummax", "cummin")},
    aminmax=namedtuple("aminmax", "min max"))


# -- selecting one element along a dim ---------------------------------------------------------
def _along(name, x, dim):
    """x with a 0-d input seen as 1-D (torch reduces 0-d tensors over dim 0 or -1), the dim."""
    if x.ndim == 0:
        norm_axis(name, dim, 1)
        return x.reshape(1), 0, True
    d = norm_axis(name, dim, x.ndim)
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    return x, d, False


def _selected(name, x, dim, keepdim, pick):
    """(values, indices): pick(rows) gives each row's index (rows: the values with dim last)."""
    x = _t(x)
    xs, d, scalar = _along(name, x, dim)
    rows = np.moveaxis(_arr(xs), d, -1)
    idx = np.moveaxis(np.asarray(pick(rows), np.int64)[..., None], -1, d)
    values = ops.gather(xs, idx, axis=d)
    if scalar or not keepdim:
        values, idx = ops.squeeze(values, axis=d), np.squeeze(idx, axis=d)
    if scalar:
        values, idx = values.reshape(()), idx.reshape(())
    return getattr(return_types, name)(values, _no_grad_tensor(idx))


def _kth_smallest(k, skip_nan=False):
    """Each row's index of its k-th smallest value (0-based; ties: the first in order; NaN
    sorts last). skip_nan: k counts the non-NaN values only (k a function of that count)."""
    def pick(rows):
        order = np.argsort(rows, axis=-1, kind="stable")
        kk = k(np.sum(~np.isnan(rows), axis=-1)) if skip_nan else np.full(rows.shape[:-1], k)
        kk = np.clip(kk, 0, rows.shape[-1] - 1)
        return np.take_along_axis(order, kk[..., None], axis=-1)[..., 0]
    return pick


def _first_nan_or(pick):
    """A row holding NaN selects its first NaN (torch's median and kthvalue propagate it)."""
    def chosen(rows):
        nan = np.isnan(rows) if floating(rows.dtype) else np.zeros(rows.shape, bool)
        return np.where(nan.any(-1), np.argmax(nan, axis=-1), pick(rows))
    return chosen


def median(input, dim=None, keepdim=False):  # noqa: A002 - torch's argument names
    """The lower median: a 0-d tensor over all elements (its gradient shared by the elements
    equal to it, as torch), or (values, indices) along dim. NaN propagates."""
    if dim is None:
        return _overall(input, nan_aware=False)
    n = _t(input).shape[dim] if _t(input).ndim else 1
    return _selected("median", input, dim, keepdim,
                     _first_nan_or(_kth_smallest((n - 1) // 2)))


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """median ignoring NaN (NaN only where a row is all NaN)."""
    if dim is None:
        return _overall(input, nan_aware=True)
    return _selected("nanmedian", input, dim, keepdim,
                     _kth_smallest(lambda m: (m - 1) // 2, skip_nan=True))


def _overall(input, nan_aware):
    x = _t(input)
    flat = x.reshape(-1)
    arr = _arr(flat)
    if arr.size == 0:
        return ops.cast(ops.sum(flat) * np.nan, x.dtype) if floating(x.dtype) else \
            _no_grad_tensor(np.array(np.nan, np.float32))
    nan = np.isnan(arr) if floating(arr.dtype) else np.zeros(arr.shape, bool)
    if nan.any() and not (nan_aware and not nan.all()):
        return ops.take(flat, np.argmax(nan), axis=0)    # torch: the first NaN, all its own
    valid = np.sort(arr[~nan])
    ties = np.flatnonzero(arr == valid[(valid.size - 1) // 2])
    # NOTE: max over the equal elements: exactly the median, its gradient shared among them
    return ops.max(ops.take(flat, ties, axis=0), axis=0)


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    """(values, indices) of the k-th smallest element along dim (k counts from 1)."""
    x = _t(input)
    n = x.shape[dim] if x.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    from dualgrad.ops import tie_order   # NOTE: numba on first use
    # NOTE: torch's quickselect, so that among equal values the index is torch's
    return _selected("kthvalue", x, dim, keepdim, lambda rows: tie_order.kth_index(rows, k - 1))


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """(values, indices) of each row's most frequent value (the smallest of equally frequent
    ones) along dim; among its copies, the index torch's CPU kernel reports."""
    from dualgrad.ops import tie_order   # NOTE: numba on first use
    return _selected("mode", input, dim, keepdim, tie_order.mode_index)


def _running(name, input, dim, better):
    """cummax / cummin: the running best and where it was last reached (NaN wins, as torch)."""
    x = _t(input)
    xs, d, scalar = (x.reshape(1), 0, True) if x.ndim == 0 else \
        (x, norm_axis(name, dim, x.ndim), False)
    rows = np.moveaxis(_arr(xs), d, 0)
    idx = np.zeros(rows.shape, np.int64)
    best = rows[0] if len(rows) else None
    for i in range(1, len(rows)):
        r = rows[i]
        take = np.isnan(r) | (~np.isnan(best) & better(r, best)) if floating(r.dtype) \
            else better(r, best)
        best = np.where(take, r, best)
        idx[i] = np.where(take, i, idx[i - 1])
    idx = np.moveaxis(idx, 0, d)
    values = ops.gather(xs, idx, axis=d)
    if scalar:
        values, idx = values.reshape(()), idx.reshape(())
    return getattr(return_types, name)(values, _no_grad_tensor(idx))


def cummax(input, dim):  # noqa: A002
    return _running("cummax", input, dim, np.greater_equal)


def cummin(input, dim):  # noqa: A002
    return _running("cummin", input, dim, np.less_equal)


# -- quantiles -------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, skip_nan):
    x = _t(input)
    if not floating(x.dtype):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. "
                         f"Got {interpolation!r}")
    qs = _arr(q).astype(x.dtype)     # NOTE: torch's ranks are q * (n - 1) in x's dtype
    if isinstance(q, Tensor) and _arr(q).dtype != x.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if qs.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if np.any((qs < 0) | (qs > 1)):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1], got "
                           f"{qs.tolist()}")
    if x.numel() == 0:
        raise IndexError(f"{name}() input tensor must be non-empty")
    xs = x.reshape(-1) if dim is None else (x.reshape(1) if x.ndim == 0 else x)
    d = 0 if dim is None else norm_axis(name, dim, xs.ndim)
    xs = ops.transpose(xs, axes=tuple(k for k in range(xs.ndim) if k != d) + (d,))
    rows = _arr(xs)
    order = np.argsort(rows, axis=-1, kind="stable")
    srt = ops.gather(xs, order, axis=-1)
    nan = np.isnan(rows)
    n = rows.shape[-1]
    m = n - nan.sum(-1) if skip_nan else np.full(rows.shape[:-1], n)
    # NOTE: as torch, quantile ranks a row with a NaN at its last (NaN) value, nanquantile an
    # all-NaN row at its first
    nan_row = np.zeros(m.shape, bool) if skip_nan else nan.any(-1)
    scale = np.maximum(m - 1, 0).astype(x.dtype)
    # NOTE: a q that requires grad has one through the linear weight, as torch's, but not
    # where the rank is fixed (a NaN row; nanquantile's all-NaN row)
    qt = q.reshape(-1) if isinstance(q, Tensor) and q.requires_grad and \
        interpolation == "linear" else None
    fixed = nan_row | (m == 0)
    out = []
    for k, q1 in enumerate(qs.reshape(-1)):
        rank = np.where(nan_row, n - 1, q1 * scale)
        rank_t = None if qt is None else ops.where(fixed, rank, qt[k] * scale)
        out.append(_interpolate(srt, rank, interpolation, rank_t))
    res = ops.stack(*out, axis=0) if qs.ndim else out[0]
    if keepdim:
        lead = 1 if qs.ndim else 0
        shape = tuple(res.shape[:lead]) + tuple(1 if dim is None or k == d else s
                                                for k, s in enumerate(x.shape))
        res = res.reshape(shape)
    return res


def _interpolate(srt, rank, how, rank_t=None):
    """Each row's value at rank (an array) by `how`; rank_t: the same ranks as a tensor that
    carries a gradient (to q) into the linear weight."""
    lo = np.floor(rank).astype(np.int64)
    hi = np.ceil(rank).astype(np.int64)
    if how == "nearest":
        lo = hi = np.round(rank).astype(np.int64)    # NOTE: half to even, as torch's round
    elif how == "lower":
        hi = lo
    elif how == "higher":
        lo = hi
    a = ops.squeeze(ops.gather(srt, lo[..., None], axis=-1), axis=-1)
    if (lo == hi).all() and rank_t is None:
        return a
    b = ops.squeeze(ops.gather(srt, hi[..., None], axis=-1), axis=-1)
    if how == "midpoint":
        w = np.full(rank.shape, 0.5, srt.dtype)
    else:
        w = (rank - lo).astype(srt.dtype) if rank_t is None else rank_t - lo.astype(srt.dtype)
    return _lerp(a, b, w, np.abs(_arr(w)) < 0.5)


def _lerp(a, b, w, small):
    """torch's lerp: a + w (b - a) where |w| < 0.5, else b - (b - a) (1 - w), each a fused
    multiply-add (float32's computed in float64, where its products are exact)."""
    dt, d = a.dtype, b - a
    if dt == np.float32:
        a, b, w, d = (ops.cast(v, np.float64) for v in (a, b, w, d))
    out = ops.where(small, a + w * d, b - d * (1 - w))
    return ops.cast(out, dt) if dt == np.float32 else out


@keeps_fp32
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """The q-th quantiles along dim (all elements by default); NaN propagates."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@keeps_fp32
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# -- NaN-ignoring sums, and the rest -------------------------------------------------------
def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    x = _t(input) if dtype is None else ops.cast(_t(input), np.dtype(dtype))
    if floating(x.dtype):
        x = ops.where(isnan(x), 0, x)
    return accumulate(ops.sum, x, axis=dim, keepdims=keepdim)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    x = _t(input) if dtype is None else ops.cast(_t(input), np.dtype(dtype))
    if not floating(x.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{x.dtype}")
    keep = ops.logical_not(isnan(x))
    return nansum(x, dim, keepdim) / ops.sum(ops.cast(keep, x.dtype), axis=dim,
                                             keepdims=keepdim)


@keeps_fp32
def trace(input):  # noqa: A002
    x = _t(input)
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return accumulate(ops.sum, diagonal(x), axis=0)


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of input - other over all elements."""
    diff = (_t(input) - other).reshape(-1)
    if p >= 0 or p == float("-inf"):   # NOTE: ops.norm: float16 in float32, as torch's kernel
        return ops.norm(diff, ord=int(p) if p in (1, 2) else p, axis=0)
    return ops.sum(ops.abs(diff) ** p, axis=0) ** (1.0 / p)


def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Counts in `bins` equal bins over [min, max] (the data's range when min == max);
    values outside are ignored. No gradient, as torch."""
    arr = _arr(input)
    if not floating(arr.dtype):
        raise NotImplementedError(f"histc: \"histogram_cpu\" not implemented for "
                                  f"'{arr.dtype}'")
    lo, hi = float(min), float(max)
    if lo == hi and arr.size:
        lo, hi = float(np.min(arr)), float(np.max(arr))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    # NOTE: as torch: a value's bin is (x - lo) * bins / (hi - lo) in the input's dtype
    # (float16 rounds each step), lo and hi the ends of linspace's edges in that dtype
    edges = linspace_values(lo, hi, bins + 1, arr.dtype)
    x = arr.reshape(-1)
    x = x[(x >= edges[0]) & (x <= edges[-1])]
    pos = ((x - edges[0]) * arr.dtype.type(bins) / (edges[-1] - edges[0])).astype(np.int64)
    return _no_grad_tensor(np.bincount(np.minimum(pos, bins - 1), minlength=bins)
                           .astype(arr.dtype))


def mv(input, vec):  # noqa: A002
    a, v = _t(input), _t(vec)
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got {a.ndim}-D and "
                           f"{v.ndim}-D")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat "
                           f"({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})")
    return ops.matmul(a, v)


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along dim (the first dim of size 3 by default)."""
    a, b = _t(input), _t(other)
    if a.ndim != b.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions, "
                           f"got {tuple(a.shape)} and {tuple(b.shape)}")
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    a, b = ops.broadcast_to(a, shape=shape), ops.broadcast_to(b, shape=shape)
    if dim is None:
        dim = next((k for k, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {shape}")
    d = norm_axis("cross", dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{shape[d]} and {shape[d]}")
    a1, a2, a3 = (ops.take(a, np.array([k]), axis=d) for k in range(3))
    b1, b2, b3 = (ops.take(b, np.array([k]), axis=d) for k in range(3))
    return ops.concat(a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1, axis=d)



def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    """(min, max) over dim (all elements by default); ties share the gradient, as torch."""
    x = _t(input)
    if dim is None and x.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    d = norm_axis("aminmax", dim, x.ndim) if dim is not None and x.ndim else None
    if d is not None and x.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return return_types.aminmax(ops.min(x, axis=dim, keepdims=keepdim),
                                ops.max(x, axis=dim, keepdims=keepdim))


def inner(input, other):  # noqa: A002
    """Sum over the last dims of both: shape input.shape[:-1] + other.shape[:-1]."""
    a, b = _t(input), _t(other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(a.shape)} and {list(b.shape)}")
    k = a.shape[-1]
    prod = ops.matmul(a.reshape(-1, k), ops.matrix_transpose(b.reshape(-1, k)))
    return prod.reshape(tuple(a.shape[:-1]) + tuple(b.shape[:-1]))


def vdot(input, other):  # noqa: A002
    a, b = _t(input), _t(other)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return ops.matmul(ops.conj(a), b)   # NOTE: the first vector conjugated, as torch's


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    return _beta_alpha(input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    a, b = _t(vec1), _t(vec2)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"addr: expected 1-D vectors, got {a.ndim}-D and {b.ndim}-D")
    if floating(a.dtype):
        # NOTE: torch's kernel is beta * self + alpha * vec1 * vec2, left to right in the
        # tensors' dtype, beta and alpha too (float16: each product rounded, the scalars
        # first, not read in float32 as mul's): alpha scales vec1 first
        beta, alpha = np.asarray(beta, a.dtype), np.asarray(alpha, a.dtype)
        a, alpha = (a, 1) if alpha == 1 else (a * alpha, 1)
    return _beta_alpha(input, ops.expand_dims(a, axis=1) * ops.expand_dims(b, axis=0), beta,
                       alpha)



def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in input's rows (observations in columns),
    each observation weighted by fweights (integer repeat counts) times aweights, as
    torch's (and numpy.cov's) formula."""
    if fweights is not None or aweights is not None:
        return _weighted_cov(_variables(input), correction, fweights, aweights)
    x = _variables(input)
    n = x.shape[1]
    centred = x - ops.mean(x, axis=1, keepdims=True)
    c = ops.matmul(centred, ops.matrix_transpose(centred)) / float(max(n - correction, 0))
    return c.reshape(()) if c.shape == (1, 1) else c   # one variable: 0-d, as torch


def _variables(input):  # noqa: A002
    """cov's input as (variables, observations), floating (integers as float32)."""
    x = _t(input)
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {x.ndim} dimensions")
    x = x.reshape(1, -1) if x.ndim < 2 else x
    return x if floating(x.dtype) else ops.cast(x, np.float32)


def _weighted_cov(x, correction, fweights, aweights):
    n, w = x.shape[1], None
    for name, v in (("fweights", fweights), ("aweights", aweights)):
        if v is None:
            continue
        v = _t(v)
        if v.ndim > 1 or v.shape[0] != n:
            raise RuntimeError(f"cov(): expected {name} to have one dimension and the same "
                               f"number of elements as the observations ({n}), got shape "
                               f"{tuple(v.shape)}")
        if name == "fweights" and floating(v.dtype):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {v.dtype} dtype")
        w = v if w is None else w * v
    aw = None if aweights is None else _t(aweights)
    if aw is not None and floating(aw.dtype) and aw.dtype.itemsize > x.dtype.itemsize:
        x = ops.cast(x, aw.dtype)      # NOTE: torch promotes: half input, float32 weights
    # NOTE: the weights' sum and the normalising factor in the weights' own dtype, as torch
    total = ops.sum(w)
    avg = ops.sum(x * w, axis=1, keepdims=True) / total
    if aweights is None or correction == 0:
        norm = total - correction
    else:
        norm = total - correction * ops.sum(w * aw) / total
    norm = ops.maximum(norm, 0)        # NOTE: torch clamps a non-positive factor to 0
    centred = x - avg
    c = ops.matmul(centred, ops.matrix_transpose(centred * w)) / norm
    return c.reshape(()) if c.shape == (1, 1) else c


def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients of input's rows, clipped to [-1, 1] as torch's."""
    c = cov(input)
    if c.ndim == 0:             # one variable: torch gives 0-d, c / c (nan for a constant)
        return c / c
    d = ops.sqrt(diagonal(c))
    r = c / ops.expand_dims(d, axis=1) / ops.expand_dims(d, axis=0)
    return ops.clamp(r, -1.0, 1.0)


__all__ = TORCH_NAMES = [
    "median", "nanmedian", "kthvalue", "mode", "cummax", "cummin", "quantile", "nanquantile",
    "nansum", "nanmean", "trace", "dist", "histc", "mv", "cross", "aminmax", "inner", "vdot",
    "addmv", "addr", "cov", "corrcoef", "return_types"]
