"""The class losses, cross_entropy and nll_loss, as compositions that round where aten rounds.

aten's nll_loss adds -logp[target] * weight in the input's dtype into cascaded partial sums
(`cascade_sum`); cross_entropy is nll_loss of log_softmax rounded to the input's dtype, or,
with label smoothing or probability targets, aten's own formulas. float16 and bfloat16
follow those steps, so a half loss is torch's to the last bit; float32 and float64 sum as
NumPy does (at most a last-bit difference), and without weight or smoothing take the one-
kernel softmax_cross_entropy.
"""
from __future__ import annotations

import numpy as np

from .composite import _reduce_loss, _shape, composite, in_opmath, log_softmax
from .core import Sample, fmt_shape, located, spec_of
from .elementwise import cast, ne, where
from .losses import cascade_sum, softmax_cross_entropy
from .nn import one_hot
from .reduce import count, static_count, sum as sum_
from .rules import dims_match, norm_axis, torch_opmath_dtype
from .shape import take, transpose


def _ce_ref(np, logits, target, reduction="mean", ignore_index=None, label_smoothing=0.0):
    m = np.max(logits, axis=-1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True))
    c = logits.shape[-1]
    valid = (target != (-1 if ignore_index is None else ignore_index))[..., None] | \
        (ignore_index is None)
    oh = np.where(target[..., None] == np.arange(c), 1.0 - label_smoothing, 0.0)
    t = np.where(valid, oh + label_smoothing / c, 0.0).astype(logits.dtype)
    loss = -np.sum(t * logp, axis=-1)
    if reduction == "mean":
        return np.sum(loss) / np.sum(valid).astype(logits.dtype)
    return np.sum(loss) if reduction == "sum" else loss


@composite(samples=(Sample(((4, 5), np.array([0, 4, 2, 2]))),
                    Sample(((3, 2, 4), np.array([[0, 1], [3, 3], [2, 0]])), {"reduction": "sum"}),
                    Sample(((4, 5), np.array([0, -100, 2, 2])), {"ignore_index": -100}),
                    Sample(((4, 5), np.array([0, 4, 3, 2])), {"label_smoothing": 0.1,
                                                              "ignore_index": 3}),
                    Sample(((4, 5), np.array([[0], [4], [2], [2]])),
                           match=r"cross_entropy: target \(4, 1\) must have shape \(4,\)")),
           ref=_ce_ref)
def cross_entropy(logits, target, reduction="mean", weight=None, ignore_index=None,
                  label_smoothing=0.0, axis=-1):
    """Softmax cross-entropy from logits (..., C) and integer class targets (...), or class
    probabilities (..., C), with torch's per-class `weight`, `ignore_index` (class targets)
    and `label_smoothing`; 'mean' divides by the summed weight of the counted targets.
    ignore_index=None (the default here) ignores nothing; eager's F.cross_entropy passes
    PyTorch's -100, and axis=1: the classes of logits (and probability targets) are then in
    that dim, as torch's (N, C, d1, ...), where a float16 log_softmax rounds otherwise."""
    prob = not _integers(target)
    x, axis = logits, norm_axis("cross_entropy", axis, len(_shape(logits)), frontend=True)
    logits, target = _last(logits, axis), _last(target, axis) if prob else target
    ls, ts = _shape(logits), _shape(target)
    if prob:
        if ts != ls:
            raise located(f"cross_entropy: probability target {fmt_shape(ts)} must have the "
                          f"shape of logits {fmt_shape(ls)}")
        return _probability_ce(x, axis, target, reduction, weight, label_smoothing)
    if not dims_match(ts, ls[:-1]):
        raise located(f"cross_entropy: target {fmt_shape(ts)} must have shape "
                      f"{fmt_shape(ls[:-1])} (class indices) for logits {fmt_shape(ls)}")
    if weight is None and not label_smoothing and not _half(logits):
        return _one_kernel_ce(logits, target, reduction, ignore_index)
    logp = _last(log_softmax(x, axis=axis), axis)
    loss = _nll(logp, target, reduction, weight, ignore_index)
    if not label_smoothing:
        return loss
    return _smoothed(loss, logp, target, reduction, weight, ignore_index, label_smoothing)


def _integers(target):
    # NOTE: not getattr(target, "dtype", np.asarray(target).dtype): the default is evaluated
    # first, and a graph tensor refuses np.asarray
    return np.dtype(target.dtype if hasattr(target, "dtype") else
                    np.asarray(target).dtype).kind in "iu"


def _last(x, axis):
    """x with its dim `axis` moved last."""
    nd = len(_shape(x))
    if axis >= nd - 1:
        return x
    return transpose(x, axes=tuple(d for d in range(nd) if d != axis) + (axis,))


def _half(x):
    """float16 or bfloat16: aten's losses round at each of their steps, which these follow."""
    dt = np.dtype(spec_of(x).dtype)
    return torch_opmath_dtype(dt) != dt


def _one_kernel_ce(logits, target, reduction, ignore_index):
    c = _shape(logits)[-1]
    if ignore_index is None or not _may_ignore(target, ignore_index):
        return _reduce_loss(softmax_cross_entropy(logits, one_hot(target, c, dtype=logits.dtype)),
                            reduction)
    # NOTE: some target may be ignore_index (or, traced, may be: its values are not known):
    # the primitive on the other rows, 0 for those (as torch), 'mean' over the counted ones
    keep = ne(target, ignore_index)
    hot = one_hot(where(keep, target, 0), c, dtype=logits.dtype)
    loss = where(keep, softmax_cross_entropy(logits, hot), 0.0)
    if reduction == "mean":
        return sum_(loss) / sum_(cast(keep, logits.dtype))
    return _reduce_loss(loss, reduction)


# NOTE: torch's sums of float16 accumulate in float32 and round once (ops.sum's are NumPy's)
_opsum = in_opmath(sum_)


def _weighted_sum(w, logp, axis):
    """sum(w * logp) where a -inf log-probability with weight 0 (a masked class) adds 0, not
    0 * -inf = nan, as in torch."""
    return sum_(where(ne(w, 0.0), w * logp, 0.0), axis=axis)


def _reduction(reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return reduction


def _may_ignore(target, ignore_index):
    """False when no target can equal ignore_index (-100 with ordinary class indices)."""
    arr = getattr(target, "_array", target)
    if isinstance(arr, np.ndarray):
        return bool(np.any(arr == ignore_index))
    return True        # a graph tensor: its values are not known yet


def _nll(logp, target, reduction, weight, ignore_index):
    """aten's nll_loss of log-probabilities with classes last (..., C) and class indices
    (...): -logp[target] * weight[target] each, 0 where ignored; 'mean' divides the sum by
    the sum of those weights (or their count)."""
    c, dt = _shape(logp)[-1], np.dtype(spec_of(logp).dtype)
    keep = None
    if ignore_index is not None and _may_ignore(target, ignore_index):
        keep = ne(target, ignore_index)
        target = where(keep, target, 0)
    loss = -_weighted_sum(one_hot(target, c, dtype=dt), logp, -1)    # exact: one term per row
    w = None if weight is None else take(weight, target, axis=0)
    if w is not None:
        loss = loss * w
    if keep is not None:
        loss = where(keep, loss, 0.0)
        w = None if w is None else where(keep, w, 0.0)
    if _reduction(reduction) == "none":
        return loss
    total = _sum(loss, keep)
    if reduction == "sum":
        return total
    if w is not None:
        return total / _sum(w, keep)
    return total / (count(loss) if keep is None else cast(sum_(cast(keep, np.int64)), dt))


def _sum(x, keep):
    """A loss's sum as aten's nll_loss adds it (in the dtype, cascaded) for float16 and
    bfloat16; NumPy's sum otherwise."""
    return cascade_sum(x, keep) if _half(x) else sum_(x)


def _smoothed(loss, logp, target, reduction, weight, ignore_index, eps):
    """aten's cross_entropy with label smoothing: (1 - eps) * the nll_loss + eps / C * the
    loss against uniform targets, -sum(logp * weight) per row."""
    c, dt = _shape(logp)[-1], np.dtype(spec_of(logp).dtype)
    smooth = -_opsum(logp if weight is None else logp * weight, axis=-1)
    keep = None if ignore_index is None else ne(target, ignore_index)
    if keep is not None:
        smooth = where(keep, smooth, 0.0)
    if reduction == "mean":
        total = _opsum(smooth)
        if weight is not None:
            w = take(weight, target if keep is None else where(keep, target, 0), axis=0)
            smooth = total / _opsum(w if keep is None else where(keep, w, 0.0))
        else:   # NOTE: over an int64 count: in opmath, as torch divides by a 0-d tensor
            wide = torch_opmath_dtype(dt)
            n = count(cast(smooth, wide)) if keep is None else sum_(cast(keep, np.int64))
            smooth = cast(cast(total, wide) / cast(n, wide), dt)
    elif reduction == "sum":
        smooth = _opsum(smooth)
    return (1.0 - eps) * loss + smooth * (eps / c)


def _probability_ce(x, axis, target, reduction, weight, eps):
    """aten's cross_entropy of logits x (classes in `axis`) against probabilities (classes
    last): -sum(logp * t * weight), per row ('none'), in all, or in all divided by the
    number of rows ('mean')."""
    logp = _last(log_softmax(x, axis=axis), axis)
    c = _shape(logp)[-1]
    t = target * (1.0 - eps) + eps / c if eps else target
    prod = logp * t
    if weight is not None:
        prod = prod * weight
    if _reduction(reduction) == "none":
        return -_opsum(prod, axis=-1)
    total = -_opsum(prod)
    if reduction == "sum":
        return total
    rows = static_count(_shape(logp)[:-1], None)
    return total / (rows if rows is not None else count(_opsum(prod, axis=-1)))


def _nll_ref(np, lp, t, reduction="mean"):
    ax = 1 if lp.ndim >= 2 else 0
    hit = np.expand_dims(t, ax) == np.arange(lp.shape[ax]).reshape((-1,) + (1,) * (lp.ndim - ax - 1))
    loss = -np.sum(np.where(hit, lp, 0.0), axis=ax)
    return np.mean(loss) if reduction == "mean" else np.sum(loss) if reduction == "sum" else loss


@composite(samples=(Sample(((4, 5), np.array([0, 4, 2, 2]))),
                    Sample(((5,), np.array(3)), {"reduction": "none"}),
                    Sample(((2, 3, 4), np.array([[0, 1, 2, 2], [1, 1, 0, 2]])),
                           {"reduction": "sum"}),
                    Sample(((4, 5), np.array([[0], [4], [2], [2]])),
                           match=r"nll_loss: target \(4, 1\) must have shape \(4,\)")),
           ref=_nll_ref)
def nll_loss(log_probs, target, reduction="mean", weight=None, ignore_index=None):
    """Negative log-likelihood of integer class targets, classes in dim 1 as torch:
    log_probs (N, C) or (N, C, d1, ...) with target (N,) or (N, d1, ...); (C,) with ().
    torch's per-class `weight` and `ignore_index` ('mean' divides by the summed weight of the
    counted targets); ignore_index=None ignores nothing (eager's F.nll_loss passes -100)."""
    ls, ts = _shape(log_probs), _shape(target)
    ax = 1 if len(ls) >= 2 else 0
    want = ls[:1] + ls[2:] if len(ls) >= 2 else ()
    if not ls or not dims_match(ts, want) or ls[ax] is None:
        raise located(f"nll_loss: target {fmt_shape(ts)} must have shape {fmt_shape(want)} "
                      f"(class indices) for input {fmt_shape(ls)} (classes in dim 1, known)")
    last = log_probs if len(ls) <= 2 else \
        transpose(log_probs, axes=(0,) + tuple(range(2, len(ls))) + (1,))
    return _nll(last, target, reduction, weight, ignore_index)
