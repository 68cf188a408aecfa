"""Reader rule for ONNX's Resize (version 11 on) and Upsample: separable resampling.

Each resized axis maps every output position to a source coordinate (the coordinate
transformation mode), then picks a source element (nearest: `take` with the source
indices) or mixes neighbours (linear, cubic: a matmul with the weights, one small matrix per
axis). The indices and weights depend only on the sizes, known while reading; the data goes
through the registry's take and matmul. Antialiasing, tf_crop_and_resize and
keep_aspect_ratio_policy other than stretch are refused by name.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .rules_math import arg


def _source(mode, out_len, in_len, scale):
    """Source coordinates of output positions 0..out_len-1 along one axis (the resized
    length in the formulas is scale * in_len, before rounding, as onnx's reference has it)."""
    x = np.arange(out_len, dtype=np.float64)
    length = scale * in_len
    if mode == "asymmetric":
        return x / scale
    if mode == "align_corners":
        return x * (in_len - 1) / (length - 1) if length != 1 else np.zeros(out_len)
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if length != 1 else np.zeros(out_len)
    if mode == "half_pixel_symmetric":
        adjust = out_len / (scale * in_len)
        return in_len / 2 * (1 - adjust) + (x + 0.5) / scale - 0.5
    return (x + 0.5) / scale - 0.5                  # half_pixel


def _nearest(coord, in_len, how):
    frac = coord - np.floor(coord)
    if how == "floor":
        i = np.floor(coord)
    elif how == "ceil":
        i = np.ceil(coord)
    elif how == "round_prefer_ceil":
        i = np.where(frac == 0.5, np.ceil(coord), np.round(coord))
    else:                                           # round_prefer_floor
        i = np.where(frac == 0.5, np.floor(coord), np.round(coord))
    return np.clip(i, 0, in_len - 1).astype(np.int64)


def _cubic_taps(t, a):
    return [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]


def _weights(mode, coord, in_len, at):
    """The (out, in) matrix mixing source elements for linear or cubic resampling."""
    w = np.zeros((len(coord), in_len))
    base = np.floor(coord).astype(np.int64)
    t = coord - base
    if mode == "linear":
        coord = np.clip(coord, 0, in_len - 1)
        base = np.floor(coord).astype(np.int64)
        t = coord - base
        taps, offsets = [1 - t, t], [0, 1]
    else:
        taps, offsets = _cubic_taps(t, at.get("cubic_coeff_a", -0.75)), [-1, 0, 1, 2]
    rows = np.arange(len(coord))
    for tap, off in zip(taps, offsets):
        idx = base + off
        inside = (idx >= 0) & (idx < in_len)
        if mode == "cubic" and at.get("exclude_outside", 0):
            tap = np.where(inside, tap, 0.0)
        np.add.at(w, (rows, np.clip(idx, 0, in_len - 1)), tap)
    if mode == "cubic" and at.get("exclude_outside", 0):
        w /= w.sum(axis=1, keepdims=True)
    return w


def _resize_axis(r, node, x, axis, out_len, scale, at):
    in_len = x.shape[axis]
    mode = at.get("mode", "nearest")
    coord = _source(at.get("coordinate_transformation_mode", "half_pixel"), out_len, in_len,
                    scale)
    if mode == "nearest":
        idx = _nearest(coord, in_len, at.get("nearest_mode", "round_prefer_floor"))
        return ops.take(x, idx, axis=axis)
    if mode not in ("linear", "cubic"):
        r.fail(node, f"mode={mode!r}")
    r.check_size([out_len, in_len], np.float64)
    w = _weights(mode, coord, in_len, at).astype(np.dtype(x.dtype))
    nd = len(x.shape)
    perm = [i for i in range(nd) if i != axis] + [axis]
    back = tuple(int(i) for i in np.argsort(perm))
    y = ops.matmul(ops.transpose(x, axes=tuple(perm)), np.ascontiguousarray(w.T))
    return ops.transpose(y, axes=back)


def _refusals(r, node, at, x):
    if at.get("antialias", 0):
        r.fail(node, "antialias=1 is not supported")
    if at.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        r.fail(node, "coordinate_transformation_mode='tf_crop_and_resize' is not supported")
    if at.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        r.fail(node, f"keep_aspect_ratio_policy={at['keep_aspect_ratio_policy']!r}")
    if None in x.shape or np.dtype(x.dtype).kind != "f" and at.get("mode", "nearest") != \
            "nearest":
        r.fail(node, f"resizing {x.dtype.name} of shape {x.shape} (known dims, floats for "
                     f"linear and cubic)")


def _plan(r, node, x, scales, sizes, axes):
    """[(axis, out_len, scale)] for every axis that changes."""
    nd = len(x.shape)
    axes = list(range(nd)) if axes is None else [a % nd for a in axes]
    out = []
    for k, a in enumerate(axes):
        d = x.shape[a]
        if sizes is not None:
            n = int(sizes[k])
            s = n / d
        else:
            s = float(scales[k])
            n = int(np.floor(d * s))
        if n != d or s != 1.0:
            out.append((a, n, s))
    r.check_size([n for _, n, _ in out] or [0], x.dtype)
    return out


def _resize_of(r, node, x, scales, sizes, at):
    x = arg(r, x)
    _refusals(r, node, at, x)
    for axis, n, s in _plan(r, node, x, scales, sizes, at.get("axes")):
        x = _resize_axis(r, node, x, axis, n, s, at)
    return [x]


def _given(r, node, v, what):
    if v is None:
        return None
    a = r.known(v, what, node).reshape(-1)
    return a if a.size else None


def _resize(r, node, ins, at):
    scales = _given(r, node, ins[2] if len(ins) > 2 else None, "scales")
    sizes = _given(r, node, ins[3] if len(ins) > 3 else None, "sizes")
    if (scales is None) == (sizes is None):
        r.fail(node, "exactly one of scales and sizes must be given")
    return _resize_of(r, node, ins[0], scales, sizes, at)


def _upsample(r, node, ins, at):
    """Upsample 9 / Resize 10: scales as an input, asymmetric coordinates, nearest rounds
    down (floor), linear."""
    scales = _given(r, node, ins[1], "scales")
    at = dict(at, coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return _resize_of(r, node, ins[0], scales, None, at)


def _upsample_7(r, node, ins, at):
    at = dict(at, coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return _resize_of(r, node, ins[0], np.asarray(at["scales"]), None, at)


TABLE = {"Resize": {10: _upsample, 11: _resize}, "Upsample": {7: _upsample_7, 9: _upsample}}
