"""torch.signal.windows: the window functions of length M, symmetric (sym=True) or periodic
(the first M points of the symmetric window of length M + 1), computed in float64 and
returned in `dtype` (the default float dtype unless given).

>>> from dualgrad import eager as torch
>>> torch.signal.windows.hann(5).tolist()
[0.0, 0.5, 1.0, 0.5, 0.0]
"""
from __future__ import annotations

import math

import numpy as np
from dualgrad.ops.rules import floating

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window(name, M, dtype, requires_grad, values):
    """The tensor of values(n, N) for n = 0..M-1, N the symmetric window's last index."""
    from .factories import get_default_dtype, tensor
    if not isinstance(M, int) or M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dt = np.dtype(dtype or get_default_dtype())
    if not floating(dt):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    if M == 0:
        arr = np.zeros(0)
    elif M == 1:
        arr = np.ones(1)
    else:
        arr = values(np.arange(M, dtype=np.float64))
    return tensor(arr.astype(dt), requires_grad=requires_grad)


def _last(M, sym):
    return M - 1 if sym else M


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    coeffs = [float(c) for c in (a.tolist() if hasattr(a, "tolist") else a)]
    return _window("general_cosine", M, dtype, requires_grad, lambda n: sum(
        (-1) ** k * c * np.cos(2 * math.pi * k * n / _last(M, sym))
        for k, c in enumerate(coeffs)))


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("bartlett", M, dtype, requires_grad,
                   lambda n: 1 - np.abs(2 * n / _last(M, sym) - 1))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("cosine", M, dtype, requires_grad,
                   lambda n: np.sin(math.pi * (n + 0.5) / (M if sym else M + 1)))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    c = _last(M, sym) / 2.0 if center is None else center
    return _window("exponential", M, dtype, requires_grad, lambda n: np.exp(-np.abs(n - c) / tau))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, dtype, requires_grad,
                   lambda n: np.exp(-((n - _last(M, sym) / 2.0) / std) ** 2 / 2))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    half = _last(M, sym) / 2.0
    return _window("kaiser", M, dtype, requires_grad, lambda n: np.i0(
        beta * np.sqrt(np.clip(1 - ((n - half) / half) ** 2, 0, None))) / np.i0(beta))
