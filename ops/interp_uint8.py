"""torch.nn.functional.interpolate's bilinear and bicubic modes on uint8 images, in torch's
integer arithmetic (the Pillow-style resampler of its CPU kernel, with and without antialias).

Per resized axis (the last first, then the one before; an axis whose size does not change is
left alone), each output pixel is a weighted sum of at most 2 (bilinear) or 4 (bicubic)
neighbours. The weights are computed in float64 (Keys' cubic with a = -0.75, a source
index outside the image folding its weight onto the edge pixel), scaled to int16 by 2^p,
p the largest precision that keeps every weight below 2^15, and rounded half away from zero;
the sum is taken in integers, plus 2^(p - 1), shifted right by p and clamped to 0..255.
The intermediate image between the two axes is uint8 too. The result is torch's bit for bit
(tests/eager/test_opdb.py runs op_db's uint8 samples).
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import cast, floordiv
from .composite import clamp
from .shape import take


def _linear(x):
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def _cubic(x, a=-0.75):
    x = abs(x)
    if x < 1.0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2.0:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def _source(i, scale, align_corners, cubic):
    """torch's area_pixel_compute_source_index."""
    if align_corners:
        return scale * i
    real = scale * (i + 0.5) - 0.5
    return 0.0 if not cubic and real < 0 else real


def _weights(size, out, scale, align_corners, taps):
    """(first source index per output pixel, float64 weights (out, taps))."""
    filt = _cubic if taps == 4 else _linear
    support = taps // 2
    first, weights = np.zeros(out, np.int64), np.zeros((out, taps))
    for i in range(out):
        real = _source(i, scale, align_corners, taps == 4)
        idx = min(int(math.floor(real)), size - 1)
        lam = min(max(real - idx, 0.0), 1.0)
        lo = idx - support + 1
        first[i] = max(lo, 0)
        n = min(max(min(idx + support + 1, size) - first[i], 0), taps)
        slot = 0
        for j in range(taps):
            if lo + j <= 0:
                slot = 0
            elif lo + j >= size - 1:
                slot = n - 1
            weights[i, slot] += filt(float(j + 1 - support) - lam)
            slot += 1
    return first, weights


def aa_weights(size, out, scale, taps):
    """torch's antialiasing weights (its _compute_weights_aa): (first source index per output
    pixel, weights (out, K)). The filter (triangle for bilinear, Keys' cubic with a = -0.5 for
    bicubic) is widened by the scale when downsampling, taken over the source pixels within
    its support around the centre scale * (i + 0.5) and normalised to sum to one."""
    support = taps * 0.5 * scale if scale >= 1.0 else taps * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    width = int(math.ceil(support)) * 2 + 1
    first, weights = np.zeros(out, np.int64), np.zeros((out, width))
    for i in range(out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        n = min(int(center + support + 0.5), size) - lo
        w = [(_linear if taps == 2 else _keys)((j + lo - center + 0.5) * invscale)
             for j in range(n)]
        total = sum(w)
        first[i], weights[i, :n] = lo, [v / total for v in w] if total != 0.0 else w
    return first, weights


def _keys(x):
    return _cubic(x, -0.5)


def _int16(weights):
    """The weights as integers of precision p (weights * 2^p rounded half away from zero)."""
    top = weights.max(initial=0.0)
    p = 0
    while p < 22 and int(0.5 + top * (1 << (p + 1))) < (1 << 15):
        p += 1
    scaled = weights * (1 << p)
    return np.where(scaled < 0, np.ceil(scaled - 0.5), np.floor(scaled + 0.5)).astype(np.int64), p


def resample(x, axis, size, out, scale, align_corners, taps, antialias=False):
    """x (uint8) resized along `axis` from `size` to `out` pixels."""
    first, w = aa_weights(size, out, scale, taps) if antialias else \
        _weights(size, out, scale, align_corners, taps)
    w, p = _int16(w)
    wide = cast(x, np.int64)
    shape = [1] * len(x.shape)
    shape[axis] = out
    total = None
    for j in range(w.shape[1]):
        term = take(wide, np.minimum(first + j, size - 1), axis=axis) * w[:, j].reshape(shape)
        total = term if total is None else total + term
    total = floordiv(total + (1 << (p - 1)), 1 << p)   # NOTE: an arithmetic shift right
    return cast(clamp(total, 0, 255), np.uint8)
