"""Helpers for the registry's reference implementations (`Op.ref`), written against the NumPy
API so the same reference runs on numpy and on jax.numpy (tests/opinfo.py).

A reference must not reuse its op's kernel: gradient ops that scatter (slice_grad, take_grad,
gather_grad, fold, max_pool_grad) are checked as the transpose of their forward selection,
built from the flat positions each output element reads.
"""
from __future__ import annotations

import math

import numpy as np


def special(xp):
    """scipy.special for NumPy, jax.scipy.special for jax.numpy (erf, erfc, digamma, …)."""
    if getattr(xp, "__name__", "").startswith("jax"):
        import jax.scipy.special as sp
    else:
        import scipy.special as sp
    return sp


def positions(shape, offset=0):
    """The flat position of every element of an array of `shape` (plus `offset`)."""
    return np.arange(math.prod(shape)).reshape(shape) + offset


def scatter(xp, g, pos, shape):
    """out[j] = sum of g[i] over every i with pos[i] == j (pos < 0 reads nothing): the
    transpose of the selection `x.flat[pos]`, as a one-hot product (no in-place writes)."""
    n = math.prod(shape)
    hit = np.asarray(pos).reshape(-1, 1) == np.arange(n)[None, :]
    return xp.reshape(xp.sum(xp.reshape(g, (-1, 1)) * hit, axis=0), shape)
