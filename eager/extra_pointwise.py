"""torch's remaining pointwise math: the Bessel and related special functions (torch.i0 and
torch.special's i0e, i1, ndtri, log_ndtr, erfcx, bessel_j0, …, the orthogonal polynomials),
igamma/igammac, mvlgamma, gcd/lcm, nextafter, ldexp, frexp, xlog1py and entr.

Binary functions promote their operands as torch does (integers and bools to float32 for
the floating ones) and hand one dtype to the op.

>>> from dualgrad import eager as torch
>>> torch.gcd(torch.tensor([4, 9]), torch.tensor([6, 3])).tolist(), torch.frexp(torch.tensor([8.0]))[1].tolist()
([2, 3], [4])
"""
from __future__ import annotations

import math

import numpy as np
from dualgrad.ops.rules import HALF, floating

from dualgrad import ops
from dualgrad.ops.composite import in_opmath
from dualgrad.ops.rules import torch_result_dtype

from .core import default_float
from .functions import _arr, _t, promoted
from .refusals import scalar_type


def i0(input):  # noqa: A002
    return ops.i0(input)


def igamma(input, other):  # noqa: A002
    return ops.igamma(*promoted("igamma", (input, other), "float"))


def igammac(input, other):  # noqa: A002
    return ops.igammac(*promoted("igammac", (input, other), "float"))


def gcd(input, other):  # noqa: A002
    return ops.gcd(*promoted("gcd", (input, other), "integer"))


def lcm(input, other):  # noqa: A002
    return ops.lcm(*promoted("lcm", (input, other), "integer"))


def nextafter(input, other):  # noqa: A002
    return ops.nextafter(*promoted("nextafter", (input, other), "floating"))


def ldexp(input, other):  # noqa: A002
    """input * 2**other."""
    # NOTE: torch's kernel takes a bool exponent beside integers (all then float32), not
    # beside a float input
    if _t(other).dtype == np.bool_ and floating(torch_result_dtype((_t(input), _t(other)))):
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    return _scaled_by_exp2(*promoted("ldexp", (input, other), "float"))


@in_opmath   # NOTE: torch's kernel: float16 in float32, rounded once
def _scaled_by_exp2(x, e):
    return x * 2.0 ** e


def frexp(input):  # noqa: A002
    """(mantissa, exponent): input = mantissa * 2**exponent, |mantissa| in [0.5, 1)."""
    x = _t(input)
    if not floating(x.dtype):
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {x.dtype}")
    e = ops.frexp_exponent(x)
    return x * 2.0 ** ops.cast(-e, x.dtype), e


def mvlgamma(input, p):  # noqa: A002
    """The multivariate log-gamma of dimension p: sum of lgamma(x - i/2), i < p, plus
    p(p-1)/4 log(pi); every element must exceed (p - 1) / 2."""
    x = _t(input)
    x = x if floating(x.dtype) else ops.cast(x, default_float())
    if x.dtype in HALF:   # NOTE: torch computes half in float32, rounding once
        return ops.cast(mvlgamma(ops.cast(x, np.float32), p), x.dtype)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not bool(np.all(_arr(x) > (p - 1) / 2)):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = ops.lgamma(x)
    for i in range(1, p):
        out = out + ops.lgamma(x - i / 2)
    return out + p * (p - 1) / 4 * math.log(math.pi)


def xlog1py(input, other):  # noqa: A002
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    x, y = promoted("xlog1py", (input, other), "float")
    masked = ops.logical_and(ops.eq(x, 0), ops.logical_not(ops.ne(y, y)))
    return x * ops.where(masked, 0.0, ops.log1p(ops.where(masked, 0.0, y)))


def entr(input):  # noqa: A002
    """-x log x for x > 0, 0 at 0, -inf below."""
    x = _t(input)
    x = x if floating(x.dtype) else ops.cast(x, default_float())
    pos = ops.gt(x, 0)
    v = -x * ops.log(ops.where(pos, x, 1.0))
    return ops.where(pos, v, ops.where(ops.eq(x, 0), 0.0, ops.where(ops.lt(x, 0), -math.inf, x)))


def _binary_special(op):
    def fn(input, other):  # noqa: A002
        x, y = promoted(op.__name__, (input, other), "float")
        if x.dtype in HALF and op.__name__ == "zeta":
            raise NotImplementedError(f"\"zeta_cpu\" not implemented for "
                                      f"'{scalar_type(x.dtype)}'")
        return op(x, y)
    fn.__name__ = fn.__qualname__ = op.__name__
    return fn


_UNARY = ("i0e i1 i1e ndtri log_ndtr erfcx bessel_j0 bessel_j1 bessel_y0 bessel_y1 "
          "modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 "
          "scaled_modified_bessel_k1 airy_ai spherical_bessel_j0").split()
_BINARY = ["zeta"] + [n for n in ops.special_math.__all__ if "polynomial" in n]

# torch.special's names (eager/special.py re-exports them)
SPECIAL = {"i0": i0, "xlog1py": xlog1py, "entr": entr, "multigammaln": mvlgamma,
           "gammainc": igamma, "gammaincc": igammac,
           "modified_bessel_i0": i0, "modified_bessel_i1": ops.i1,
           **{n: getattr(ops, n) for n in _UNARY},
           **{n: _binary_special(getattr(ops, n)) for n in _BINARY}}

__all__ = TORCH_NAMES = ["i0", "igamma", "igammac", "gcd", "lcm", "nextafter", "ldexp", "frexp",
                         "mvlgamma"]
