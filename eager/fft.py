"""torch.fft: the transforms `fft ifft rfft irfft hfft ihfft` (one dim), `fft2 ifft2 rfft2
irfft2 hfft2 ihfft2` and `fftn ifftn rfftn irfftn hfftn ihfftn`, with torch's `n=`, `s=`,
`dim=` and `norm=` ("backward", "forward", "ortho"), over the registry's one `fft` primitive
(NumPy's pocketfft); `fftfreq rfftfreq`; `fftshift ifftshift` (rolls, so any dtype and
differentiable). No gradients through the transforms (dualgrad has no complex autograd):
an input that requires grad raises.

>>> from dualgrad import eager as torch
>>> torch.fft.fftshift(torch.arange(5)).tolist()
[3, 4, 0, 1, 2]
>>> torch.fft.rfft(torch.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
[(10+0j), (-2+2j), (-2+0j)]
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ComplexError

from .core import DEFAULT_FLOAT, _GRAD
from .functions import _t

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

# name -> (kind, inverse): aten's three transforms
_KINDS = {"fft": ("c2c", False), "ifft": ("c2c", True), "rfft": ("r2c", False),
          "ihfft": ("r2c", True), "irfft": ("c2r", True), "hfft": ("c2r", False)}


def _transform(name, x, s, dims, norm):
    x = _t(x)
    if x.requires_grad and _GRAD.enabled:
        raise ComplexError(f"fft.{name}: dualgrad has no gradients for the Fourier transforms "
                           f"(no complex autograd); call it under torch.no_grad() or on a "
                           f"detached tensor")
    if x.dtype.kind in "biu":   # NOTE: as torch: integers and bool in the default float
        x = ops.cast(x, dtype=str(DEFAULT_FLOAT[0]))
    kind, inverse = _KINDS[name.rstrip("2n")]
    return ops.fft(x, kind=kind, s=None if s is None else tuple(int(n) for n in s),
                   axes=tuple(dims), norm="backward" if norm is None else norm, inverse=inverse)


def _one(name):
    def f(input, n=None, dim=-1, norm=None):  # noqa: A002 - torch's names
        return _transform(name, input, None if n is None else (n,), (dim,), norm)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.fft.{name}: over one dim (`n` points, `norm` as torch's)."
    return f


def _many(name, two):
    def f(input, s=None, dim=(-2, -1) if two else None, norm=None):  # noqa: A002
        x = _t(input)
        dims = dim
        if dims is None:   # NOTE: torch: the last len(s) dims, or every dim
            dims = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if s is not None and len(s) != len(dims):
            raise RuntimeError(f"When given, dim and shape arguments must have the same "
                               f"length")
        return _transform(name, x, s, dims, norm)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.fft.{name}: over dims `dim` (sizes `s`, `norm` as torch's)."
    return f


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in
                                      ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = (_many(n, True) for n in (
    "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"))
fftn, ifftn, rfftn, irfftn, hfftn, ihfftn = (_many(n, False) for n in (
    "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"))


def _freq(numpy_fn):
    def f(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
        from .factories import _make
        dt = np.dtype(dtype) if dtype is not None else DEFAULT_FLOAT[0]
        return _make(numpy_fn(int(n), float(d)).astype(dt), None, device, requires_grad)
    f.__name__ = f.__qualname__ = numpy_fn.__name__
    f.__doc__ = f"torch.fft.{numpy_fn.__name__}: the sample frequencies, in the default dtype."
    return f


fftfreq, rfftfreq = _freq(np.fft.fftfreq), _freq(np.fft.rfftfreq)


def _shift(input, dim, sign):  # noqa: A002
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) \
        else tuple(dim)
    if not dims:
        return input.clone()
    shifts = tuple(sign * (input.shape[d] // 2) if sign > 0 else -(input.shape[d] // 2)
                   for d in dims)
    return input.roll(shifts, dims)


def fftshift(input, dim=None):  # noqa: A002
    """The zero-frequency term moved to the centre: a roll by n // 2 along each dim."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    """fftshift's inverse: a roll by -(n // 2)."""
    return _shift(input, dim, -1)
