"""torch's pointwise math beyond eager/functions.py: sign, erf and erfinv, the trigonometric
and hyperbolic functions, atan2, exp2, logit, xlogy, hypot, fmax/fmin, isclose, float_power,
heaviside, and the Tensor methods of the same names.

Each is a composition of the op library's ops, so its gradient comes from theirs (atan2 and
erfinv are primitives of their own: nothing composes to them).

>>> from dualgrad import eager
>>> x = eager.tensor([0.0, 0.5])
>>> eager.atan2(x, eager.ones(2)).tolist() == eager.atan(x).tolist()
True
"""
from __future__ import annotations

import math

import numpy as np
from dualgrad.ops.rules import floating, inexact

from dualgrad import ops
from dualgrad.ops.composite import in_opmath
from dualgrad.ops.rules import torch_result_dtype

from .core import Tensor, default_float
from .functions import _arr, _no_grad_tensor, _t, isinf, isnan, promoted, zero_link

_LN2 = math.log(2.0)


def _floating(x):
    """x as a float tensor (integers and bools in the default float dtype, float32 unless
    set_default_dtype changed it, as torch's float ops)."""
    x = _t(x)
    return x if inexact(x.dtype) else ops.cast(x, default_float())


def sign(input):  # noqa: A002 - torch's argument names
    """-1, 0 or 1 (0 for NaN, as torch; ops.sign keeps NumPy's NaN)."""
    x = _t(input)
    if x.dtype == np.bool_:
        return x.clone()
    return ops.where(isnan(x), 0, ops.sign(x)) if floating(x.dtype) else ops.sign(x)


def sgn(input):  # noqa: A002
    """sign for real tensors; z / |z| for complex ones (0 at 0), as torch's."""
    x = _t(input)
    if x.dtype.kind == "c":
        r = ops.abs(x)
        return ops.where(ops.eq(r, 0), 0, x / ops.where(ops.eq(r, 0), 1, r))
    return sign(input)


def erf(input):  # noqa: A002
    return ops.erf(input)


def erfinv(input):  # noqa: A002
    return ops.erfinv(input)


def erfc(input):  # noqa: A002
    return ops.erfc(input)


def lgamma(input):  # noqa: A002
    return ops.lgamma(input)


def digamma(input):  # noqa: A002
    return ops.digamma(input)


def polygamma(n, input):  # noqa: A002
    """The n-th derivative of digamma (torch.polygamma): n >= 0."""
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got {n}")
    if n == 0:
        return ops.digamma(input)
    if n == 1:
        return ops.trigamma(ops.cast(input, np.float32) if _arr(input).dtype.kind in "biu"
                            else input)
    return ops.polygamma(input, n=int(n))


def absolute(input):  # noqa: A002
    return ops.abs(input)


@in_opmath    # NOTE: composites: float16 computed in float32 and rounded once, as torch's kernels
def tan(input):  # noqa: A002
    return ops.sin(input) / ops.cos(input)


@in_opmath
def cosh(input):  # noqa: A002
    """exp(x - ln 2) + exp(-x - ln 2): no cancellation, and finite as far as cosh is."""
    x = _floating(input)
    return ops.exp(x - _LN2) + ops.exp(-x - _LN2)


@in_opmath
def sinh(input):  # noqa: A002
    """tanh(x / 2) * (cosh(x) + 1): exact near 0, where (e^x - e^-x) / 2 cancels."""
    x = _floating(input)
    return ops.tanh(x * 0.5) * (cosh(x) + 1.0)


def atan2(input, other):  # noqa: A002
    return ops.atan2(*promoted("atan2", (input, other), "float"))


def atan(input):  # noqa: A002
    return ops.atan2(_floating(input), 1.0)


def _cos_side(x):
    """sqrt(1 - x^2) as sqrt(1 - x) * sqrt(1 + x): its digits kept near |x| = 1, and an
    infinite slope there (torch's gradient of asin at 1), not 0 * inf."""
    return ops.sqrt(1.0 - x) * ops.sqrt(1.0 + x)


def asin(input):  # noqa: A002
    x = _floating(input)
    return ops.atan2(x, _cos_side(x))


def acos(input):  # noqa: A002
    x = _floating(input)
    return ops.atan2(_cos_side(x), x)


arctan2, arctan, arcsin, arccos = atan2, atan, asin, acos


def exp2(input):  # noqa: A002
    return 2.0 ** _floating(input)


def logit(input, eps=None):  # noqa: A002
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given."""
    x = _floating(input)
    if eps is not None:
        return ops.log(ops.clamp(x, eps, 1.0 - eps)) - ops.log(1.0 - ops.clamp(x, eps, 1.0 - eps))
    # NOTE: outside [0, 1] the value is NaN, and so is torch's gradient: the factor keeps both
    one = x.dtype.type
    outside = ops.where(ops.logical_or(ops.lt(x, 0), ops.gt(x, 1)), one(np.nan), one(1))
    return (ops.log(x) - ops.log(1.0 - x)) * outside


def xlogy(input, other):  # noqa: A002
    """x * log(y), 0 where x is 0 (unless y is NaN). As torch's, the gradient for x is
    log(y), but 0 where x == 0 and y <= 0."""
    x, y = promoted("xlogy", (input, other), "float")
    masked = ops.logical_and(ops.eq(x, 0), ops.le(y, 0))
    return x * ops.where(masked, 0.0, ops.log(y))


def hypot(input, other):  # noqa: A002
    return _hypot(*promoted("hypot", (input, other), "floating"))


@in_opmath   # NOTE: torch's kernel: float16 in float32, rounded once
def _hypot(x, y):
    """sqrt(x^2 + y^2), scaled by max(|x|, |y|) so that it overflows only where it should."""
    m = ops.stop_gradient(ops.maximum(ops.abs(x), ops.abs(y)))
    inf = ops.logical_or(isinf(x), isinf(y))
    m = ops.where(ops.logical_or(ops.eq(m, 0), isinf(m)), 1.0, m)
    # NOTE: an infinite side makes it inf even with a NaN on the other (C's hypot)
    return ops.where(inf, np.inf, m * ops.sqrt(ops.square(x / m) + ops.square(y / m)))


def _extremum(x, y, first, name):
    """maximum / minimum with torch's gradient and NaN propagation."""
    x = _t(x)
    dt = torch_result_dtype([x, y], default_float())   # NOTE: dtypes only: a tracer has no values
    if not inexact(dt):
        return getattr(ops, name)(x, y)
    x = x if x.dtype == dt else ops.cast(x, dt)
    y = ops.cast(y, dt) if isinstance(y, Tensor) and y.dtype != dt else y
    # NOTE: torch's rule: a NaN gives both sides the whole gradient (x + y), a tie half
    rest = ops.where(ops.eq(x, y), x * 0.5 + y * 0.5, x + y)
    return ops.where(first(x, y), x, ops.where(first(y, x), y, rest))


def maximum(input, other):  # noqa: A002
    return _extremum(input, other, ops.gt, "maximum")


def minimum(input, other):  # noqa: A002
    return _extremum(input, other, ops.lt, "minimum")


def fmax(input, other):  # noqa: A002
    """The larger of the two, ignoring a NaN on one side; ties give input the gradient."""
    x, y = _t(input), _t(other)
    return ops.where(ops.logical_or(ops.ge(x, y), isnan(y)), x, y)


def fmin(input, other):  # noqa: A002
    x, y = _t(input), _t(other)
    return ops.where(ops.logical_or(ops.le(x, y), isnan(y)), x, y)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol * |other| elementwise (a bool tensor, no gradient)."""
    a, b = _arr(input), _arr(other)
    if isinstance(other, Tensor) and a.dtype != b.dtype:
        raise RuntimeError(f"isclose: {a.dtype} did not match {b.dtype}")
    return _no_grad_tensor(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def float_power(input, exponent):  # noqa: A002
    """input ** exponent computed in float64 (torch's double precision power)."""
    x = ops.cast(_t(input), np.float64)
    e = ops.cast(exponent, np.float64) if isinstance(exponent, Tensor) else \
        float(exponent)
    return x ** e


def heaviside(input, values):  # noqa: A002
    """0 where input < 0, values where input == 0, 1 where input > 0 (no gradient, as torch)."""
    x, v = _arr(input), _arr(values)
    if x.dtype != v.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different "
                           f"dtypes ({x.dtype} and {v.dtype})")
    return _no_grad_tensor(np.where(x == 0, v, (x > 0).astype(x.dtype)).astype(x.dtype))



def asinh(input):  # noqa: A002
    """s * log1p(a + a^2 / (1 + sqrt(1 + a^2))) with a = s * x = |x| (s the sign bit's +-1,
    so the slope at 0 is 1): exact near 0; log(2a) past 1e18, where a^2 would overflow."""
    x = _floating(input)
    s = np.where(np.signbit(_arr(x)), -1.0, 1.0).astype(x.dtype)
    a = x * s
    big = ops.gt(a, 1e18)
    small = ops.where(big, 0.0, a)
    near = ops.log1p(small + small * small / (1.0 + ops.sqrt(1.0 + small * small)))
    far = ops.log(ops.where(big, a, 1.0)) + _LN2
    return ops.where(big, far, near) * s


def acosh(input):  # noqa: A002
    """log1p((x - 1) + sqrt((x - 1)(x + 1))): keeps its digits near 1 (NaN below 1)."""
    x = _floating(input)
    big = ops.gt(x, 1e18)
    xs = ops.where(big, 2.0, x)
    near = ops.log1p((xs - 1.0) + ops.sqrt(xs - 1.0) * ops.sqrt(xs + 1.0))
    return ops.where(big, ops.log(ops.where(big, x, 1.0)) + _LN2, near)


def atanh(input):  # noqa: A002
    """0.5 * (log1p(x) - log1p(-x))."""
    x = _floating(input)
    return 0.5 * (ops.log1p(x) - ops.log1p(-x))


arcsinh, arccosh, arctanh = asinh, acosh, atanh


def copysign(input, other):  # noqa: A002
    """|input| with the sign bit of other (-0.0 and NaN's included); other gets a zero
    gradient, input's is +-1 (0 where input is 0), as torch's."""
    x, other = promoted("copysign", (input, other), "float")
    o = _arr(other)
    shape = np.broadcast_shapes(tuple(x.shape), np.shape(o))
    mag = ops.abs(x + zero_link(other)) if isinstance(other, Tensor) else ops.abs(x)
    mag = mag if tuple(mag.shape) == shape else ops.broadcast_to(mag, shape=shape)
    return ops.where(np.broadcast_to(np.signbit(o), shape), -mag, mag)


def signbit(input):  # noqa: A002
    return _no_grad_tensor(np.signbit(_arr(input)))


def deg2rad(input):  # noqa: A002
    return _floating(input) * (math.pi / 180.0)


def rad2deg(input):  # noqa: A002
    return _floating(input) * (180.0 / math.pi)


def sinc(input):  # noqa: A002
    """sin(pi x) / (pi x), 1 at 0 (gradient 0 there, as torch)."""
    x = _floating(input)
    zero = ops.eq(x, 0)
    px = ops.where(zero, 1.0, x) * math.pi
    return ops.where(zero, 1.0, ops.sin(px) / px)


def logaddexp(input, other):  # noqa: A002
    """log(exp(x) + exp(y)) = max(x, y) + log1p(exp(-|x - y|)), with maximum's torch
    gradient, so a tie gives each side half."""
    x, y = promoted("logaddexp", (input, other), "floating")
    d = ops.abs(x - y)
    d = ops.where(isnan(d), 0.0, d)        # NOTE: equal infinities: log(2) past them, not NaN
    return maximum(x, y) + ops.log1p(ops.exp(-d))


@in_opmath
def logaddexp2(input, other):  # noqa: A002
    x, y = promoted("logaddexp2", (input, other), "floating")
    return logaddexp(x * _LN2, y * _LN2) * (1.0 / _LN2)


def positive(input):  # noqa: A002
    x = _t(input)
    if x.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


def isposinf(input):  # noqa: A002
    return _no_grad_tensor(np.isposinf(_arr(input)))


def isneginf(input):  # noqa: A002
    return _no_grad_tensor(np.isneginf(_arr(input)))


def isreal(input):  # noqa: A002
    return _no_grad_tensor(np.isreal(_arr(input)))



def _bitwise(name, fn, *xs):
    """A bitwise op in the dtype torch gives its operands (uint8 & 3 is uint8: a Python int
    does not widen a tensor; it wraps into the tensor's dtype, as torch's)."""
    arrs = [x if type(x) in (bool, int, float) else _arr(x) for x in xs]
    want = torch_result_dtype(arrs)
    for a in arrs:
        dt = want if type(a) in (bool, int, float) else a.dtype
        if dt.kind not in "biu" or type(a) is float:
            raise RuntimeError(f"\"{name}_cpu\" not implemented for "
                               f"'{dt if type(a) is not float else 'float'}': bitwise ops take "
                               f"integer or bool tensors")
    if want.kind == "b" and name in ("lshift", "rshift"):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    return _no_grad_tensor(fn(*[np.asarray(a).astype(want, copy=False) for a in arrs]))


def bitwise_and(input, other):  # noqa: A002
    return _bitwise("bitwise_and", np.bitwise_and, input, other)


def bitwise_or(input, other):  # noqa: A002
    return _bitwise("bitwise_or", np.bitwise_or, input, other)


def bitwise_xor(input, other):  # noqa: A002
    return _bitwise("bitwise_xor", np.bitwise_xor, input, other)


def bitwise_not(input):  # noqa: A002
    return _bitwise("bitwise_not", np.invert, input)


def bitwise_left_shift(input, other):  # noqa: A002
    return _bitwise("lshift", np.left_shift, input, other)


def bitwise_right_shift(input, other):  # noqa: A002
    return _bitwise("rshift", np.right_shift, input, other)


def _is_bool(x):
    # NOTE: the dtype, not the values (a compile() tracer has none)
    return x.dtype == np.bool_ if isinstance(x, Tensor) else isinstance(x, bool)


def bool_or_bitwise(logical, bitwise):
    """x & y, x | y, x ^ y: the logical op on bools (traceable), bitwise on integers."""
    def op(self, other):
        return logical(self, other) if _is_bool(self) and _is_bool(other) else \
            bitwise(self, other)
    return op


def invert(self):
    if not _is_bool(self) and np.dtype(self.dtype).kind not in "iu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return ops.logical_not(self) if _is_bool(self) else bitwise_not(self)


__all__ = TORCH_NAMES = [
    "sign", "sgn", "erf", "erfinv", "erfc", "lgamma", "digamma", "absolute", "tan", "cosh", "sinh", "atan2", "atan", "asin",
    "acos", "arctan2", "arctan", "arcsin", "arccos", "exp2", "logit", "xlogy", "hypot",
    "maximum", "minimum", "fmax", "fmin", "isclose", "float_power", "heaviside", "asinh",
    "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "copysign", "signbit", "deg2rad",
    "rad2deg", "sinc", "logaddexp", "logaddexp2", "positive", "isposinf", "isneginf", "isreal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift"]

# NOTE: registry ops offered unchanged under torch's names declare it (Op.front, ops/api.py)
FROM_REGISTRY = ops.api.functions("torch")
globals().update(FROM_REGISTRY)
TORCH_NAMES += list(FROM_REGISTRY)
TORCH_NAMES = __all__ = TORCH_NAMES + ["polygamma"]
