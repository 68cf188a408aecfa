"""Convolution, pooling and resampling as compositions over the window primitives.

`unfold` (im2col) carries the sliding-window arithmetic for every op here but max_pool2d (the
`max_pool` primitive of pool.py, one loop each way) and `fold` (its adjoint) is conv_transpose2d; the 1-d forms are the 2-d ones over a height of one. Sizes
follow torch: out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1, with
ceil instead of floor under ceil_mode (a window must still start inside the input).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .core import Sample, fmt_shape, located, spec_of
from .elementwise import abs as abs_, add, cast, copy, div, floordiv, sign, where
from .index import gather
from .composite import _shape, composite, in_opmath, mean
from .nn import fold, matmul, pair, unfold, window_outs
from .pool import max_pool, window_argmax, window_stack
from .reduce import argmax, max as max_, sum as sum_
from .rules import floating
from .shape import (concat, expand_dims, pad, reshape, slice_, squeeze, take, transpose,
                    zeros_like)


def _need(name, x, nd, layout):
    xs = _shape(x)
    if len(xs) != nd:
        raise located(f"{name}: expects a {nd}-d input {layout}, got {fmt_shape(xs)}")
    return xs


# -- convolution -------------------------------------------------------------------------------
def _same_padding(name, kernel, stride, dilation):
    """padding='same' as (top, bottom, left, right): torch puts an odd extra pixel last."""
    if pair(stride) != (1, 1):
        raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for k, d in zip(kernel, pair(dilation))]
    return total[0] // 2, total[0] - total[0] // 2, total[1] // 2, total[1] - total[1] // 2


def _resolve_padding(name, x, padding, kernel, stride, dilation):
    """(x, padding for unfold): 'valid' is 0, 'same' pads so the output keeps the size."""
    if not isinstance(padding, str):
        return x, padding
    if padding == "valid":
        return x, 0
    if padding != "same":
        raise ValueError(f"{name}: invalid padding string {padding!r}, should be one of "
                         f"{{'valid', 'same'}}")
    t, b, l, r = _same_padding(name, kernel, stride, dilation)
    if t == b and l == r:
        return x, (t, l)
    return pad(x, ((0, 0), (0, 0), (t, b), (l, r))), 0


def _conv_ref(np, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    from .nn import _unfold_ref
    n, c, h, ww = x.shape
    o, cg, kh, kw = w.shape
    cols = _unfold_ref(np, x, (kh, kw), stride, padding, dilation)
    ho, wo = window_outs((h, ww), (kh, kw), stride, padding, dilation)
    cols = cols.reshape(n, groups, cg * kh * kw, ho * wo)
    y = np.einsum("gok,ngkl->ngol", w.reshape(groups, o // groups, -1), cols)
    y = y.reshape(n, o, ho, wo)
    return y if b is None else y + b.reshape(1, o, 1, 1)


@composite(samples=(Sample(((2, 3, 6, 6), (4, 3, 3, 3), (4,))),
                    Sample(((1, 2, 5, 5), (3, 2, 3, 3)), {"stride": 2, "padding": 1}),
                    Sample(((1, 4, 7, 6), (6, 2, 3, 2), (6,)),
                           {"stride": (2, 1), "padding": (1, 0), "dilation": (2, 1),
                            "groups": 2}),
                    Sample(((1, 2, 5, 5), (3, 4, 3, 3)), match="has 2 channels")),
           ref=_conv_ref)
@in_opmath
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution, NCHW input, weight (out_channels, in_channels / groups, kh, kw), as
    torch: stride, padding and dilation are ints or (height, width) pairs; padding may be
    'same' or 'valid'."""
    xs, ws = _shape(x), _shape(weight)
    if len(xs) != 4 or len(ws) != 4:
        raise located(f"conv2d: expects input (N, C, H, W) and weight (O, C, kh, kw), got "
                       f"{fmt_shape(xs)} and {fmt_shape(ws)}")
    o, cg, kh, kw = ws
    if xs[1] is not None and cg is not None and xs[1] != cg * groups:
        each = "" if groups == 1 else f" ({groups} groups of {cg})"
        raise located(f"conv2d: input {fmt_shape(xs)} has {xs[1]} channels but weight "
                       f"{fmt_shape(ws)} expects {cg * groups}{each}")
    if o % groups:
        raise located(f"conv2d: out_channels {o} of weight {fmt_shape(ws)} is not divisible "
                       f"by groups={groups}")
    x, padding = _resolve_padding("conv2d", x, padding, (kh, kw), stride, dilation)
    cols = unfold(x, kernel=(kh, kw), stride=stride, padding=padding, dilation=dilation)
    ho, wo = window_outs(_shape(x)[2:], (kh, kw), stride, padding, dilation)
    if groups == 1:
        y = matmul(reshape(weight, (o, -1)), cols)                       # (N, O, L)
    else:
        cols = reshape(cols, (-1, groups, cg * kh * kw, ho * wo))
        y = matmul(reshape(weight, (groups, o // groups, cg * kh * kw)), cols)
    y = reshape(y, (-1, o, ho, wo))
    return y if bias is None else y + reshape(bias, (1, o, 1, 1))


def _upsample_zeros(np, x, axis, s):
    """s - 1 zeros between neighbours along axis (written without in-place writes, for jax)."""
    if s == 1:
        return x
    z = np.stack([x] + [np.zeros_like(x)] * (s - 1), axis=axis + 1)
    shape = list(x.shape)
    shape[axis] *= s
    z = z.reshape(shape)
    return z[:, :, :shape[2] - s + 1] if axis == 2 else z[:, :, :, :shape[3] - s + 1]


def _conv_transpose_ref(np, x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                        dilation=1):
    """A convolution of the zero-upsampled, padded input by the flipped kernel."""
    c, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = (pair(v) for v in (stride, padding,
                                                                 output_padding, dilation))
    x = _upsample_zeros(np, _upsample_zeros(np, x, 2, sh), 3, sw)
    lh, lw = dh * (kh - 1) - ph, dw * (kw - 1) - pw
    x = np.pad(x, ((0, 0), (0, 0), (lh, lh + oph), (lw, lw + opw)))
    wf = w[:, :, ::-1, ::-1].reshape(groups, c // groups, og, kh, kw).transpose(0, 2, 1, 3, 4)
    return _conv_ref(np, x, wf.reshape(groups * og, c // groups, kh, kw), b, 1, 0,
                     (dh, dw), groups)


@composite(samples=(Sample(((2, 3, 4, 4), (3, 2, 3, 3), (2,))),
                    Sample(((1, 4, 3, 5), (4, 3, 3, 2), (6,)),
                           {"stride": (2, 1), "padding": (1, 0), "output_padding": (1, 0),
                            "groups": 2, "dilation": (1, 2)}),
                    Sample(((1, 2, 3, 3), (3, 2, 2, 2)), match="has 2 channels")),
           ref=_conv_transpose_ref)
@in_opmath
def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv2d in its input (torch.nn.functional.conv_transpose2d): weight
    (in_channels, out_channels / groups, kh, kw); out = (H - 1) * stride - 2 * padding +
    dilation * (kh - 1) + output_padding + 1."""
    xs, ws = _need("conv_transpose2d", x, 4, "(N, C, H, W)"), _shape(weight)
    if len(ws) != 4 or (xs[1] is not None and ws[0] != xs[1]):
        raise located(f"conv_transpose2d: input {fmt_shape(xs)} has {xs[1]} channels but "
                       f"weight {fmt_shape(ws)} expects {ws[0] if len(ws) else '?'}")
    c, og, kh, kw = ws
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = (pair(v) for v in (stride, padding,
                                                                 output_padding, dilation))
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise located(f"conv_transpose2d: output_padding {(oph, opw)} must be smaller than "
                      f"either stride {(sh, sw)} or dilation {(dh, dw)}")
    ho = (xs[2] - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wo = (xs[3] - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    k, cg = kh * kw, c // groups
    wt = transpose(reshape(weight, (groups, cg, og * k)), axes=(0, 2, 1))   # (G, og*k, cg)
    cols = matmul(wt, reshape(x, (-1, groups, cg, xs[2] * xs[3])))          # (N, G, og*k, L)
    cols = reshape(cols, (-1, groups * og * k, xs[2] * xs[3]))
    # NOTE: fold reads only the shape of `like`; built from x so the batch may be unknown.
    # Folded onto the whole canvas the windows cover (no padding), then cropped by padding
    # at the start and to the output size: output_padding's extra rows and columns hold what
    # the windows put there (zeros past the canvas), as torch's.
    hc, wc = (xs[2] - 1) * sh + dh * (kh - 1) + 1, (xs[3] - 1) * sw + dw * (kw - 1) + 1
    corner = zeros_like(slice_(x, index=(slice(None), slice(0, 1), slice(0, 1), slice(0, 1))))
    like = corner + np.zeros((1, groups * og, hc, wc), np.dtype(getattr(x, "dtype", "f4")))
    y = fold(cols, like, kernel=(kh, kw), stride=(sh, sw), padding=(0, 0), dilation=(dh, dw))
    eh, ew = max(ph + ho - hc, 0), max(pw + wo - wc, 0)
    if eh or ew:
        y = pad(y, ((0, 0), (0, 0), (0, eh), (0, ew)))
    if ph or pw or eh or ew or (ho, wo) != (hc, wc):
        y = slice_(y, index=(slice(None), slice(None), slice(ph, ph + ho), slice(pw, pw + wo)))
    return y if bias is None else y + reshape(bias, (1, -1, 1, 1))


# -- pooling ----------------------------------------------------------------------------------
def _pool_geometry(name, hw, kernel, stride, padding, dilation, ceil_mode):
    """(out (Ho, Wo), extra bottom/right padding) of a pooling window, as torch sizes it."""
    kernel, stride = pair(kernel), pair(kernel if stride is None or stride == () else stride)
    padding, dilation = pair(padding), pair(dilation)
    outs, extra = [], []
    for size, k, s, p, d in zip(hw, kernel, stride, padding, dilation):
        if p > k // 2:
            raise located(f"{name}: pad should be at most half of effective kernel size, "
                          f"but got pad={p}, kernel_size={k}")
        span = size + 2 * p - d * (k - 1) - 1
        if span < 0:
            raise located(f"{name}: input {fmt_shape(hw)} is smaller than the window "
                           f"{kernel} (padding {padding}, dilation {dilation})")
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        outs.append(out)
        extra.append(max((out - 1) * s + d * (k - 1) + 1 - (size + 2 * p), 0))
    return kernel, stride, padding, dilation, tuple(outs), tuple(extra)


def _windows(x, kernel, stride, padding, dilation, extra, value):
    """(N*C, kh*kw, Ho*Wo): every pooling window of every channel, padded with `value`."""
    (ph, pw), (eh, ew) = padding, extra
    if ph or pw or eh or ew:
        x = pad(x, ((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew)), value=value)
    h, w = _shape(x)[2:]
    return unfold(reshape(x, (-1, 1, h, w)), kernel=kernel, stride=stride, dilation=dilation)


def _pool_ref(np, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
              reduce="max"):
    k, s, p, d, _, extra = _pool_geometry("pool", x.shape[2:], kernel_size, stride, padding,
                                          dilation, ceil_mode)
    fill = -np.inf if reduce == "max" else 0.0
    return getattr(np, reduce)(window_stack(np, x, k, s, p, d, extra, fill), axis=0)


@composite(samples=(Sample(((2, 3, 4, 4),), {"kernel_size": 2}),
                    Sample(((1, 2, 5, 5),), {"kernel_size": 3, "stride": 2}),
                    Sample(((1, 2, 6, 7),), {"kernel_size": (3, 2), "stride": 2,
                                             "padding": 1, "dilation": (1, 2),
                                             "ceil_mode": True})),
           ref=_pool_ref)
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of an (N, C, H, W) input (torch.nn.functional.max_pool2d); with
    return_indices, also each maximum's flat index into its channel's H * W."""
    xs = _need("max_pool2d", x, 4, "(N, C, H, W)")
    k, s, p, d, (ho, wo), extra = _pool_geometry("max_pool2d", xs[2:], kernel_size, stride,
                                                 padding, dilation, ceil_mode)
    out = max_pool(x, k, s, p, d, extra)
    if not return_indices:
        return out
    return out, reshape(window_argmax(x, k, s, p, d, extra), (-1, xs[1], ho, wo))


def _avg_divisor(hw, k, s, p, outs, count_include_pad, divisor_override):
    """torch's divisor for each output cell: the window clipped to the padded input (or to
    the input itself without count_include_pad), or divisor_override."""
    if divisor_override is not None and divisor_override == 0:
        raise located("avg_pool2d: divisor must be not zero")
    if divisor_override:
        return float(divisor_override)
    sizes = []
    for size, kk, ss, pp, out in zip(hw, k, s, p, outs):
        start = np.arange(out) * ss - pp
        end = np.minimum(start + kk, size + pp)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        sizes.append(end - start)
    return np.outer(*sizes).astype(np.float32)


def _avg_ref(np, x, kernel_size, stride=None, padding=0, ceil_mode=False,
             count_include_pad=True, divisor_override=None):
    k, s, p, _, outs, _ = _pool_geometry("avg_pool2d", x.shape[2:], kernel_size, stride,
                                         padding, 1, ceil_mode)
    total = _pool_ref(np, x, kernel_size, stride, padding, 1, ceil_mode, reduce="sum")
    return total / _avg_divisor(x.shape[2:], k, s, p, outs, count_include_pad,
                                divisor_override)


@composite(samples=(Sample(((2, 3, 4, 4),), {"kernel_size": 2}),
                    Sample(((1, 2, 5, 5),), {"kernel_size": 3, "stride": 2}),
                    Sample(((1, 1, 1, 1),), {"kernel_size": 1}),
                    Sample(((1, 2, 6, 7),), {"kernel_size": (3, 2), "stride": 2, "padding": 1,
                                             "ceil_mode": True, "count_include_pad": False}),
                    Sample(((3, 4, 4),), {"kernel_size": 2},
                           match=r"avg_pool2d: expects a 4-d input \(N, C, H, W\), got "
                                 r"\(3, 4, 4\)")),
           ref=_avg_ref)
@in_opmath
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of an (N, C, H, W) input (torch.nn.functional.avg_pool2d); float16
    summed in float32 as torch's kernel; an integer input's mean is its window sum divided by
    the divisor with truncation toward zero, in the input's dtype (torch's integer kernel)."""
    xs = _need("avg_pool2d", x, 4, "(N, C, H, W)")
    k, s, p, d, outs, extra = _pool_geometry("avg_pool2d", xs[2:], kernel_size, stride,
                                             padding, 1, ceil_mode)
    dt = np.dtype(spec_of(x).dtype)
    cols = _windows(x, k, s, p, d, extra, 0)
    div = _avg_divisor(xs[2:], k, s, p, outs, count_include_pad, divisor_override)
    if dt.kind in "iub":
        total = reshape(sum_(cols, axis=1), (-1, xs[1]) + outs)        # int64 sums
        div = np.asarray(div, np.int64)    # NOTE: divisor_override may be negative
        q = floordiv(abs_(total), np.abs(div)) * (sign(total) * np.sign(div))
        return cast(q, dt if dt.kind != "b" else np.dtype(np.int64))
    if np.ndim(div) == 0 or np.all(div == k[0] * k[1]):
        scale = div if np.ndim(div) == 0 else k[0] * k[1]
        if scale == k[0] * k[1]:
            return reshape(mean(cols, axis=1), (-1, xs[1]) + outs)
        return reshape(sum_(cols, axis=1), (-1, xs[1]) + outs) / scale
    if floating(dt):     # NOTE: the divisor in x's dtype (float16 came in as float32)
        div = div.astype(dt)
    return reshape(sum_(cols, axis=1), (-1, xs[1]) + outs) / div


def _adaptive_bounds(size, out):
    """torch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _average_matrix(size, out):
    m = np.zeros((out, size), np.float64)
    for i, (a, b) in enumerate(_adaptive_bounds(size, out)):
        m[i, a:b] = 1.0 / (b - a)
    return m


def _output_size(name, xs, output_size, nd=2):
    outs = (output_size,) * nd if np.ndim(output_size) == 0 else tuple(output_size)
    return tuple(xs[-nd + i] if o is None else int(o) for i, o in enumerate(outs))


def _adaptive_ref(np, x, output_size, reduce="mean"):
    ho, wo = _output_size("adaptive", x.shape, output_size)
    rows = []
    for a, b in _adaptive_bounds(x.shape[2], ho):
        rows.append([getattr(np, reduce)(x[:, :, a:b, c:d], axis=(2, 3))
                     for c, d in _adaptive_bounds(x.shape[3], wo)])
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


@composite(samples=(Sample(((2, 3, 4, 4),), {"output_size": 1}),
                    Sample(((1, 2, 5, 7),), {"output_size": (3, None)})),
           ref=_adaptive_ref)
@in_opmath
def adaptive_avg_pool2d(x, output_size):
    """Means over torch's adaptive windows: the (N, C, H, W) input split into output_size
    (an int, a pair, None keeps that size) nearly equal, possibly overlapping regions."""
    xs = _need("adaptive_avg_pool2d", x, 4, "(N, C, H, W)")
    ho, wo = _output_size("adaptive_avg_pool2d", xs, output_size)
    if (ho, wo) == (1, 1):
        return mean(x, axis=(2, 3), keepdims=True)
    dt = np.dtype(getattr(x, "dtype", np.float32))
    y = matmul(_average_matrix(xs[2], ho).astype(dt), x)                       # (N, C, Ho, W)
    return matmul(y, _average_matrix(xs[3], wo).T.astype(dt))


@composite(samples=(Sample(((2, 3, 4, 4),), {"output_size": 2}),
                    Sample(((1, 2, 5, 7),), {"output_size": (3, 4)})),
           ref=lambda np, x, output_size: _adaptive_ref(np, x, output_size, "max"))
def adaptive_max_pool2d(x, output_size, return_indices=False):
    """Maxima over torch's adaptive windows (see adaptive_avg_pool2d)."""
    xs = _need("adaptive_max_pool2d", x, 4, "(N, C, H, W)")
    ho, wo = _output_size("adaptive_max_pool2d", xs, output_size)
    if xs[2] % ho == 0 and xs[3] % wo == 0:
        k = (xs[2] // ho, xs[3] // wo)
        return max_pool2d(x, k, k, return_indices=return_indices)
    # NOTE: windows of unequal sizes: every window's flat positions, each padded to the
    # longest with copies of its first element (they come after the real ones, so the first
    # maximum in row-major order wins, as torch's); the gradient reaches that element only
    pos = _adaptive_positions(xs[2], xs[3], ho, wo)                   # (Ho*Wo, K)
    cells, k = pos.shape
    flat = reshape(x, (-1, xs[1], xs[2] * xs[3]))
    vals = reshape(take(flat, pos.reshape(-1), axis=2), (-1, xs[1], cells, k))
    idx = take(pos.reshape(-1), argmax(vals, axis=-1) + np.arange(cells) * k, axis=0)
    out = reshape(gather(flat, idx, axis=2), (-1, xs[1], ho, wo))
    return (out, reshape(idx, (-1, xs[1], ho, wo))) if return_indices else out


def _adaptive_positions(h, w, ho, wo):
    """(Ho*Wo, K): each adaptive window's flat positions into H*W, padded to the longest."""
    bh, bw = _adaptive_bounds(h, ho), _adaptive_bounds(w, wo)
    lh, lw = max(b - a for a, b in bh), max(b - a for a, b in bw)
    pos = np.empty((ho, wo, lh * lw), np.int64)
    for i, (a, b) in enumerate(bh):
        rows = np.array(list(range(a, b)) + [a] * (lh - (b - a)))
        for j, (c, d) in enumerate(bw):
            cols = np.array(list(range(c, d)) + [c] * (lw - (d - c)))
            pos[i, j] = (rows[:, None] * w + cols[None, :]).reshape(-1)
    return pos.reshape(ho * wo, lh * lw)


def _stack(xs, axis):
    return concat(*[expand_dims(v, axis=axis) for v in xs], axis=axis)


# -- 1-d forms: the 2-d ones over a height of one ---------------------------------------------
def _as_2d(name, x, nd=3):
    _need(name, x, nd, "(N, C, L)")
    return expand_dims(x, axis=2)


def _one(v, first=1):
    """A 1-d size as the 2-d pair over a height of one: (first, v)."""
    return (first, v) if np.ndim(v) == 0 else (first,) + tuple(v)


def _pad1d(padding):
    return padding if isinstance(padding, str) else _one(padding, 0)


@composite(samples=(Sample(((2, 3, 7), (4, 3, 3), (4,))),
                    Sample(((1, 4, 9), (4, 2, 2)), {"stride": 2, "padding": 1, "dilation": 2,
                                                    "groups": 2})),
           ref=lambda np, x, w, b=None, stride=1, padding=0, dilation=1, groups=1: _conv_ref(
               np, x[:, :, None], w[:, :, None], b, _one(stride), _one(padding, 0),
               _one(dilation), groups)[:, :, 0])
@in_opmath
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of (N, C, L) by weight (out, in / groups, k), as torch."""
    if len(_shape(weight)) != 3:
        raise located(f"conv1d: expects weight (O, C, k), got {fmt_shape(_shape(weight))}")
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        if not isinstance(v, str) and np.ndim(v) and len(v) != 1:
            raise located(f"expected {name} to be a single integer value or a list of 1 values "
                          f"to match the convolution dimensions, but got {name}={list(v)}")
    y = conv2d(_as_2d("conv1d", x), expand_dims(weight, axis=2), bias, _one(stride),
               _pad1d(padding), _one(dilation), groups)
    return squeeze(y, axis=2)


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    stride = kernel_size if stride is None or stride == () else stride
    out = max_pool2d(_as_2d("max_pool1d", x), _one(kernel_size), _one(stride), _one(padding, 0),
                     _one(dilation), ceil_mode, return_indices)
    if return_indices:
        return squeeze(out[0], axis=2), squeeze(out[1], axis=2)
    return squeeze(out, axis=2)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    stride = kernel_size if stride is None or stride == () else stride
    return squeeze(avg_pool2d(_as_2d("avg_pool1d", x), _one(kernel_size), _one(stride),
                              _one(padding, 0), ceil_mode, count_include_pad), axis=2)


def adaptive_avg_pool1d(x, output_size):
    return squeeze(adaptive_avg_pool2d(_as_2d("adaptive_avg_pool1d", x), _one(output_size)),
                   axis=2)


def adaptive_max_pool1d(x, output_size, return_indices=False):
    out = adaptive_max_pool2d(_as_2d("adaptive_max_pool1d", x), _one(output_size),
                              return_indices)
    if return_indices:
        return squeeze(out[0], axis=2), squeeze(out[1], axis=2)
    return squeeze(out, axis=2)


def half_adaptive_avg_pool3d(x, out):
    """torch's CPU adaptive_avg_pool3d (and interpolate(mode="area") of a 5-d input) for a
    float16 or bfloat16 input: each window summed element by element in the input's dtype
    (depth, then height, then width; every addition rounded), then divided by its depth,
    height and width in turn, each division rounded. out: the three output sizes."""
    xs = _shape(x)
    wins = [[(math.floor(o * xs[2 + i] / n), math.ceil((o + 1) * xs[2 + i] / n))
             for o in range(n)] for i, n in enumerate(out)]
    lo = [np.array([w[0] for w in ws]) for ws in wins]
    size = [np.array([w[1] - w[0] for w in ws]) for ws in wins]
    acc = None
    # NOTE: one masked step per offset in the window, in lexicographic order, is every
    # window's own order of additions; offset (0, 0, 0) is in every window
    for off in itertools.product(*(range(int(n.max())) for n in size)):
        y = x
        for a in range(3):
            y = take(y, np.minimum(lo[a] + off[a], xs[2 + a] - 1), axis=2 + a)
        inside = (off[0] < size[0])[:, None, None] & (off[1] < size[1])[None, :, None] & \
            (off[2] < size[2])[None, None, :]
        acc = y if acc is None else where(inside, add(acc, y), acc)
    dt = np.dtype(x.dtype)
    for a, n in enumerate(size):
        acc = div(acc, n.reshape((-1,) + (1,) * (2 - a)).astype(dt))
    return acc


@composite(samples=(Sample(((2, 8, 3, 2),), {"upscale_factor": 2}),),
           ref=lambda np, x, upscale_factor: x.reshape(
               x.shape[0], -1, upscale_factor, upscale_factor, *x.shape[2:]).transpose(
               0, 1, 4, 2, 5, 3).reshape(x.shape[0], -1, x.shape[2] * upscale_factor,
                                         x.shape[3] * upscale_factor))
def pixel_shuffle(x, upscale_factor):
    """(N, C * r^2, H, W) -> (N, C, H * r, W * r), as torch.nn.PixelShuffle."""
    xs = _need("pixel_shuffle", x, 4, "(N, C * r^2, H, W)")
    r = int(upscale_factor)
    if xs[1] % (r * r):
        raise located(f"pixel_shuffle: channels {xs[1]} of input {fmt_shape(xs)} are not "
                       f"divisible by upscale_factor^2 = {r * r}")
    c, h, w = xs[1] // (r * r), xs[2], xs[3]
    n = -1 if xs[0] is None else xs[0]     # NOTE: no -1 when known: 0 channels leave it open
    y = transpose(reshape(x, (n, c, r, r, h, w)), axes=(0, 1, 4, 2, 5, 3))
    return copy(reshape(y, (n, c, h * r, w * r)))     # NOTE: a new tensor, as torch's


def pixel_unshuffle(x, downscale_factor):
    """(N, C, H * r, W * r) -> (N, C * r^2, H, W), the inverse of pixel_shuffle."""
    xs = _need("pixel_unshuffle", x, 4, "(N, C, H * r, W * r)")
    r = int(downscale_factor)
    if None not in xs and 0 in xs:
        return copy(x)      # NOTE: torch's pixel_unshuffle returns an empty input's clone
    c, h, w = xs[1], xs[2] // r, xs[3] // r
    n = -1 if xs[0] is None else xs[0]
    y = transpose(reshape(x, (n, c, h, r, w, r)), axes=(0, 1, 3, 5, 2, 4))
    return copy(reshape(y, (n, c * r * r, h, w)))
