"""Discrete Fourier transforms: one primitive over NumPy's pocketfft, in torch's three kinds
(aten's `_fft_c2c`, `_fft_r2c`, `_fft_c2r`): complex to complex, real to its one-sided
spectrum (`rfftn`; `ihfftn` conjugated) and a one-sided spectrum to real (`irfftn`; `hfftn`
of the conjugate). eager/fft.py gives torch.fft's names on it.

The result keeps its input's precision (float32 -> complex64, as torch's and NumPy 2's);
integers and bool compute in float32 (eager casts them to the default float first). Gradients are not provided:
a transform whose input requires grad raises at backward (complex results already refuse
at the call: dualgrad has no complex autograd).

>>> import numpy as np
>>> from dualgrad import ops
>>> ops.fft(np.ones(4, np.float32), kind="r2c", s=None, axes=(0,), norm="backward",
...         inverse=False)
array([4.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)
"""
from __future__ import annotations

import numpy as np

from .core import Sample, ShapeError, Spec, register

NORMS = ("backward", "forward", "ortho")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_C2R_NAMES = {True: "irfft", False: "hfft"}
_HALF_NAMES = {"float16": "Half", "bfloat16": "BFloat16"}


def _complex_of(dt):
    return np.dtype(np.complex64 if dt in (np.float32, np.complex64) else np.complex128)


def _real_of(dt):
    return np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64)


def _sizes(shape, kind, s, axes, inverse):
    """The transform's sizes along `axes` (None: unknown) and the result's shape."""
    out = list(shape)
    sizes = []
    for i, a in enumerate(axes):
        n = s[i] if s is not None and s[i] != -1 else None
        if n is None:
            m = shape[a]
            last = i == len(axes) - 1
            n = m if not (kind == "c2r" and last) else None if m is None else 2 * (m - 1)
        if n is not None and n < 1:
            raise ShapeError(f"fft: Invalid number of data points ({n}) specified")
        sizes.append(n)
        out[a] = n
    if kind == "r2c" and sizes:
        out[axes[-1]] = None if sizes[-1] is None else sizes[-1] // 2 + 1
    return sizes, tuple(out)


def _fft_infer(x, kind, s, axes, norm, inverse):
    if x.dtype.kind in "biu":   # NOTE: eager/fft.py casts to the default float first
        x = Spec(x.shape, np.dtype(np.float32))
    name = x.dtype.name
    if name in _HALF_NAMES:
        raise ShapeError(f"fft: Unsupported dtype {_HALF_NAMES[name]}")
    if kind == "r2c" and x.dtype.kind == "c":
        what = "rfft" if not inverse else "ihfft"
        raise ShapeError(f"fft: {what} expects a real input tensor, but got "
                         f"{'ComplexFloat' if x.dtype == np.complex64 else 'ComplexDouble'}")
    if norm not in NORMS:
        raise ShapeError(f"fft: Invalid normalization mode: {norm}")
    if x.shape is None:
        return Spec(None, _real_of(x.dtype) if kind == "c2r" else _complex_of(x.dtype))
    for a in axes:
        if not -len(x.shape) <= a < max(len(x.shape), 1):
            raise ShapeError(f"fft: dim {a} is out of range for a {len(x.shape)}-d input")
    _, shape = _sizes(x.shape, kind, s, tuple(a % max(len(x.shape), 1) for a in axes), inverse)
    return Spec(shape, _real_of(x.dtype) if kind == "c2r" else _complex_of(x.dtype))


def _fft_kernel(x, kind, s, axes, norm, inverse):
    x = np.asarray(x)
    if x.dtype.kind in "biu":
        x = x.astype(np.float32)
    spec = _fft_infer(Spec(x.shape, x.dtype), kind, s, axes, norm, inverse)
    axes = tuple(a % max(x.ndim, 1) for a in axes)
    sizes, _ = _sizes(x.shape, kind, s, axes, inverse)
    if not axes:
        return x.astype(spec.dtype)
    if kind == "c2c":
        out = (np.fft.ifftn if inverse else np.fft.fftn)(x, sizes, axes, norm)
    elif kind == "r2c":   # NOTE: ihfftn is the conjugate of rfftn with the other norm
        out = np.fft.rfftn(x, sizes, axes, _SWAP[norm] if inverse else norm)
        out = np.conj(out) if inverse else out
    else:                 # NOTE: hfftn is irfftn of the conjugate with the other norm
        out = np.fft.irfftn(x if inverse else np.conj(x), sizes, axes,
                            norm if inverse else _SWAP[norm])
    return np.asarray(out).astype(spec.dtype, copy=False)


def _fft_vjp(g, x, **attrs):
    raise NotImplementedError("fft: dualgrad has no gradients for the Fourier transforms "
                              "(torch.fft's backward is not implemented)")


def _ref(np, x, kind, s, axes, norm, inverse):
    """The transform through the NumPy API's own n-dimensional functions."""
    if kind == "c2c":
        return (np.fft.ifftn if inverse else np.fft.fftn)(x, s, axes, norm)
    if kind == "r2c":
        return np.conj(np.fft.rfftn(x, s, axes, _SWAP[norm])) if inverse else \
            np.fft.rfftn(x, s, axes, norm)
    return np.fft.irfftn(x, s, axes, norm) if inverse else \
        np.fft.irfftn(np.conj(x), s, axes, _SWAP[norm])


_SAMPLE_ATTRS = [
    dict(kind="c2c", s=None, axes=(-1,), norm="backward", inverse=False),
    dict(kind="c2c", s=(3, 6), axes=(0, 1), norm="ortho", inverse=True),
    dict(kind="r2c", s=None, axes=(1,), norm="forward", inverse=False),
    dict(kind="r2c", s=(4,), axes=(0,), norm="backward", inverse=True),
    dict(kind="c2r", s=None, axes=(0, 1), norm="backward", inverse=True),
    dict(kind="c2r", s=(6,), axes=(-1,), norm="ortho", inverse=False),
]
FFT = register(
    "fft", _fft_infer, _fft_kernel, _fft_vjp, category="other", complex=True,
    samples=tuple(Sample(((4, 5),), attrs=a, grad=False) for a in _SAMPLE_ATTRS) + (
        Sample(((4, 5),), attrs=dict(_SAMPLE_ATTRS[0], norm="none"),
               match="Invalid normalization mode"),
        Sample(((4, 5),), attrs=dict(_SAMPLE_ATTRS[0], s=(0,)),
               match="Invalid number of data points")),
    ref=lambda np, x, kind, s, axes, norm, inverse: _ref(np, x, kind, s, axes, norm, inverse))

fft = FFT.fn
