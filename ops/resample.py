"""torch.nn.functional.interpolate: the front end's checks in torch's order and words, then
each resized axis as a gather (nearest modes) or a matmul by that axis's interpolation,
averaging (area) or antialiasing matrix, so gradients come from take / matmul and compile()
traces it. uint8 images in bilinear and bicubic go through torch's integer resampler
(interp_uint8.py).
"""
from __future__ import annotations

import math

import numpy as np

from . import interp_uint8
from .conv import _average_matrix, half_adaptive_avg_pool3d
from .composite import _shape
from .elementwise import cast
from .nn import matmul
from .rules import TORCH_SCALAR_NAMES, floating, torch_opmath_dtype
from .shape import take, transpose

def _source_index(out, size, scale, mode, align_corners):
    """torch's source coordinate of each output position along one axis."""
    dst = np.arange(out, dtype=np.float64)
    if mode == "nearest":
        return np.minimum(np.floor(dst * scale).astype(np.int64), size - 1)
    if mode == "nearest-exact":
        return np.minimum(np.floor((dst + 0.5) * scale).astype(np.int64), size - 1)
    if align_corners:
        return dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    return np.maximum((dst + 0.5) * scale - 0.5, 0.0)


def _linear_matrix(out, size, scale, align_corners, dtype=np.float64):
    """Linear interpolation weights along one axis; for a half dtype rounded as torch's CPU
    kernel stores them (lambda in the dtype, then 1 - lambda in the dtype)."""
    src = _source_index(out, size, scale, "linear", align_corners)
    lo = np.minimum(np.floor(src).astype(np.int64), size - 1)
    hi = np.minimum(lo + 1, size - 1)
    lam = (src - lo).astype(dtype).astype(np.float64)
    m = np.zeros((out, size))
    np.add.at(m, (np.arange(out), lo), (1.0 - lam).astype(dtype).astype(np.float64))
    np.add.at(m, (np.arange(out), hi), lam)
    return m


def _cubic_matrix(out, size, scale, align_corners, dtype=np.float64):
    """torch's bicubic weights along one axis: the cubic convolution kernel (A = -0.75) at the
    four neighbours of each source coordinate (not clamped at 0, as torch), their indices
    clamped to the edge."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        src = (dst + 0.5) * scale - 0.5
    x0 = np.floor(src)
    t = src - x0
    a = -0.75
    near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1               # noqa: E731 - |d| <= 1
    far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a         # noqa: E731 - 1 < |d| < 2
    m = np.zeros((out, size))
    for k, w in zip((-1, 0, 1, 2), (far(t + 1), near(t), near(1 - t), far(2 - t))):
        idx = np.clip(x0.astype(np.int64) + k, 0, size - 1)
        np.add.at(m, (np.arange(out), idx), np.asarray(w).astype(dtype).astype(np.float64))
    return m



_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area",
          "nearest-exact")
# the spatial dims each mode takes (None: any of 1, 2, 3)
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_AXES = {1: "W", 2: "HW", 3: "DHW"}


def _aa_matrix(out, size, scale, taps):
    """The antialiasing weights along one axis as a matrix (out, size)."""
    first, w = interp_uint8.aa_weights(size, out, scale, taps)
    m = np.zeros((out, size))
    for i in range(out):
        n = min(w.shape[1], size - first[i])
        m[i, first[i]:first[i] + n] = w[i, :n]
    return m


def _type_name(dt):
    return TORCH_SCALAR_NAMES.get(dt.name, dt.name)


def _sizes(xs, nd, size, scale_factor):
    """torch's processing of size and scale_factor: (output sizes or None, scales or None)."""
    spatial = list(xs[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {spatial} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    f"output size in (o1, o2, ...,oK) format.")
            if not all(isinstance(s, (int, np.integer)) for s in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, "
                                f"int] or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in size]}")
            return [int(s) for s in size], None
        if not isinstance(size, (int, np.integer)):
            raise TypeError(f"interpolate: size must be an int or a tuple of ints, got "
                            f"{type(size).__name__}")
        return [int(size)] * nd, None
    if scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nd:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {spatial} and scale_factor of "
                    f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, "
                    f"...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            return None, [float(f) for f in scale_factor]
        return None, [float(scale_factor)] * nd
    raise ValueError("either size or scale_factor should be defined")


def _check_mode(mode, nd, antialias, dt):
    """torch's refusals of a mode for the input's rank, antialias and dtype."""
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and nd == 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    want = _MODE_DIMS.get(mode)
    if mode not in _MODES or nd not in (1, 2, 3) or mode in ("lanczos", "bicubic") and nd != 2:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd + 2}D) for the "
            f"modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    if want is not None and want != nd:
        raise NotImplementedError(f"Got {nd + 2}D input, but {mode} mode needs {want + 2}D "
                                  f"input")
    if mode == "lanczos":
        raise NotImplementedError("interpolate(mode='lanczos') is not supported by dualgrad")
    if antialias and not floating(dt) and dt != np.uint8 or antialias and dt.itemsize == 2:
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for "
                                  f"'{_type_name(dt)}'")
    if floating(dt) or dt == np.uint8 and mode not in ("linear", "trilinear", "area"):
        return
    kernel = {"area": "adaptive_avg_pool2d" if nd < 3 else "adaptive_avg_pool3d_cpu",
              "linear": "compute_indices_weights_linear",
              "trilinear": "compute_indices_weights_linear",
              "bicubic": "compute_indices_weights_cubic",
              "bilinear": "upsample_bilinear2d_channels_last"}.get(
        mode, "upsample_nearest2d_channels_last" if nd == 2 else
        "compute_indices_weights_nearest")
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")


def _check_sizes(xs, nd, outs, mode):
    """torch's checks of the input's and the output's sizes."""
    if mode == "area":
        for d in range(2, len(xs)):
            if xs[d] == 0:
                raise RuntimeError(
                    f"adaptive_avg_pool{max(nd, 2)}d(): Expected input to have non-zero size "
                    f"for non-batch dimensions, but input has sizes {list(xs)} with dimension "
                    f"{d} being empty")
        return
    if min(xs[2:]) <= 0 or min(outs) <= 0:
        names = _AXES[nd]
        inp = ", ".join(f"{a}: {s}" for a, s in zip(names, xs[2:]))
        out = ", ".join(f"{a}: {s}" for a, s in zip(names, outs))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({inp}) output ({out})")
    if xs[1] == 0:
        raise RuntimeError(f"Non-empty {nd + 2}D data tensor expected but got a tensor with "
                           f"sizes {list(xs)}")


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate: modes nearest, nearest-exact and area (1 to 3
    spatial dims), linear (3-d input), bilinear and bicubic (4-d, with antialias),
    trilinear (5-d). Integer inputs: uint8 in the nearest modes and, in torch's integer
    arithmetic, bilinear and bicubic (ops/interp_uint8.py)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    xs = _shape(x)
    nd = len(xs) - 2
    outs, factors = _sizes(xs, nd, size, scale_factor)
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and outs is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        outs, factors = [int(s * f) for s, f in zip(xs[2:], factors)], None
    dt = np.dtype(getattr(x, "dtype", np.float32))
    _check_mode(mode, nd, antialias, dt)
    sizes = xs[2:]
    if outs is None:    # NOTE: torch's output size from a scale factor, in double
        outs = [int(math.floor(s * f)) for s, f in zip(sizes, factors)]
    _check_sizes(xs, nd, outs, mode)
    if mode == "area" and 0 in outs + [xs[0], xs[1]]:
        return _empty(x, xs, outs)      # NOTE: torch's adaptive pool of an empty result
    # NOTE: the coordinate scale: 1 / scale_factor when given (and positive), else in / out
    scales = [1.0 / f if factors is not None and f > 0 else s / o
              for s, o, f in zip(sizes, outs, factors or [None] * nd)]
    if align_corners:
        scales = [(s - 1) / (o - 1) if o > 1 else 0.0 for s, o in zip(sizes, outs)]
    if dt == np.uint8 and mode in ("bilinear", "bicubic"):
        return _uint8(x, xs, sizes, outs, scales, bool(align_corners), mode, antialias)
    return _resample(x, xs, sizes, outs, scales, mode, bool(align_corners), antialias, dt)


def _empty(x, xs, outs):
    flat = take(x.reshape(-1) if hasattr(x, "reshape") else np.reshape(x, -1),
                np.zeros(0, np.int64), axis=0)
    return flat.reshape((xs[0], xs[1]) + tuple(outs))


def _uint8(x, xs, sizes, outs, scales, align_corners, mode, antialias):
    taps = 4 if mode == "bicubic" else 2
    for axis in reversed(range(2, len(xs))):
        size_i, out, scale = sizes[axis - 2], outs[axis - 2], scales[axis - 2]
        if out != size_i:
            x = interp_uint8.resample(x, axis, size_i, out, scale, align_corners, taps,
                                      antialias)
    return x


def _axis_matrix(mode, size, out, scale, align_corners, antialias, dt):
    if mode == "area":
        return _average_matrix(size, out)
    taps = 4 if mode == "bicubic" else 2
    if antialias:
        return _aa_matrix(out, size, scale, taps)
    if mode == "bicubic":
        return _cubic_matrix(out, size, scale, align_corners, dt)
    # NOTE: linear's and trilinear's weights rounded to a half dtype first, bilinear's not
    return _linear_matrix(out, size, scale, align_corners,
                          dt if mode != "bilinear" else np.float64)


def _resample(x, xs, sizes, outs, scales, mode, align_corners, antialias, dt):
    if mode == "area" and len(sizes) == 3 and torch_opmath_dtype(dt) != dt:
        return half_adaptive_avg_pool3d(x, outs)
    # NOTE: half inputs: summed in float32 over every axis, the result rounded once, as
    # torch's CPU kernels (nearest's gradient too: its repeats summed in float32)
    wide = torch_opmath_dtype(dt) if floating(dt) else dt
    x = x if wide == dt else cast(x, wide)
    for i, (size_i, out, scale) in enumerate(zip(sizes, outs, scales)):
        axis = 2 + i
        if mode.startswith("nearest"):
            x = take(x, _source_index(out, size_i, scale, mode, False), axis=axis)
            continue
        m = _axis_matrix(mode, size_i, out, scale, align_corners, antialias, dt).astype(wide)
        x = matmul(x, m.T) if axis == len(xs) - 1 else \
            transpose(matmul(transpose(x, axes=_swap(len(xs), axis)), m.T),
                      axes=_swap(len(xs), axis))
    return x if wide == dt else cast(x, dt)


def _swap(nd, axis):
    axes = list(range(nd))
    axes[axis], axes[-1] = axes[-1], axes[axis]
    return tuple(axes)


