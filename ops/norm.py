"""Layer norm over the last axis, with scale and shift, as one primitive (eager's nn.LayerNorm).

    y = layer_norm_last(x, w, b, eps) = (x - mean(x)) / sqrt(var(x) + eps) * w + b

over the last axis of x (..., D), w and b of shape (D,). Its gradient for the common case, a
backward that records nothing, is one kernel too, `layer_norm_last_grad`, packed (R + 2, D):
the R rows of x's gradient, then w's, then b's.

NOTE: as the composite (`ops.layer_norm`: mean, subtract, square, mean, add, sqrt, divide,
scale, shift) an eager LayerNorm cost ~10 op calls forward and ~20 backward, 230 µs for
(64, 8, 32) against PyTorch's 63; here 1 and 4. The rows are reduced in float64, so values
differ from the composite's float32 sums in the last bits. The op carries the composite as
`decompose`: compile() traces that, so the optimiser fuses it with the rest of the step as
before. When the backward records (create_graph, or graph mode's `gradients`) the rule is
written in differentiable ops instead, so double backward works as through the composite.
"""
from __future__ import annotations

import numpy as np
from .rules import floating

from .core import Sample, ShapeError, Spec, bind, engine_of, fmt_shape, register
from .rules import dims_match, result_dtype
from .shape import reshape_like, slice_, sum_to_like


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


# -- shape rules ------------------------------------------------------------------------------
def _check(name, x, w, b):
    d = x.shape[-1] if x.ndim else None
    if not x.ndim or w.ndim != 1 or b.ndim != 1 or not dims_match(w.shape, (d,)) or \
            not dims_match(b.shape, (d,)):
        raise ShapeError(f"{name}: weight {fmt_shape(w)} and bias {fmt_shape(b)} must have the "
                         f"shape ({d},) of the last axis of input {fmt_shape(x)}")
    dt = result_dtype(x, w, b)
    return dt if floating(dt) else np.dtype(np.float32)


def _ln_infer(x, w, b, eps=1e-5):
    return Spec(x.shape, _check("layer_norm_last", x, w, b))


def _ln_grad_infer(x, w, g, eps=1e-5):
    dt = _check("layer_norm_last_grad", x, w, w)
    if not dims_match(g.shape, x.shape):
        raise ShapeError(f"layer_norm_last_grad: gradient {fmt_shape(g)} must have the input's "
                         f"shape {fmt_shape(x)}")
    rows = None if None in x.shape[:-1] else int(np.prod(x.shape[:-1], dtype=np.int64))
    return Spec((None if rows is None else rows + 2, x.shape[-1]), dt)


# -- kernels ----------------------------------------------------------------------------------
def _rows(*arrays):
    """(the result's dtype, the arrays as C-contiguous float32/float64 of one dtype, x's and
    g's as (rows, D)): float16 computes in float32 and is cast back, as the composite's ops."""
    dt = np.result_type(*arrays)
    dt = dt if floating(dt) else np.dtype(np.float32)
    work = dt if dt in (np.float32, np.float64) else np.dtype(np.float32)
    out = [np.ascontiguousarray(a, dtype=work) for a in arrays]
    return dt, [a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a for a in out]


def _ln_kernel(x, w, b, eps=1e-5):
    from . import native     # NOTE: on first use: importing dualgrad does not import numba
    x, w, b = np.asarray(x), np.asarray(w), np.asarray(b)
    if not x.ndim or w.shape != x.shape[-1:] or b.shape != x.shape[-1:]:
        raise ValueError("shapes")   # NOTE: the shape rule says why
    dt, (x2, w2, b2) = _rows(x, w, b)
    x2 = x2.reshape(-1, x.shape[-1])
    y = np.empty_like(x2)
    if x2.size:
        native.layer_norm_rows(x2, w2, b2, float(eps), y)
    return y.reshape(x.shape).astype(dt, copy=False)


def _ln_grad_kernel(x, w, g, eps=1e-5):
    from . import native
    x, w, g = np.asarray(x), np.asarray(w), np.asarray(g)
    if not x.ndim or w.shape != x.shape[-1:] or g.shape != x.shape:
        raise ValueError("shapes")
    dt, (x2, w2, g2) = _rows(x, w, g)
    d = x.shape[-1]
    x2, g2 = x2.reshape(-1, d), g2.reshape(-1, d)
    out = np.empty((x2.shape[0] + 2, d), x2.dtype)
    acc = np.zeros((2, d), np.float64)
    if x2.size:
        native.layer_norm_grad_rows(x2, w2, g2, float(eps), out, acc)
    out[-2:] = acc
    return out.astype(dt, copy=False)


# -- gradient rules ---------------------------------------------------------------------------
def _records(v):
    """Whether op calls on v record now (graph mode, a trace, backward(create_graph=True))."""
    records = getattr(engine_of(v), "records", None)
    return records is None or records()


def _ln_vjp(g, x, w, b, out=None, needs=(True, True, True), eps=1e-5):
    if not _records(g):
        p = layer_norm_last_grad(x, w, g, eps=eps)
        n = _shape(p)[0] - 2
        dx = reshape_like(slice_(p, index=(slice(0, n),)), x) if needs[0] else None
        return (dx, reshape_like(slice_(p, index=(slice(n, n + 1),)), w) if needs[1] else None,
                reshape_like(slice_(p, index=(slice(n + 1, n + 2),)), b) if needs[2] else None)
    from .composite import mean, rsqrt
    xc = x - mean(x, axis=-1, keepdims=True)
    rstd = rsqrt(mean(xc * xc, axis=-1, keepdims=True) + eps)
    xhat = xc * rstd
    dxhat = g * w
    dx = None
    if needs[0]:
        dx = rstd * (dxhat - mean(dxhat, axis=-1, keepdims=True)
                     - xhat * mean(dxhat * xhat, axis=-1, keepdims=True))
    return (dx, sum_to_like(g * xhat, w) if needs[1] else None,
            sum_to_like(g, b) if needs[2] else None)


def _ln_composite(x, w, b, eps=1e-5):
    from .composite import layer_norm
    return layer_norm(x, w, b, eps=eps)


def _ln_ref(np, x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    v = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(v + eps) * w + b


def _ln_grad_ref(np, x, w, g, eps=1e-5):
    d = x.shape[-1]
    x2, g2 = x.reshape(-1, d), g.reshape(-1, d)
    mu = x2.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x2 - mu) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x2 - mu) * rstd
    dxhat = g2 * w
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return np.concatenate([dx, (g2 * xhat).sum(0)[None], g2.sum(0)[None]], axis=0)


_BAD = (r"layer_norm_last: weight \(5,\) and bias \(6,\) must have the shape \(6,\) of the last "
        r"axis of input \(4, 6\)")
LAYER_NORM_LAST = register(
    "layer_norm_last", _ln_infer, _ln_kernel, _ln_vjp, category="other",
    samples=(Sample(((4, 6), (6,), (6,))), Sample(((2, 3, 5), (5,), (5,)), {"eps": 1e-3}),
             Sample(((4, 6), (5,), (6,)), match=_BAD)),
    ref=_ln_ref)
LAYER_NORM_LAST_GRAD = register(
    "layer_norm_last_grad", _ln_grad_infer, _ln_grad_kernel, None, category="other",
    samples=(Sample(((4, 6), (6,), (4, 6)), grad=False),
             Sample(((2, 3, 5), (5,), (2, 3, 5)), {"eps": 1e-3}, grad=False),
             Sample(((4, 6), (6,), (4, 5)), match=r"layer_norm_last_grad: gradient \(4, 5\) "
                                                  r"must have the input's shape \(4, 6\)")),
    ref=_ln_grad_ref)
LAYER_NORM_LAST.decompose = _ln_composite


def layer_norm_last(x, weight, bias, eps=1e-5):
    """Layer norm over the last axis of x, then * weight + bias (both of that axis' length)."""
    return bind(LAYER_NORM_LAST, x, weight, bias, eps=eps)


def layer_norm_last_grad(x, weight, g, eps=1e-5):
    """layer_norm_last's gradient for g, packed (rows + 2, D): x's rows, weight's, bias'."""
    return bind(LAYER_NORM_LAST_GRAD, x, weight, g, eps=eps)


LAYER_NORM_LAST.fn, LAYER_NORM_LAST_GRAD.fn = layer_norm_last, layer_norm_last_grad
