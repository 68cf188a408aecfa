"""Sampling an input at the points of a grid (torch's grid_sample): a composition of `take`
(the corners' values), `floor` / `round` (their indices) and elementwise weights, so the
input's gradient is take's scatter-add and the grid's comes through the weights; nearest's
grid gradient is zero, as torch's (the rounding's gradient is zero).

Coordinates follow torch's grid_sampler: grid[..., 0] is x (the last spatial axis), [..., 1]
y, [..., 2] z, each in [-1, 1]; align_corners=True puts -1 and 1 at the corner pixels'
centres, False at their outer edges. Padding acts on the source coordinate before the
interpolation (border: clipped; reflection: reflected off the edges, then clipped) and, for
zeros, corners outside the input read 0.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .core import Sample
from .composite import _shape, composite, in_opmath
from .elementwise import abs as abs_, add, cast, floor, floormod, mul, round as round_, where
from .rules import TORCH_SCALAR_NAMES, floating
from .shape import reshape, slice_, take, transpose

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def _torch_sizes(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _check(x, grid, mode, padding_mode):
    """torch's checks, in its order and with its words (nn.functional, then aten's
    grid_sampler)."""
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    xs, gs = _shape(x), _shape(grid)
    sizes = f"input with sizes {_torch_sizes(xs)} and grid with sizes {_torch_sizes(gs)}"
    if xs[0] != gs[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got {sizes}")
    if gs[-1] != len(xs) - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {len(xs) - 2} in last "
                           f"dimension, but got grid with sizes {_torch_sizes(gs)}")
    for d in range(2, len(xs)):
        if xs[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {_torch_sizes(xs)} with "
                               f"dimension {d} being empty")
    nd = 4 if len(xs) == 4 else 5
    if len(xs) != nd or len(gs) != nd:
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number of "
                           f"dimensions, but got {sizes}")
    if nd == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    dx, dg = np.dtype(x.dtype), np.dtype(grid.dtype)
    if not floating(dx):
        kernel = "grid_sampler_2d_cpu_kernel_impl" if nd == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{TORCH_SCALAR_NAMES.get(dx.name, dx.name)}'")
    if dx != dg:
        raise RuntimeError(f"expected scalar type {TORCH_SCALAR_NAMES.get(dx.name, dx.name)} "
                           f"but found {TORCH_SCALAR_NAMES.get(dg.name, dg.name)}")
    return xs, gs


def _unnormalize(g, size, align_corners):
    """[-1, 1] to pixel coordinates along an axis of `size` pixels."""
    if align_corners:
        return (g + 1.0) * ((size - 1) / 2.0)
    return ((g + 1.0) * size - 1.0) / 2.0


def _clip(c, size):
    """c clipped to [0, size - 1]; the bounds and beyond (and NaN, read as 0 as torch's
    vectorised kernel reads it) carry no gradient, as torch's clip_coordinates_set_grad."""
    hi = float(size - 1)
    return where(c > 0.0, where(c < hi, c, hi), 0.0)


def _reflect(c, size, align_corners):
    """c reflected off the edges (pixel centres with align_corners, outer edges without)
    until it lies between them, as torch's reflect_coordinates."""
    twice_low, twice_high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
    if twice_low == twice_high:
        return c * 0.0
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    d = abs_(c - low)
    extra = floormod(d, span)
    even = floormod(floor(d / span), 2.0) == 0.0
    return where(even, extra + low, (span - extra) + low)


def _pad(c, size, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip(c, size)
    if padding_mode == "reflection":
        return _clip(_reflect(c, size, align_corners), size)
    return c


class _Table:
    """The input as rows (N * prod(spatial), C), read at integer coordinates per axis."""

    def __init__(self, x, xs):
        nd = len(xs)
        self.sizes = xs[2:]
        self.rows = reshape(transpose(x, axes=(0,) + tuple(range(2, nd)) + (1,)), (-1, xs[1]))
        self.strides = [math.prod(self.sizes[a + 1:]) for a in range(len(self.sizes))]
        self.base = np.arange(xs[0], dtype=np.int64) * math.prod(self.sizes)

    def read(self, idx):
        """Values (N, *out, C) at float integer coordinates idx (one per spatial axis, each
        (N, *out)): 0 where any coordinate falls outside the input."""
        inside, flat = None, self.base.reshape((-1,) + (1,) * (len(idx[0].shape) - 1))
        for i, size, stride in zip(idx, self.sizes, self.strides):
            ok = (i >= 0.0) & (i <= float(size - 1))
            inside = ok if inside is None else inside & ok
            flat = flat + cast(where(ok, i, 0.0), np.int64) * stride
        vals = take(self.rows, where(inside, flat, 0), axis=0)
        return where(reshape(inside, tuple(inside.shape) + (1,)), vals, 0.0)


def _coords(grid, gs, sizes, align_corners):
    """Pixel coordinates per spatial axis (depth, height, width order), each (N, *out)."""
    nd = len(gs)
    out = []
    for a, size in enumerate(sizes):
        k = len(sizes) - 1 - a      # NOTE: grid's last entry is x, the last spatial axis
        g = reshape(slice_(grid, index=(Ellipsis, slice(k, k + 1))), tuple(gs[:nd - 1]))
        out.append(_unnormalize(g, size, align_corners))
    return out


def _cubic_weights(t):
    """The cubic convolution kernel (A = -0.75) at the four neighbours of t in [0, 1)."""
    a = -0.75
    near = lambda d: ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0           # noqa: E731
    far = lambda d: ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a      # noqa: E731
    return far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)


def _sum(terms):
    out = terms[0]
    for t in terms[1:]:
        out = add(out, t)
    return out


def _weighted(vals, w):
    return mul(vals, reshape(w, tuple(w.shape) + (1,)))


def _bilinear(table, coords, sizes, padding_mode, align_corners):
    cs = [_pad(c, s, padding_mode, align_corners) for c, s in zip(coords, sizes)]
    lo = [floor(c) for c in cs]
    # NOTE: per axis the weight of the lower corner is (lo + 1) - c, of the upper c - lo;
    # products taken x first, as torch's
    pairs = [((lo_ + 1.0) - c, c - lo_) for c, lo_ in zip(cs, lo)]
    terms = []
    for corner in itertools.product((0, 1), repeat=len(cs)):
        idx = [lo_ + float(k) for lo_, k in zip(lo, corner)]
        w = _sum_prod([pairs[a][corner[a]] for a in reversed(range(len(cs)))])
        terms.append(_weighted(table.read(idx), w))
    return _sum(terms)


def _sum_prod(factors):
    out = factors[0]
    for f in factors[1:]:
        out = out * f
    return out


def _nearest(table, coords, sizes, padding_mode, align_corners):
    # NOTE: round is half to even, as torch's nearbyint. The weight is 1 with a zero gradient
    # for the grid, which torch gives nearest (zeros, not None)
    one = where(np.zeros((1,) * len(coords[0].shape), bool), coords[0], 1.0)
    return _weighted(table.read([round_(_pad(c, s, padding_mode, align_corners))
                                 for c, s in zip(coords, sizes)]), one)


def _bicubic(table, coords, sizes, padding_mode, align_corners):
    (cy, cx), (h, w) = coords, sizes
    y0, x0 = floor(cy), floor(cx)
    wy, wx = _cubic_weights(cy - y0), _cubic_weights(cx - x0)
    # NOTE: the padding acts on each neighbour's (integer) coordinate, as torch's
    # get_value_bounded: the grid's gradient comes through the weights alone
    xs = [_pad(x0 + float(j - 1), w, padding_mode, align_corners) for j in range(4)]
    rows = []
    for i in range(4):
        yy = _pad(y0 + float(i - 1), h, padding_mode, align_corners)
        rows.append(_sum([_weighted(table.read([yy, xs[j]]), wx[j]) for j in range(4)]))
    return _sum([_weighted(rows[i], wy[i]) for i in range(4)])


_SAMPLERS = {"bilinear": _bilinear, "nearest": _nearest, "bicubic": _bicubic}


def _grid_ref(np, x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Bilinear zeros-padded 2-d sampling: each point's four neighbours, weighted, those outside
    the image reading zero (array expressions only, so jax.numpy runs it too)."""
    n, c, h, w = x.shape
    px = _unnormalize(grid[..., 0], w, align_corners)
    py = _unnormalize(grid[..., 1], h, align_corners)
    x0, y0 = np.floor(px), np.floor(py)
    batch = np.arange(n)[:, None, None]
    out = 0.0
    for yy, xx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
        inside = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        weight = np.where(inside, (1 - np.abs(px - xx)) * (1 - np.abs(py - yy)), 0.0)
        rows = np.clip(yy, 0, h - 1).astype(np.int64)
        cols = np.clip(xx, 0, w - 1).astype(np.int64)
        out = out + x[batch, :, rows, cols] * weight[..., None]     # (n, Ho, Wo, c)
    return np.moveaxis(out, -1, 1).astype(x.dtype)


@composite(samples=(Sample(((2, 3, 4, 5), (2, 3, 4, 2))),
                    Sample(((1, 2, 3, 3), (1, 2, 2, 2)), {"align_corners": True})),
           ref=_grid_ref)
@in_opmath
def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """torch.nn.functional.grid_sample (align_corners given: the front end warns on None).

    >>> import numpy as np
    >>> from dualgrad import ops
    >>> x = np.arange(4.0).reshape(1, 1, 2, 2)
    >>> ops.grid_sample(x, np.zeros((1, 1, 1, 2)), align_corners=True).tolist()
    [[[[1.5]]]]
    """
    xs, gs = _check(x, grid, mode, padding_mode)
    if 0 in xs or 0 in gs:     # NOTE: an empty batch, channel or output: an empty result
        return _empty(x, xs, gs)
    table = _Table(x, xs)
    out = _SAMPLERS[mode](table, _coords(grid, gs, xs[2:], align_corners), xs[2:],
                          padding_mode, align_corners)
    nd = len(xs)
    return transpose(out, axes=(0, nd - 1) + tuple(range(1, nd - 1)))     # (N, C, *out)


def _empty(x, xs, gs):
    """(N, C, *out) with a zero among them: x's entries taken at no position, reshaped."""
    none = take(reshape(x, (-1,)), np.zeros(0, np.int64), axis=0)
    return reshape(none, (xs[0], xs[1]) + tuple(gs[1:-1]))
