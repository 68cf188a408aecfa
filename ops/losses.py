"""Softmax cross-entropy as one primitive (TF's SoftmaxCrossEntropyWithLogits): the loss of
logits against target probabilities in one row-wise kernel, and its gradient in another.

NOTE: as a composite (one_hot, log_softmax's max/where/exp/sum/log, the masked product, the
sum) the loss cost ~15 op calls forward and ~20 backward in every eager step, for a (128, 10)
batch: the largest share of an eager MLP step's kernel calls. The primitive computes the same
numbers the composite does, and torch's at the edges: the row max is replaced by 0 where it
is not finite, a row holding +inf or nan gives nan throughout (loss and gradient), an all -inf
row gives nan, and a zero target ignores its log-probability (a masked class at -inf adds 0,
not 0 * -inf).

>>> import numpy as np
>>> from dualgrad import ops
>>> x = np.array([[2.0, 0.0, -1.0]], np.float32)
>>> t = np.array([[1.0, 0.0, 0.0]], np.float32)
>>> np.round(ops.softmax_cross_entropy(x, t), 4)
array([0.1698], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from .core import Sample, ShapeError, Spec, bind, fmt_shape, register
from .elementwise import abs as abs_, exp, log, lt, stop_gradient, where
from .reduce import in_opmath, max as max_, sum as sum_
from .rules import dims_match, result_dtype
from .shape import broadcast_like, expand_dims, last_axis_sum


def _known(a, b):
    """Two matching shapes as one, each dim known where either is (None = unknown)."""
    return tuple(y if x is None else x for x, y in zip(a, b))


def _sce_infer(logits, labels, **_):
    if not logits.shape or not dims_match(logits.shape, labels.shape):
        raise ShapeError(f"softmax_cross_entropy: logits {fmt_shape(logits)} and labels "
                         f"{fmt_shape(labels)} must have the same shape, classes last")
    return Spec(_known(logits.shape, labels.shape)[:-1], result_dtype(logits, labels))


def _sce_grad_infer(logits, labels, g, **_):
    spec = _sce_infer(logits, labels)
    if not dims_match(g.shape, spec.shape):
        raise ShapeError(f"softmax_cross_entropy_grad: gradient {fmt_shape(g)} must have the "
                         f"shape of the loss {fmt_shape(spec.shape)} for logits "
                         f"{fmt_shape(logits)}")
    shape = _known(_known(logits.shape, labels.shape), tuple(g.shape) + (logits.shape[-1],))
    return Spec(shape, result_dtype(logits, labels))


def _row_sum(x):
    s = last_axis_sum(x)
    return np.sum(x, axis=-1, keepdims=True) if s is None else s


def _log_softmax_rows(x):
    """(log-probabilities, exp(x - shift), their row sums): log_softmax's composite, row-wise."""
    m = np.max(x, axis=-1, keepdims=True, initial=-np.inf)
    m[~np.isfinite(m)] = 0
    z = x - m
    e = np.exp(z)
    s = _row_sum(e)
    return z - np.log(s), e, s


def _common(logits, labels):
    t = np.asarray(labels, dtype=np.result_type(logits, labels))
    return np.asarray(logits).astype(t.dtype, copy=False), t


@in_opmath
def _sce_kernel(logits, labels):
    from . import native         # NOTE: on first use: importing dualgrad does not import numba
    out = native.sce_rows(logits, labels)
    if out is not None:
        return out
    x, t = _common(logits, labels)
    logp, _, s = _log_softmax_rows(x)
    prod = t * logp
    prod[t == 0] = 0
    loss = np.array(-_row_sum(prod)[..., 0])   # NOTE: an array even for one row (0-d)
    loss[~(s[..., 0] < np.inf)] = np.nan      # a row holding +inf (or nan): nan, as torch
    return loss


@in_opmath
def _sce_grad_kernel(logits, labels, g):
    from . import native
    out = native.sce_grad_rows(logits, labels, g)
    if out is not None:
        return out
    x, t = _common(logits, labels)
    _, e, s = _log_softmax_rows(x)
    with np.errstate(invalid="ignore"):
        d = e * np.where(s < np.inf, _row_sum(t) / s, np.nan) - t
    return d * np.asarray(g, dtype=t.dtype)[..., None]


def _log_softmax(x):
    """log_softmax over the last axis in primitives (the composite's form, which this module
    cannot import: ops/composite.py imports it)."""
    m = stop_gradient(max_(x, axis=-1, keepdims=True, initial=-np.inf))
    z = x - where(lt(abs_(m), np.inf), m, 0.0)
    return z - log(sum_(exp(z), axis=-1, keepdims=True))


def _sce_vjp(g, logits, labels, out=None, needs=(True, True), **_):
    return (softmax_cross_entropy_grad(logits, labels, g) if needs[0] else None,
            -_log_softmax(logits) * expand_dims(g, axis=-1) if needs[1] else None)


def _sce_grad_vjp(u, logits, labels, g, out=None, needs=(True, True, True), **_):
    """The gradient's gradient (double backward: a gradient penalty through the loss), from
    out = (softmax(x) * T - t) * G with T = sum(t), G = g[..., None]."""
    s = exp(_log_softmax(logits))
    big_g = expand_dims(g, axis=-1)
    su = s * u
    ssu = sum_(su, axis=-1, keepdims=True)
    t_sum = sum_(labels, axis=-1, keepdims=True)
    return ((su - s * ssu) * (t_sum * big_g) if needs[0] else None,
            (ssu - u) * big_g if needs[1] else None,
            sum_((s * t_sum - labels) * u, axis=-1) if needs[2] else None)


def _sce_ref(np, x, t):
    m = np.max(x, axis=-1, keepdims=True)
    logp = x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
    return -np.sum(t * logp, axis=-1)


def _sce_grad_ref(np, x, t, g):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    s = e / np.sum(e, axis=-1, keepdims=True)
    return (s * np.sum(t, axis=-1, keepdims=True) - t) * g[..., None]


SOFTMAX_CROSS_ENTROPY = register(
    "softmax_cross_entropy", _sce_infer, _sce_kernel, _sce_vjp, category="other",
    samples=(Sample(((4, 5), (4, 5))), Sample(((2, 3, 4), (2, 3, 4))), Sample(((6,), (6,))),
             Sample(((4, 5), (4, 6)), match=r"softmax_cross_entropy: logits \(4, 5\) and "
                                             r"labels \(4, 6\) must have the same shape")),
    ref=_sce_ref)
SOFTMAX_CROSS_ENTROPY_GRAD = register(
    "softmax_cross_entropy_grad", _sce_grad_infer, _sce_grad_kernel, _sce_grad_vjp,
    category="other",
    samples=(Sample(((4, 5), (4, 5), (4,))), Sample(((2, 3, 4), (2, 3, 4), (2, 3))),
             Sample(((4, 5), (4, 5), (5,)), match="gradient \\(5,\\) must have the shape of "
                                                  "the loss \\(4,\\)")),
    ref=_sce_grad_ref)


# -- torch's nll_loss reduction ----------------------------------------------------------------
def _cascade_infer(values, keep=None, **_):
    if keep is not None and not dims_match(values.shape, keep.shape):
        raise ShapeError(f"cascade_sum: keep {fmt_shape(keep)} must have the shape of values "
                         f"{fmt_shape(values)}")
    return Spec((), values.dtype)


def _cascade_kernel(values, keep=None):
    """aten's nll_loss sum (LossNLL.cpp): the kept values in row-major order, each added in
    their own dtype to the first of 8 partial sums; after a kept value at a flat position
    that is a multiple of 16**j, the partial sums up to j are each added to the next one
    and cleared (16: 2**4, a larger power past 2**32 values); the 8 are then added in order."""
    if keep is not None and np.shape(keep) != np.shape(values):
        raise ValueError("keep is not shaped as values")     # NOTE: the shape rule says why
    v = np.asarray(values).reshape(-1)
    at = np.arange(v.size) if keep is None else np.flatnonzero(np.asarray(keep).reshape(-1))
    power = max(4, (max(v.size, 2) - 1).bit_length() // 8)
    vals, total = v[at], np.zeros((), v.dtype)
    for level in range(8):
        if not vals.size:
            break       # NOTE: the partial sums left are zeros
        vals, at, rest = _runs(vals, at, None if level == 7 else 1 << power * (level + 1))
        total = total + rest
    return np.asarray(total, v.dtype)


def _runs(vals, at, period):
    """Each run of vals that ends at a position (at) divisible by period, summed in order in
    vals' dtype: (those sums, their end positions, the sum of the run left open)."""
    ends = np.zeros(vals.size, bool) if period is None else at % period == 0
    if vals.size == 1:              # NOTE: the common case past the first levels
        return (vals, at, np.zeros((), vals.dtype)) if ends[0] else (vals[:0], at[:0], vals[0])
    closed = np.flatnonzero(ends)
    starts = np.concatenate(([0], closed + 1))
    lengths = np.diff(np.concatenate((starts, [vals.size])))
    seg = np.repeat(np.arange(starts.size), lengths)          # the run of each value
    pos = np.arange(vals.size) - starts[seg]                  # its place in the run
    width = int(lengths.max())
    if starts.size * width <= 4 * vals.size + 64:
        grid = np.zeros((starts.size, width), vals.dtype)     # runs as rows, zero-padded
        grid[seg, pos] = vals
        acc = grid[:, 0]
        for c in range(1, width):   # NOTE: + 0 after a run's end changes nothing
            acc = acc + grid[:, c]
    else:                           # a few long runs among many short ones
        acc = np.zeros(starts.size, vals.dtype)
        for c in range(width):
            i = np.flatnonzero(pos == c)
            acc[seg[i]] = acc[seg[i]] + vals[i]
    return acc[:-1], at[closed], acc[-1]


def _cascade_vjp(g, values, keep=None, out=None, **_):
    g = broadcast_like(g, values)
    return (g if keep is None else where(keep, g, 0.0)), None


CASCADE_SUM = register(
    "cascade_sum", _cascade_infer, _cascade_kernel, _cascade_vjp, category="other",
    samples=(Sample(((40,),)), Sample(((3, 7),)),
             Sample(((300,), np.arange(300) % 7 != 3)),
             Sample(((5,), np.zeros(4, bool)), match=r"cascade_sum: keep \(4,\) must have")),
    ref=lambda np, v, keep=None: np.sum(v if keep is None else np.where(keep, v, 0)))


def cascade_sum(values, keep=None):
    """The sum of values (where keep, if given) as torch's nll_loss adds them: in their own
    dtype, into cascaded partial sums (a float16 loss rounds as torch's, not as a float32
    sum rounded once)."""
    return bind(CASCADE_SUM, values) if keep is None else bind(CASCADE_SUM, values, keep)


def softmax_cross_entropy(logits, labels):
    """-sum(labels * log_softmax(logits)) over the last axis, one value per row; a zero label
    ignores its class's log-probability (TF's softmax_cross_entropy_with_logits)."""
    return bind(SOFTMAX_CROSS_ENTROPY, logits, labels)


def softmax_cross_entropy_grad(logits, labels, g):
    """The loss's gradient for the logits: (softmax(logits) * sum(labels) - labels) * g."""
    return bind(SOFTMAX_CROSS_ENTROPY_GRAD, logits, labels, g)


SOFTMAX_CROSS_ENTROPY.fn = softmax_cross_entropy
SOFTMAX_CROSS_ENTROPY_GRAD.fn = softmax_cross_entropy_grad
CASCADE_SUM.fn = cascade_sum
