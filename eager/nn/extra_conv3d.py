"""3-d convolution and pooling over (N, C, D, H, W) inputs (or unbatched (C, D, H, W)), as
sums and maxima over the depth of the 2-d ops: each output depth slice combines the 2-d
results of the input slices its window covers, so the gradients are the 2-d ops'.

>>> from dualgrad import eager as torch
>>> import dualgrad.eager.nn.functional as F
>>> x = torch.ones(1, 1, 3, 3, 3)
>>> F.conv3d(x, torch.ones(1, 1, 2, 2, 2)).shape, F.max_pool3d(x, 2).shape
(torch.Size([1, 1, 2, 2, 2]), torch.Size([1, 1, 1, 1, 1]))
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import ops
from dualgrad.ops.composite import in_opmath
from dualgrad.ops.conv import half_adaptive_avg_pool3d
from dualgrad.ops.rules import HALF

from ..functions import _arr, _no_grad_tensor, _t
from .core_functional import pad
from . import half_conv


def _triple(v):
    return (v,) * 3 if isinstance(v, int) else tuple(v)


def _batched(name, fn):
    """fn on a batch; an unbatched (C, D, H, W) input gets a batch of one and loses it again."""
    def run(input, *args, **kwargs):  # noqa: A002
        x = _t(input)
        if x.ndim == 4:
            out = fn(ops.expand_dims(x, axis=0), *args, **kwargs)
            return tuple(ops.squeeze(o, axis=0) for o in out) if isinstance(out, tuple) \
                else ops.squeeze(out, axis=0)
        if x.ndim != 5:
            raise RuntimeError(f"{name}: expected a 4-d (unbatched) or 5-d input, got "
                               f"{tuple(x.shape)}")
        return fn(x, *args, **kwargs)
    run.__name__ = run.__qualname__ = name
    return run


def _depth(x, d):
    return x[:, :, d]


def _same_padding(x, k, dilation):
    """Pad x (asymmetrically where needed) so that a stride-1 output keeps the input's size."""
    pads = []
    for kk, dd in reversed(list(zip(k, dilation))):
        total = dd * (kk - 1)
        pads += [total // 2, total - total // 2]
    return pad(x, pads)


# NOTE: a half input (oneDNN's bfloat16, torch's slow path for float16): every product of an
# output, bias included, summed in float32 and rounded once
@in_opmath
def _conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    w = _t(weight)
    k, s, d = tuple(w.shape[2:]), _triple(stride), _triple(dilation)
    if isinstance(padding, str):
        if padding == "same":
            x, padding = _same_padding(x, k, d), 0
        elif padding == "valid":
            padding = 0
        else:
            raise ValueError(f"conv3d: invalid padding string {padding!r}")
    p = _triple(padding)
    if p[0]:
        x = ops.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (0, 0), (0, 0)), value=0.0)
    depth = x.shape[2]
    dout = (depth - d[0] * (k[0] - 1) - 1) // s[0] + 1
    slices = []
    for od in range(dout):
        acc = None
        for kd in range(k[0]):
            y = ops.conv2d(_depth(x, od * s[0] + kd * d[0]), w[:, :, kd], None, s[1:], p[1:],
                           d[1:], groups)
            acc = y if acc is None else acc + y
        slices.append(acc)
    if not slices:
        raise RuntimeError(f"conv3d: the kernel {k} is larger than the padded input "
                           f"{tuple(x.shape[2:])}")
    out = ops.stack(*slices, axis=2)
    return out if bias is None else out + ops.reshape(bias, (1, -1, 1, 1, 1))


def _pool_depth(depth, k, s, p, d, ceil_mode):
    """The input depth indices each output depth's window covers (torch's geometry)."""
    span = depth + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= depth + p:
        out -= 1
    return [[i for i in (o * s - p + j * d for j in range(k)) if 0 <= i < depth]
            for o in range(out)]


def _depth_max(planes, window, hw):
    """The maximum over a depth window of 2-d (values, indices) planes: the first plane
    holding the maximum wins (torch scans depth first), with its flat D*H*W index."""
    val, idx = planes(window[0])
    best = _arr(val)
    where = None if idx is None else np.asarray(_arr(idx)) + window[0] * hw
    for i in window[1:]:
        v, j = planes(i)
        better = (_arr(v) > best) | (_arr(v) != _arr(v))    # NOTE: a later nan wins, as torch
        val = ops.where(better, v, val)
        best = np.where(better, _arr(v), best)
        if where is not None:
            where = np.where(better, np.asarray(_arr(j)) + i * hw, where)
    return val, where


def _max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    k = _triple(kernel_size)
    s = k if stride is None or stride == [] else _triple(stride)
    p, d = _triple(padding), _triple(dilation)
    planes = {}

    def plane(i):
        if i not in planes:
            planes[i] = ops.max_pool2d(_depth(x, i), k[1:], s[1:], p[1:], d[1:], ceil_mode,
                                       return_indices=True)
        return planes[i]
    hw = x.shape[3] * x.shape[4]
    pairs = [_depth_max(plane, w, hw) for w in _pool_depth(x.shape[2], k[0], s[0], p[0],
                                                           d[0], ceil_mode)]
    out = ops.stack(*[v for v, _ in pairs], axis=2)
    if not return_indices:
        return out
    return out, _no_grad_tensor(np.stack([i for _, i in pairs], axis=2).astype(np.int64))


def _avg_counts(size, k, s, p, n_out, count_include_pad):
    """Each output position's divisor along one dim (torch's avg_pool rule)."""
    out = []
    for o in range(n_out):
        start = o * s - p
        end = min(start + k, size + p)
        pool = end - start
        real = min(end, size) - max(start, 0)
        out.append(pool if count_include_pad else real)
    return np.array(out, np.float64)


def _avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k = _triple(kernel_size)
    s = k if stride is None or stride == [] else _triple(stride)
    p = _triple(padding)
    sums = []
    for window in _pool_depth(x.shape[2], k[0], s[0], p[0], 1, ceil_mode):
        acc = None
        for i in window:
            y = ops.avg_pool2d(_depth(x, i), k[1:], s[1:], p[1:], ceil_mode, True, 1)
            acc = y if acc is None else acc + y
        sums.append(acc)
    total = ops.stack(*sums, axis=2)
    if x.dtype.kind in "iu":   # NOTE: integer pools divide and truncate, as torch
        return ops.cast(_avg_pool3d(ops.cast(x, np.float64), kernel_size, stride, padding,
                                    ceil_mode, count_include_pad, divisor_override), x.dtype)
    if divisor_override:
        return total / divisor_override
    counts = [_avg_counts(x.shape[2 + i], k[i], s[i], p[i], total.shape[2 + i],
                          count_include_pad) for i in range(3)]
    div = counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]
    return total / div.astype(total.dtype)


def _adaptive_windows(size, n):
    return [(math.floor(o * size / n), math.ceil((o + 1) * size / n)) for o in range(n)]


def _adaptive3d(x, output_size, reduce2d, combine):
    out = _triple(output_size) if output_size is not None else (None,) * 3
    out = tuple(x.shape[2 + i] if o is None else o for i, o in enumerate(out))
    slices = []
    for lo, hi in _adaptive_windows(x.shape[2], out[0]):
        planes = [reduce2d(_depth(x, i), out[1:]) for i in range(lo, hi)]
        slices.append(combine(planes))
    return ops.stack(*slices, axis=2)


def _adaptive_avg_pool3d(x, output_size):
    if output_size is not None and _triple(output_size) == (1, 1, 1):   # NOTE: torch: the mean
        return ops.mean(x, axis=(2, 3, 4), keepdims=True)
    if np.dtype(x.dtype) in HALF:
        out = _triple(output_size) if output_size is not None else (None,) * 3
        return half_adaptive_avg_pool3d(x, tuple(x.shape[2 + i] if o is None else o
                                                     for i, o in enumerate(out)))
    return _adaptive3d(x, output_size, ops.adaptive_avg_pool2d,
                       lambda ps: sum(ps[1:], ps[0]) / len(ps))


def _adaptive_max_pool3d(x, output_size, return_indices=False):
    out = _triple(output_size) if output_size is not None else (None,) * 3
    out = tuple(x.shape[2 + i] if o is None else o for i, o in enumerate(out))
    hw = x.shape[3] * x.shape[4]
    planes = {}

    def plane(i):
        if i not in planes:
            planes[i] = ops.adaptive_max_pool2d(_depth(x, i), out[1:], return_indices=True) \
                if return_indices else (ops.adaptive_max_pool2d(_depth(x, i), out[1:]), None)
        return planes[i]
    pairs = [_depth_max(plane, list(range(lo, hi)), hw)
             for lo, hi in _adaptive_windows(x.shape[2], out[0])]
    vals = ops.stack(*[v for v, _ in pairs], axis=2)
    if not return_indices:
        return vals
    return vals, _no_grad_tensor(np.stack([i for _, i in pairs], axis=2).astype(np.int64))


def _conv_transpose3d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                      dilation=1):
    w = _t(weight)
    if half_conv.takes_slow_path(x, w, _triple(stride), _triple(output_padding), groups):
        return half_conv.slow_path(x, w, bias, _triple(stride), _triple(padding),
                                   _triple(output_padding), groups, _triple(dilation))
    if np.dtype(x.dtype).kind in "iu":   # NOTE: torch's integer result; float64 is exact here
        f64 = np.dtype("float64")
        return ops.cast(_conv_transpose3d(ops.cast(x, f64), ops.cast(w, f64), bias if bias is
                                          None else ops.cast(bias, f64), stride, padding,
                                          output_padding, groups, dilation), x.dtype)
    return _summed_depth_slices(x, w, bias, stride, padding, output_padding, groups, dilation)


@in_opmath   # NOTE: bfloat16 in float32, rounded once, as torch's oneDNN kernel
def _summed_depth_slices(x, w, bias, stride, padding, output_padding, groups, dilation):
    k, s, p = tuple(w.shape[2:]), _triple(stride), _triple(padding)
    op, d = _triple(output_padding), _triple(dilation)
    dout = (x.shape[2] - 1) * s[0] - 2 * p[0] + d[0] * (k[0] - 1) + op[0] + 1
    parts = [[] for _ in range(dout)]
    plane = None
    for i in range(x.shape[2]):
        for kd in range(k[0]):
            od = i * s[0] - p[0] + kd * d[0]
            y = ops.conv_transpose2d(_depth(x, i), w[:, :, kd], None, s[1:], p[1:], op[1:],
                                     groups, d[1:])
            plane = y
            if 0 <= od < dout:
                parts[od].append(y)
    zero = plane * 0.0
    out = ops.stack(*[sum(ps[1:], ps[0]) if ps else zero for ps in parts], axis=2)
    return out if bias is None else out + ops.reshape(bias, (1, -1, 1, 1, 1))


conv3d = _batched("conv3d", _conv3d)
conv_transpose3d = _batched("conv_transpose3d", _conv_transpose3d)
max_pool3d = _batched("max_pool3d", _max_pool3d)
avg_pool3d = _batched("avg_pool3d", _avg_pool3d)
adaptive_avg_pool3d = _batched("adaptive_avg_pool3d", _adaptive_avg_pool3d)
adaptive_max_pool3d = _batched("adaptive_max_pool3d", _adaptive_max_pool3d)

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d"]
