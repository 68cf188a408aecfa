"""torch.special: the special functions under their scipy-style names (gammaln, psi,
expit, ndtr, …), each the torch.* function of the same meaning.

>>> from dualgrad import eager as torch
>>> round(torch.special.gammaln(torch.tensor(4.0)).item(), 5), torch.special.expit(torch.tensor(0.0)).item()
(1.79176, 0.5)
"""
from __future__ import annotations

import math

from dualgrad import ops
from .functions import expm1, log1p
from .extra_pointwise import SPECIAL
from .not_provided import absent
from .pointwise import digamma, erf, erfc, erfinv, exp2, lgamma, logit, polygamma, sinc, xlogy

__all__ = ["erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "polygamma", "expit", "logit",
           "exp2", "expm1", "log1p", "xlogy", "sinc", "ndtr", "logsumexp", "softmax",
           "log_softmax", "round"]

gammaln, psi = lgamma, digamma
globals().update(SPECIAL)   # i0e, i1, ndtri, erfcx, bessel_j0, zeta, the polynomials, …
__all__ += list(SPECIAL)


def expit(input):  # noqa: A002
    return ops.sigmoid(input)


def ndtr(input):  # noqa: A002
    """The standard normal CDF."""
    return 0.5 * (1 + ops.erf(input / math.sqrt(2)))


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    return ops.logsumexp(input, axis=dim, keepdims=keepdim)


def softmax(input, dim, dtype=None):  # noqa: A002
    return ops.softmax(input if dtype is None else ops.cast(input, dtype), axis=dim)


def log_softmax(input, dim, dtype=None):  # noqa: A002
    return ops.log_softmax(input if dtype is None else ops.cast(input, dtype), axis=dim)


def round(input, decimals=0):  # noqa: A001, A002
    return input.round(decimals=decimals)


def __getattr__(name):
    raise absent("special", name)
