"""Loops that NumPy runs slowly, compiled with numba: im2col (`unfold`) and its adjoint
(`fold`).

On the CNN's small images NumPy's version (pad, a sliding-window view, a 6-d transposing copy;
for fold, one strided `+=` per kernel offset) spends 60-280 µs per call in overhead and
4-element inner strides; these loops do the same gather / scatter-add in 1/4 to 1/3 of the
time (measured on the CNN's shapes: 15-90 µs against 60-280 µs). They are
the kernels of the `unfold` and `fold` ops (ops/nn.py), imported on first use so that
importing dualgrad does not import numba. fold adds the contributions to each pixel in the
same order as the NumPy loop over kernel offsets did (i, then j), so results are unchanged.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _unfold(x, out, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo):
    n_, c_, h_, w_ = x.shape
    for n in range(n_):
        for c in range(c_):
            for i in range(kh):
                for j in range(kw):
                    row = (c * kh + i) * kw + j
                    for oh in range(ho):
                        h = oh * sh + i * dh - ph
                        for ow in range(wo):
                            w = ow * sw + j * dw - pw
                            if 0 <= h < h_ and 0 <= w < w_:
                                out[n, row, oh * wo + ow] = x[n, c, h, w]
                            else:
                                out[n, row, oh * wo + ow] = 0


@njit(cache=True, nogil=True)
def _fold(cols, img, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo):
    n_, c_, h_, w_ = img.shape
    for n in range(n_):
        for c in range(c_):
            for i in range(kh):
                for j in range(kw):
                    row = (c * kh + i) * kw + j
                    for oh in range(ho):
                        h = oh * sh + i * dh - ph
                        if h < 0 or h >= h_:
                            continue
                        for ow in range(wo):
                            w = ow * sw + j * dw - pw
                            if 0 <= w < w_:
                                img[n, c, h, w] += cols[n, row, oh * wo + ow]


def unfold(x, kernel, stride, padding, dilation, ho, wo):
    """(N, C, H, W) -> (N, C*kh*kw, Ho*Wo), rows in (c, i, j) order; stride, padding and
    dilation are (height, width) pairs."""
    kh, kw = kernel
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0], x.shape[1] * kh * kw, ho * wo), x.dtype)
    _unfold(x, out, kh, kw, *stride, *padding, *dilation, ho, wo)
    return out


def fold(cols, shape, kernel, stride, padding, dilation, ho, wo):
    """Scatter-add (N, C*kh*kw, Ho*Wo) columns into a zero image of `shape`."""
    kh, kw = kernel
    cols = np.ascontiguousarray(cols).reshape(shape[0], shape[1] * kh * kw, ho * wo)
    img = np.zeros(shape, cols.dtype)
    _fold(cols, img, kh, kw, *stride, *padding, *dilation, ho, wo)
    return img
