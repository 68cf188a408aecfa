"""torch.fft: `fftshift` and `ifftshift` (rolls, so any dtype and differentiable). The
transforms themselves are not provided yet: they are rows of docs/pytorch-compat.md's table
of names not provided (AttributeError here).

>>> from dualgrad import eager as torch
>>> torch.fft.fftshift(torch.arange(5)).tolist()
[3, 4, 0, 1, 2]
"""
from __future__ import annotations

__all__ = ["fftshift", "ifftshift"]


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
