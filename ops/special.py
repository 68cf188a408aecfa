"""Special functions: erfc, lgamma, digamma, trigamma and polygamma of any order, computed in
float64 and returned in the input's dtype, with torch's values at the poles (lgamma of a
non-positive integer is inf, digamma of 0 is -inf and of a negative integer NaN). NumPy has
none of them: erfc and lgamma come from Python's math module; digamma and trigamma shift
their argument past 6 with the recurrence, then sum their asymptotic series (accurate to
about 1e-14), and use the reflection formula for negative arguments.

>>> import numpy as np
>>> from dualgrad import ops
>>> x = np.array([0.5, 1.0, 4.0])
>>> np.round(ops.lgamma(x), 6).tolist(), np.round(ops.digamma(x), 6).tolist()
([0.572365, 0.0, 1.791759], [-1.96351, -0.577216, 1.256118])
"""
from __future__ import annotations

import math

import numpy as np

from . import refs
from .core import Sample, primitive, register
from .elementwise import exp
from .rules import same

_SAMPLES = (Sample(((),)), Sample(((1,),)), Sample(((3, 4),)), Sample(((2, 1, 3),)))
_POSITIVE = tuple(Sample(s.args, domain=(0.2, 3.0)) for s in _SAMPLES)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _infer(x, **_):
    return same(x)


def _elementwise(fn):
    """A kernel applying a float -> float Python function to every element."""
    ufunc = np.frompyfunc(fn, 1, 1)

    def kernel(x):
        x = np.asarray(x)
        return np.asarray(ufunc(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)
    return kernel


def _lgamma_scalar(v):
    try:
        return math.lgamma(v)
    except ValueError:   # NOTE: a pole (0, -1, -2, ...): torch gives inf
        return math.inf


def _shifted(x, series, step):
    """series(y) after moving each x up past 6, adding step(y) for each shift."""
    y = np.array(x, dtype=np.float64)
    acc = np.zeros_like(y)
    for _ in range(6):
        low = y < 6.0
        acc = np.where(low, acc + step(np.where(low, y, 1.0)), acc)
        y = np.where(low, y + 1.0, y)
    return acc + series(y)


def _digamma_series(y):
    r = 1.0 / (y * y)
    return np.log(y) - 0.5 / y - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (
        1 / 240 - r * (1 / 132)))))


def _trigamma_series(y):
    r = 1.0 / (y * y)
    return 1.0 / y + 0.5 * r + (r / y) * (1 / 6 - r * (1 / 30 - r * (1 / 42 - r * (
        1 / 30 - r * (5 / 66)))))


def _digamma_kernel(x):
    x = np.asarray(x)
    v = x.astype(np.float64)
    with np.errstate(all="ignore"):
        pos = _shifted(np.where(v > 0, v, 1.0), _digamma_series, lambda y: -1.0 / y)
        flip = np.where(v > 0, 1.0, 1.0 - v)     # NOTE: psi(x) = psi(1 - x) - pi / tan(pi x)
        neg = _shifted(flip, _digamma_series, lambda y: -1.0 / y) - math.pi / np.tan(math.pi * v)
        out = np.where(v > 0, pos, neg)
        out = np.where(v == 0, -np.inf, np.where((v < 0) & (v == np.floor(v)), np.nan, out))
        out = np.where(np.isposinf(v), np.inf, np.where(np.isnan(v), np.nan, out))
    return out.astype(x.dtype)


def _trigamma_kernel(x):
    x = np.asarray(x)
    v = x.astype(np.float64)
    with np.errstate(all="ignore"):
        pos = _shifted(np.where(v > 0, v, 1.0), _trigamma_series, lambda y: 1.0 / (y * y))
        flip = np.where(v > 0, 1.0, 1.0 - v)     # NOTE: psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
        neg = _reflection(x) - _shifted(flip, _trigamma_series, lambda y: 1.0 / (y * y))
        out = np.where(v > 0, pos, neg)
    return out.astype(x.dtype)


def _reflection(x):
    """pi^2 / sin^2(pi x) in the precision torch computes trigamma in (float32 below float64),
    so at a negative integer it is torch's large finite value (sin(pi x) rounds to a tiny
    nonzero number), and inf at 0."""
    work = np.float64 if x.dtype == np.float64 else np.float32
    pi = work(math.pi)
    s = np.sin(pi * x.astype(work))
    return (pi * pi / (s * s)).astype(np.float64)


# B_2k / (2k)! for k = 1..7: the Euler-Maclaurin tail of the Hurwitz zeta function
_BERNOULLI = (1 / 6 / 2, -1 / 30 / 24, 1 / 42 / 720, -1 / 30 / 40320, 5 / 66 / 3628800,
              -691 / 2730 / 479001600, 7 / 6 / 87178291200)


def _hurwitz_zeta(s, q):
    """zeta(s, q) = sum over j >= 0 of (q + j)^-s for an integer s >= 2, as torch's (Cephes')
    zeta: the terms summed directly until q + j >= 15 (any q, negative ones too), then the
    Euler-Maclaurin tail (accurate to about 1e-15); inf at q = 0, -1, -2, ...; NaN at +inf."""
    y, acc = q.copy(), np.zeros_like(q)
    for _ in range(10000):
        low = y < 15.0
        if not low.any():
            break
        acc = np.where(low, acc + np.where(low, y, 1.0) ** -s, acc)
        y = np.where(low, y + 1.0, y)
    tail = y ** (1.0 - s) / (s - 1) + 0.5 * y ** -s
    rising, ypow = float(s), y ** (-s - 1.0)
    for k, b in enumerate(_BERNOULLI, 1):
        tail = tail + b * rising * ypow
        rising *= (s + 2 * k - 1) * (s + 2 * k)
        ypow = ypow / (y * y)
    out = acc + tail
    return np.where((q <= 0) & (q == np.floor(q)), np.inf, np.where(np.isposinf(q), np.nan, out))


def _polygamma_kernel(x, n):
    """The n-th derivative of digamma for n >= 1: (-1)^(n+1) n! zeta(n + 1, x), as torch."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        out = (1.0 if n % 2 else -1.0) * math.factorial(n) * _hurwitz_zeta(
            n + 1, x.astype(np.float64))
    return out.astype(x.dtype)


POLYGAMMA = register("polygamma", _infer, _polygamma_kernel,
                     lambda g, x, n, **kw: (g * POLYGAMMA.fn(x, n=n + 1),), category="other",
                     floating=True,
                     samples=tuple(Sample(s.args, {"n": n}, domain=s.domain)
                                   for s, n in zip(_POSITIVE, (2, 3, 4, 2))),
                     ref=lambda np, x, n: refs.special(np).polygamma(n, x).astype(x.dtype))


def _trigamma_vjp(g, x, **kw):
    return (g * POLYGAMMA.fn(x, n=2),)


ERFC = register("erfc", _infer, _elementwise(math.erfc),
                lambda g, x, **kw: (-(g * _TWO_OVER_SQRT_PI * exp(-(x * x))),),
                category="other", floating=True, front=("tf",), samples=_SAMPLES,
                ref=lambda np, x: refs.special(np).erfc(x).astype(x.dtype))
TRIGAMMA = register("trigamma", _infer, _trigamma_kernel, _trigamma_vjp, category="other",
                    samples=_POSITIVE,
                    ref=lambda np, x: refs.special(np).polygamma(1, x).astype(x.dtype))
DIGAMMA = register("digamma", _infer, _digamma_kernel,
                   lambda g, x, **kw: (g * TRIGAMMA.fn(x),), category="other", floating=True,
                   front=("tf",), samples=_POSITIVE,
                   ref=lambda np, x: refs.special(np).digamma(x).astype(x.dtype))
LGAMMA = register("lgamma", _infer, _elementwise(_lgamma_scalar),
                  lambda g, x, **kw: (g * DIGAMMA.fn(x),), category="other", floating=True,
                  front=("tf",), samples=_POSITIVE,
                  ref=lambda np, x: refs.special(np).gammaln(x).astype(x.dtype))

erfc, lgamma, digamma, trigamma, polygamma = (primitive(op) for op in (
    ERFC, LGAMMA, DIGAMMA, TRIGAMMA, POLYGAMMA))
