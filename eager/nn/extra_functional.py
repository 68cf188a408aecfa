"""More of torch.nn.functional, as compositions of the op library's ops: the shrink and
threshold activations, rrelu (eval mode's fixed slope; training draws slopes), rms_norm,
local_response_norm, the margin and likelihood losses, pdist, channel_shuffle, bilinear,
the upsample_* names, dropout3d and the alpha dropouts, and the max_unpool functions.

>>> from dualgrad import eager as torch
>>> import dualgrad.eager.nn.functional as F
>>> F.softshrink(torch.tensor([-1.0, 0.2, 2.0]), 0.5).tolist()
[-0.5, 0.0, 1.5]
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from dualgrad import ops
from dualgrad.ops.composite import in_opmath
from dualgrad.ops.rules import HALF, SUB_BOOL, floating, torch_opmath_dtype

from ..amp import keeps_fp32
from ..functions import _arr, _t
from ..refusals import scalar_type
from .core_functional import (_channel_dropout, _in_input_dtype, _inplace, _legacy_reduction, _reduce, cross_entropy,
                              _channel_dropout_unbatched, freq_scale, interpolate, linear, renorm_rows, avg_pool1d,
                              avg_pool2d)


# -- activations -------------------------------------------------------------------------------
def threshold(input, threshold, value, inplace=False):  # noqa: A002
    """input where input > threshold, else value."""
    return _inplace(input, inplace, "threshold",
                    lambda x: ops.where(ops.gt(x, threshold), x, value))


def softshrink(input, lambd=0.5):  # noqa: A002
    x = _t(input)
    if x.dtype.kind == "f" and not 0 <= lambd <= float(np.finfo(x.dtype).max):
        raise RuntimeError(f"lambda must be in range [0, {float(np.finfo(x.dtype).max):g}] for "
                           f"input dtype {scalar_type(x.dtype)}, but found {lambd}")
    return ops.where(ops.gt(x, lambd), x - lambd, ops.where(ops.lt(x, -lambd), x + lambd,
                                                            x * 0.0))


def hardshrink(input, lambd=0.5):  # noqa: A002
    x = _t(input)
    keep = ops.logical_or(ops.gt(x, lambd), ops.lt(x, -lambd))
    return ops.where(keep, x, x * 0.0)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    """Leaky relu with slope (lower + upper) / 2 in eval mode; training draws each negative
    element's slope uniformly from [lower, upper] (dualgrad's generator, not torch's)."""
    x = _t(input)
    if training:
        from ..generator import rng_of
        slope = rng_of(None).uniform(lower, upper, tuple(x.shape)).astype(x.dtype)
    else:
        slope = (lower + upper) / 2
    return _inplace(x, inplace, "rrelu", lambda t: ops.where(ops.ge(t, 0), t, t * slope))


# -- normalisation -----------------------------------------------------------------------------
def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """x / sqrt(mean(x^2 over the last len(normalized_shape) dims) + eps) * weight."""
    x = _t(input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.ndim < len(shape):
        raise ValueError(f"Input tensor must have at least {len(shape)} dimensions, but got "
                         f"{x.ndim}")
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size"
                           f"{list(x.shape)}")
    eps = np.finfo(x.dtype).eps if eps is None else eps
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    half = x.dtype == np.float16   # NOTE: torch computes float16 in float32
    v = ops.cast(x, np.float32) if half else x
    out = v * ops.rsqrt(ops.mean(v * v, axis=axes, keepdims=True) + eps)
    out = ops.cast(out, np.float16) if half else out
    return out if weight is None else out * weight


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""
    x = _t(input)
    if x.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} "
                         f"dimensions)")
    if x.numel() == 0:
        return x
    sq = ops.expand_dims(x * x, axis=1)   # (N, 1, C, ...)
    pads = [(0, 0)] * sq.ndim
    pads[2] = (size // 2, (size - 1) // 2)
    sq = ops.pad(sq, tuple(pads), value=0.0)
    c = x.shape[1]
    window = sum(sq[:, :, i:i + c] for i in range(size))
    window = ops.squeeze(window, axis=1)
    # NOTE: torch averages with avg_pool, which divides an integer input's sums in integers
    avg = window // size if np.dtype(x.dtype).kind in "iu" else window / size
    div = avg * alpha + k   # NOTE: torch's order of rounding
    return x / div ** beta


# -- losses ------------------------------------------------------------------------------------
@keeps_fp32
def soft_margin_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                     reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # NOTE: torch's form, -input * target (a uint8 target is not negated), in input's dtype
    return _in_input_dtype(_reduce(ops.log1p(ops.exp(-_t(input) * target)), reduction), input)


@keeps_fp32
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, t = _t(input), _t(target)
    loss = ops.where(ops.ne(t, -1), x, 0.0) + ops.where(ops.ne(t, 1), ops.relu(margin - x), 0.0)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None,  # noqa: A002
                                reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, t = _t(input), _t(target)
    if t.dtype == np.bool_:   # NOTE: torch's 1 - target
        raise RuntimeError(SUB_BOOL)
    if x.dtype != t.dtype:
        # NOTE: torch's -(t * logsigmoid(x) + (1 - t) * logsigmoid(-x)): the log-sigmoids in
        # x's own dtype, then promoted
        loss = -(t * ops.logsigmoid(x) + (1 - t) * ops.logsigmoid(-x))
        if weight is not None:
            loss = loss * weight
        return _reduce(ops.sum(loss, axis=-1) / x.shape[-1], reduction)
    if x.dtype == np.float16:   # NOTE: torch computes half in float32, rounding once
        return ops.cast(multilabel_soft_margin_loss(
            ops.cast(x, np.float32), ops.cast(t, np.float32),
            None if weight is None else ops.cast(_t(weight), np.float32), reduction=reduction),
            np.float16)
    loss = t * ops.softplus(-x) + (1 - t) * ops.softplus(x)
    if weight is not None:
        loss = loss * weight
    return _reduce(ops.mean(loss, axis=-1), reduction)


def _long_targets(kernel, input, target):  # noqa: A002
    """The margin losses: no half kernel in torch, and int64 targets only."""
    x_dt, t_dt = _t(input).dtype, _t(target).dtype
    if x_dt in HALF:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type(x_dt)}'")
    if t_dt != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {scalar_type(t_dt)}")


@keeps_fp32
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,  # noqa: A002
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])**p, divided by the class count."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _long_targets("multi_margin_loss_cpu_kernel", input, target)
    x = _t(input)
    x2 = x if x.ndim == 2 else ops.reshape(x, (1, -1))
    y = np.asarray(_arr(target)).reshape(-1).astype(np.int64)
    xy = ops.gather(x2, y[:, None], axis=1)
    m = ops.relu(margin - xy + x2)
    m = m * m if p == 2 else m
    if weight is not None:
        m = m * ops.expand_dims(ops.take(weight, y, axis=0), axis=1)
    not_y = np.arange(x2.shape[1])[None, :] != y[:, None]
    loss = ops.sum(ops.where(not_y, m, 0.0), axis=1) / x2.shape[1]
    if x.ndim < 2:
        loss = ops.reshape(loss, ())
    return _reduce(loss, reduction)


@keeps_fp32
def multilabel_margin_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                           reduction="mean"):
    """For each target class j (the labels before the first -1) and each non-target class i:
    max(0, 1 - (x[j] - x[i])), summed and divided by the class count."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _long_targets("multilabel_margin_loss_forward_out_frame", input, target)
    x = _t(input)
    x2 = x if x.ndim == 2 else ops.reshape(x, (1, -1))
    t = np.asarray(_arr(target)).reshape(x2.shape).astype(np.int64)
    n, c = x2.shape
    is_target = np.zeros((n, c), bool)
    pairs = np.zeros((n, c, c))   # [row, j target, i non-target]: how often the pair counts
    for r in range(n):
        labels = []
        for v in t[r]:
            if v < 0:
                break
            labels.append(v)
        is_target[r, labels] = True
        for j in labels:
            pairs[r, j] += 1
        pairs[r] *= ~is_target[r][None, :]
    diff = 1.0 - (ops.expand_dims(x2, axis=2) - ops.expand_dims(x2, axis=1))
    loss = ops.sum(ops.relu(diff) * pairs.astype(x.dtype), axis=(1, 2)) / c
    if x.ndim < 2:
        loss = ops.reshape(loss, ())
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps)), plus 0.5 log(2 pi)
    when full."""
    x, t, v = _t(input), _t(target), _t(var)
    if v.ndim == x.ndim - 1 or (v.ndim == x.ndim and v.shape[-1] == 1 and x.shape[-1] != 1):
        v = v if v.ndim == x.ndim else ops.expand_dims(v, axis=-1)
    if bool(np.any(_arr(v) < 0)):
        raise ValueError("var has negative entry/entries")
    # NOTE: torch clamps a clone in no_grad: the value is max(var, eps), the gradient flows to
    # var everywhere as if unclamped
    v = ops.where(ops.lt(v, eps), ops.stop_gradient(v * 0 + eps), ops.stop_gradient(v)) + (
        v - ops.stop_gradient(v))
    loss = 0.5 * (ops.log(v) + (x - t) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@keeps_fp32
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None,  # noqa: A002
                     eps=1e-8, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, t = _t(input), _t(target)
    loss = ops.exp(x) - t * x if log_input else x - t * ops.log(x + eps)
    if full:
        tt = t
        stirling = tt * ops.log(ops.where(ops.gt(tt, 1), tt, 1.0)) - tt + 0.5 * ops.log(
            2 * math.pi * ops.where(ops.gt(tt, 1), tt, 1.0))
        loss = loss + ops.where(ops.gt(tt, 1), stirling, 0.0)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    dist = distance_function or (lambda a, b: ops.pairwise_distance(a, b, 2.0, 1e-6, False))
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = ops.minimum(d_neg, dist(positive, negative))
    return _reduce(ops.relu(d_pos - d_neg + margin), reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,  # noqa: A002
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): torch's chunking
    options change only its memory use, so they are accepted and ignored here. A weight of
    shape (C, d1, ..., dK, in_features) gives K-dimensional logits (N, C, d1, ..., dK)."""
    x, w = _t(input), _t(linear_weight)
    wide = torch_opmath_dtype(x.dtype)
    if (options is not None and wide != x.dtype and w.ndim == 2 and label_smoothing == 0.0
            and reduction in ("mean", "sum", "none") and _t(target).dtype == np.int64):
        # NOTE: torch's chunked path (taken with options) keeps half logits in float32
        loss = linear_cross_entropy(
            ops.cast(x, wide), ops.cast(w, wide), target, reduction=reduction,
            linear_bias=None if linear_bias is None else ops.cast(_t(linear_bias), wide),
            weight=None if weight is None else ops.cast(_t(weight), wide),
            ignore_index=ignore_index)
        return ops.cast(loss, x.dtype)
    if not 1 <= x.ndim <= 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {x.ndim}")
    if w.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {w.ndim}")
    if x.shape[-1] != w.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {x.shape[-1]} and {w.shape[-1]}, respectively")
    classes = tuple(w.shape[:-1])
    if linear_bias is not None and tuple(_t(linear_bias).shape) != classes:
        raise RuntimeError(f"expected linear_bias shape {classes}, got "
                           f"{tuple(_t(linear_bias).shape)}")
    if len(classes) > 1 and x.ndim == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(w.shape)} "
                           f"requires batched input, (N, {x.shape[-1]}), got unbatched input "
                           f"with shape {tuple(x.shape)}")
    if len(classes) > 1:
        flat = ops.reshape(w, (-1, w.shape[-1]))
        bias = None if linear_bias is None else ops.reshape(_t(linear_bias), (-1,))
        logits = ops.reshape(linear(x, flat, bias), tuple(x.shape[:-1]) + classes)
    else:
        logits = linear(x, w, linear_bias)
    if ignore_index is not None and tuple(_t(target).shape) == tuple(logits.shape):
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None
                         else ignore_index, reduction=reduction, label_smoothing=label_smoothing)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,  # noqa: A002
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Each bag's rows of weight summed, averaged or maxed (an empty bag gives zeros): bags
    are input's rows (2-d input) or the runs offsets start (1-d input). max_norm and
    scale_grad_by_freq as F.embedding's.

    NOTE: torch's CPU backward with scale_grad_by_freq divides the gradient of the k-th
    distinct index by the count of the k-th smallest index (of [2, 2, 5], row 5's by 2):
    dualgrad divides each row's by its own count, as embedding and the docs do."""
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse:
        raise NotImplementedError("embedding_bag(sparse=True) is not supported by dualgrad")
    if max_norm is not None:
        renorm_rows(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            f"GitHub.")
    idx = np.asarray(_arr(input)).astype(np.int64)
    w = _t(weight)
    psw = None if per_sample_weights is None else _t(per_sample_weights)
    wide = torch_opmath_dtype(w.dtype)
    if wide != w.dtype:   # NOTE: half weights: summed in float32, rounded once, as torch's
        out = embedding_bag(idx, ops.cast(w, wide), offsets, None, norm_type,
                            scale_grad_by_freq, mode, False,
                            None if psw is None else ops.cast(psw, wide),
                            include_last_offset, padding_idx)
        return ops.cast(out, w.dtype)
    if idx.ndim == 2:
        starts = list(range(0, idx.size, idx.shape[1]))
        flat, psw = idx.reshape(-1), None if psw is None else ops.reshape(psw, (-1,))
    else:
        starts = [int(o) for o in np.asarray(_arr(offsets)).reshape(-1)]
        if include_last_offset:
            starts = starts[:-1]
        flat = idx
    ends = starts[1:] + [flat.size]
    scale = freq_scale(flat, w) if scale_grad_by_freq else None
    bags = []
    for lo, hi in zip(starts, ends):
        keep = [i for i in range(lo, hi)
                if padding_idx is None or flat[i] != padding_idx % w.shape[0]]
        if not keep:
            bags.append(ops.sum(w[:0], axis=0))
            continue
        rows = ops.take(w, flat[keep], axis=0)
        if scale is not None:
            rows = ops.scale_grad(rows, np.asarray(scale)[keep][:, None])
        if psw is not None:
            rows = rows * ops.expand_dims(ops.take(psw, np.array(keep), axis=0), axis=-1)
        bags.append(ops.sum(rows, axis=0) if mode == "sum" else ops.mean(rows, axis=0)
                    if mode == "mean" else ops.max(rows, axis=0))
    if not bags:
        return w[:0] * 1.0
    return ops.stack(*bags, axis=0)


# -- distances and layers ----------------------------------------------------------------------
def pdist(input, p=2):  # noqa: A002
    """The p-norm distance between each pair of rows i < j, in row-major order."""
    x = _t(input)
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    i, j = np.triu_indices(x.shape[0], 1)
    diff = ops.take(x, i.astype(np.int64), axis=0) - ops.take(x, j.astype(np.int64), axis=0)
    return ops.norm(diff, ord=p, axis=1)


def channel_shuffle(input, groups):  # noqa: A002
    x = _t(input)
    if x.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(x.shape[2:])
    y = ops.reshape(x, (n, groups, c // groups) + rest)
    y = ops.transpose(y, axes=(0, 2, 1) + tuple(range(3, y.ndim)))
    return ops.reshape(y, (n, c) + rest)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o], contracted as torch's
    (over i first, then j), half dtypes rounded after each step as torch's are."""
    dt = _t(input1).dtype
    out = _contract(_contract(_t(input1), _t(weight), equation="...i,oij->...oj"), _t(input2),
                    equation="...oj,...j->...o")
    out = out if bias is None else _add(out, _t(bias))
    return out if out.dtype == dt else ops.cast(out, dt)   # NOTE: integers keep their dtype


_contract = in_opmath(ops.einsum)
_add = in_opmath(ops.add)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """The deprecated name of interpolate (the same, with torch's UserWarning)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- dropout -----------------------------------------------------------------------------------
def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Channel dropout of (N, C, D, H, W) input; any other rank is torch's unbatched (C, ...)
    (whole rows of dim 0 dropped), with torch's warning unless it is 4-d."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. "
                      f"Note that dropout3d exists to provide channel-wise dropout on inputs "
                      f"with 3 spatial dimensions, a channel dimension, and an optional batch "
                      f"dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    fn = _channel_dropout if input.ndim == 5 else _channel_dropout_unbatched
    return _inplace(input, inplace, "dropout3d", fn, p, training)


_SELU_ALPHA_PRIME = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def _alpha_drop(x, p, training, mask_shape):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = ops.rand_like(np.zeros(mask_shape, np.float32)) >= p
    a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    b = -a * _SELU_ALPHA_PRIME * p
    return ops.where(keep, x, _SELU_ALPHA_PRIME) * a + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "alpha_dropout",
                    lambda x: _alpha_drop(x, p, training, tuple(x.shape)))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "feature_alpha_dropout", lambda x: _alpha_drop(
        x, p, training, tuple(x.shape[:2]) + (1,) * (x.ndim - 2)))


# -- max_unpool: each value put back at the position its index names --------------------------
def _max_unpool(name, nd, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    x = _t(input)
    k = (kernel_size,) * nd if isinstance(kernel_size, int) else tuple(kernel_size)
    s = k if stride is None else (stride,) * nd if isinstance(stride, int) else tuple(stride)
    pd = (padding,) * nd if isinstance(padding, int) else tuple(padding)
    lead = tuple(x.shape[:-nd])
    if output_size is None:
        spatial = tuple((x.shape[-nd + i] - 1) * s[i] - 2 * pd[i] + k[i] for i in range(nd))
    else:
        spatial = tuple(output_size)[-nd:]
    idx = np.asarray(_arr(indices)).reshape(lead + (-1,)).astype(np.int64)
    flat = ops.reshape(x, lead + (-1,))
    keep = _last_writes(idx).astype(x.dtype)
    # NOTE: an overwritten value is dropped, yet its gradient is g at its index, as torch's
    flat_in = flat * keep + (flat - ops.stop_gradient(flat)) * (1 - keep)
    size = math.prod(spatial)
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        raise RuntimeError(f"{name}: found an invalid max index {int(idx.max())} (output "
                           f"volumes are of size {size})")
    zeros = ops.zeros_like(np.zeros(lead + (size,), x.dtype))
    out = ops.gather_grad(flat_in, idx, zeros, axis=len(lead))
    return ops.reshape(out, lead + spatial)


def _last_writes(idx):
    """1 where an index is the last to name its position in its row (the value torch keeps
    when windows overlap), else 0."""
    rows = idx.reshape(-1, idx.shape[-1]) if idx.size else idx.reshape(0, 0)
    keep = np.zeros(rows.shape, bool)
    for r, row in enumerate(rows):
        _, first_of_reversed = np.unique(row[::-1], return_index=True)
        keep[r, row.size - 1 - first_of_reversed] = True
    return keep.reshape(idx.shape)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


def _lp_pool(avg, dims, input, norm_type, kernel_size, stride, ceil_mode):  # noqa: A002
    """torch's lp_pool: (sum of x ** p over each window) ** (1 / p), computed as torch does,
    from the window average of x ** p (its sign kept through relu of |.|, so negative sums of
    odd powers come out as torch's)."""
    k = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    out = avg(input.pow(norm_type), k if dims > 1 else k[0], stride, 0, ceil_mode)
    return (out.sign() * ops.relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    return _lp_pool(avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    return _lp_pool(avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def _default_align(align_corners):
    """torch's align_corners=None: False, with its UserWarning at the caller's line."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        return False
    return align_corners


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """torch's grid_sample: input (N, C, H, W) read at grid (N, Ho, Wo, 2) of (x, y) in
    [-1, 1], or (N, C, D, H, W) at (N, Do, Ho, Wo, 3) of (x, y, z); modes bilinear, nearest
    and bicubic (4-d only), padding zeros, border and reflection. Gradients reach the input
    and the grid (nearest's grid gradient is zero, as torch's). A composition of registry
    ops (ops/sampling.py), so compile() traces it.

    >>> from dualgrad import eager as torch
    >>> x = torch.arange(4.0).reshape(1, 1, 2, 2)
    >>> torch.nn.functional.grid_sample(x, torch.zeros(1, 1, 1, 2), align_corners=True)
    tensor([[[[1.5000]]]])
    """
    if mode in ("bilinear", "nearest", "bicubic") and \
            padding_mode in ("zeros", "border", "reflection"):
        align_corners = _default_align(align_corners)   # NOTE: torch checks the modes first
    return ops.grid_sample(input, grid, mode, padding_mode, bool(align_corners))


def affine_grid(theta, size, align_corners=None):
    """torch's affine_grid: the sampling grid (N, H, W, 2) of (x, y) in [-1, 1] for 2-d
    (N, 2, 3) thetas and a 4-d size (N, C, H, W), or (N, D, H, W, 3) of (x, y, z) for 3-d
    (N, 3, 4) thetas and a 5-d size (N, C, D, H, W): theta applied to the base grid."""
    align_corners = _default_align(align_corners)
    if not floating(theta.dtype):
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"torch.{np.dtype(theta.dtype).name}")
    spatial = tuple(size)[2:]
    if len(size) in (4, 5):
        k = len(size) - 2
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
            raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} "
                             f"for size {size}. Got torch.Size({list(theta.shape)}).")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    if theta.shape[0] != n:      # NOTE: torch's bmm of the base grid by theta refuses it
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {k + 1}] but got: [{theta.shape[0]}, {k + 1}].")

    def steps(num):
        if num <= 1:
            return np.zeros(max(num, 0))
        v = np.linspace(-1.0, 1.0, num)
        return v if align_corners else v * (num - 1) / num
    # NOTE: coordinates in (x, y[, z]) order: the last spatial axis first
    axes = np.meshgrid(*[steps(s) for s in spatial], indexing="ij")
    cells = math.prod(spatial)
    base = np.stack(list(axes[::-1]) + [np.ones_like(axes[0])], axis=-1).reshape(1, cells, k + 1)
    grid = ops.matmul(np.broadcast_to(base, (n, cells, k + 1)).astype(np.dtype(theta.dtype)),
                      theta.transpose(1, 2))
    return grid.reshape((n,) + spatial + (k,))


__all__ = ["lp_pool1d", "lp_pool2d", "affine_grid", "grid_sample", "threshold", "softshrink", "hardshrink",
           "rrelu", "rms_norm", "local_response_norm",
           "soft_margin_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "gaussian_nll_loss",
           "poisson_nll_loss", "triplet_margin_with_distance_loss", "pdist", "channel_shuffle",
           "bilinear", "linear_cross_entropy", "embedding_bag", "upsample", "upsample_nearest", "upsample_bilinear", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "max_unpool1d", "max_unpool2d", "max_unpool3d"]
