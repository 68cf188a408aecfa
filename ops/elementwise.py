"""Elementwise primitives: unary and binary math, comparisons, where, cast.

Each entry: shape rule, NumPy kernel, gradient rule in op calls, scalar form for fusion
(a template over {0}, {1}… using only operators and the function names the fusion code
generator knows), samples, and a reference written against the NumPy API (run with numpy
and with jax.numpy in the tests).
"""
from __future__ import annotations

import math

import numpy as np
from .rules import HALF, floating, inexact

from . import refs
from .core import (REGISTRY, Sample, Spec, ShapeError, bind, fmt_shape, is_value, register)
from .rules import broadcast, result_dtype, same, warn_outer
from .shape import sum_to_like

_EW = "elementwise"


def unbroadcast(g, x):
    """Reduce a gradient back to x's shape, and to x's floating dtype (None for a Python
    scalar or a raw array input). NOTE: torch's engine hands each input its gradient in its
    own dtype: a float32 weight times a float64 input has a float32 gradient."""
    if getattr(x, "_engine", None) is None:   # NOTE: is_value(x), inlined (~140 calls a step)
        return None
    xs, gs = x.shape, g.shape
    if xs != gs or None in xs:
        g = sum_to_like(g, x)
    if g.dtype != x.dtype and floating(x.dtype) and floating(g.dtype):
        return cast(g, x.dtype)
    return g


# -- shape rules ------------------------------------------------------------------------------
def _unary_infer(x, **_):
    return x


def _binary_infer(name, out_dtype=None):
    def infer(x, y, **_):
        shape = broadcast(name, x, y)
        warn_outer(name, x, y)
        dt = result_dtype(x, y)     # NOTE: also for comparisons: strict dtypes check them
        return Spec(shape, np.dtype(out_dtype) if out_dtype else dt)
    return infer


def _div_infer(x, y, **_):
    shape = broadcast("div", x, y)
    warn_outer("div", x, y)
    dt = result_dtype(x, y)
    return Spec(shape, dt if inexact(dt) else np.dtype(np.float64))


# -- unary ------------------------------------------------------------------------------------
def _S(*shapes, **kw):
    return Sample(tuple(shapes), **kw)


_UNARY_SAMPLES = (_S(()), _S((1,)), _S((3, 4)), _S((2, 1, 3)))
_POS_SAMPLES = tuple(Sample(s.args, domain=(0.2, 3.0)) for s in _UNARY_SAMPLES)

NEG = register("neg", _unary_infer, np.negative, lambda g, x, **kw: (-g,), reads=(),
               scalar="(-{0})", category=_EW, onnx="Neg", tf="Neg", samples=_UNARY_SAMPLES, ref=lambda np, x: -x, complex=True, tf_name="Neg")
EXP = register("exp", _unary_infer, np.exp,
               lambda g, x, out, **kw: (g * out,), reads=("out",),
               scalar="exp({0})", category=_EW, floating=True, onnx="Exp", samples=_UNARY_SAMPLES,
               ref=lambda np, x: np.exp(x), tf="Exp", complex=True, tf_name="Exp")
LOG = register("log", _unary_infer, np.log, lambda g, x, **kw: (g / x,),
               scalar="log({0})", category=_EW, floating=True, onnx="Log", samples=_POS_SAMPLES,
               ref=lambda np, x: np.log(x), tf="Log", complex=True, tf_name="Log")
LOG1P = register("log1p", _unary_infer, np.log1p, lambda g, x, **kw: (g / (x + 1.0),),
                 scalar="log1p({0})", category=_EW, floating=True, samples=_POS_SAMPLES + (
                     _S((5,), domain=(-0.9, 1e-6)),),
                 ref=lambda np, x: np.log1p(x), tf="Log1p", complex=True)   # NOTE: exact where log(1 + x) rounds to 0
SQRT = register("sqrt", _unary_infer, np.sqrt,
                lambda g, x, out, **kw: (g * 0.5 / out,), reads=("out",),
                scalar="sqrt({0})", category=_EW, floating=True, onnx="Sqrt", samples=_POS_SAMPLES,
                ref=lambda np, x: np.sqrt(x), tf="Sqrt", complex=True, tf_name="Sqrt")
TANH = register("tanh", _unary_infer, np.tanh,
                lambda g, x, out, **kw: (tanh_grad(out, g),), reads=("out",),
                scalar="tanh({0})", category=_EW, floating=True, onnx="Tanh",
                samples=_UNARY_SAMPLES,
                ref=lambda np, x: np.tanh(x), tf="Tanh", complex=True, tf_name="Tanh")


def _sigmoid_kernel(x):
    # NOTE: exp(min(x, 0)) / (1 + exp(-|x|)): neither exp overflows, and for x < 0 the
    # quotient is e / (1 + e), which keeps its relative precision (sigmoid(-20) = 2.06e-9,
    # sigmoid(-100) a float32 subnormal), as torch; no branch and no where: 2/3 of the time
    if type(x) is np.ndarray and x.size >= _NATIVE_SIGMOID and floating(x.dtype) \
            and x.dtype.itemsize >= 4:
        from . import native
        return native.sigmoid(x)
    return np.exp(np.minimum(x, 0)) / (np.exp(-np.abs(x)) + 1)


_NATIVE_SIGMOID = 1024   # NOTE: the same quotients with one exp, not two, and one pass for the
# select and divide: 17 -> 9 us at the LSTM's (32, 256) gates; below this size NumPy's path
# costs a few us and numba need not be imported


SIGMOID = register("sigmoid", _unary_infer, _sigmoid_kernel,
                   lambda g, x, out, **kw: (sigmoid_grad(out, g),), reads=("out",),
                   scalar="where({0} >= 0, 1 / (1 + exp(-abs({0}))), "
                          "exp(-abs({0})) / (1 + exp(-abs({0}))))", category=_EW,
                   floating=True, onnx="Sigmoid", samples=_UNARY_SAMPLES,
                   ref=lambda np, x: 1 / (1 + np.exp(-x)), tf="Sigmoid", tf_name="Sigmoid")


# -- the gradients of sigmoid and tanh from their output y (TF's SigmoidGrad, TanhGrad): one
# kernel call where dy * y * (1 - y) op by op is three, in every engine's backward pass
def _sigmoid_grad_kernel(y, dy):
    if not floating(getattr(y, "dtype", _F64)) or not floating(getattr(dy, "dtype", _F64)):
        _refuse("sigmoid_grad", np.asarray(y), np.asarray(dy))
    if _alike(y, dy):   # NOTE: the same products in one buffer: 2 of 3 allocations saved
        t = 1.0 - y
        np.multiply(y, t, out=t)
        return np.multiply(dy, t, out=t)
    return dy * (y * (1.0 - y))


def _alike(y, dy):
    """Two float arrays of one shape and dtype: the result's buffer can hold each step."""
    return (type(y) is np.ndarray and type(dy) is np.ndarray and y.dtype is dy.dtype
            and y.shape == dy.shape and y.ndim and floating(y.dtype))


def _sigmoid_grad_vjp(g, y, dy, needs=(True, True), **kw):
    return (unbroadcast(g * dy * (1.0 - 2.0 * y), y) if needs[0] else None,
            unbroadcast(sigmoid_grad(y, g), dy) if needs[1] else None)


def _tanh_grad_kernel(y, dy):
    if not floating(getattr(y, "dtype", _F64)) or not floating(getattr(dy, "dtype", _F64)):
        _refuse("tanh_grad", np.asarray(y), np.asarray(dy))
    if _alike(y, dy):
        t = y * y
        np.subtract(1.0, t, out=t)
        return np.multiply(dy, t, out=t)
    return dy * (1.0 - y * y)


def _tanh_grad_vjp(g, y, dy, needs=(True, True), **kw):
    return (unbroadcast(g * dy * y * -2.0, y) if needs[0] else None,
            unbroadcast(tanh_grad(y, g), dy) if needs[1] else None)


def _float_only(name, rule):
    """A shape rule that refuses bool (and, for `ints=False`, integer) inputs, as torch's
    kernels do, instead of declaring a dtype the NumPy kernel would not give."""
    def infer(*specs, **attrs):
        for s in specs:
            if s.weak is None and s.dtype.kind in ("b" if name == "relu" else "biu"):
                raise ShapeError(f"{name}: not implemented for {s.dtype} input "
                                 f"{fmt_shape(s)} (as torch's)")
        return rule(*specs, **attrs)
    return infer


_F64 = np.dtype(np.float64)   # what a Python float operand counts as


def _refuse(name, *arrays):
    for a in arrays:
        if a.dtype.kind in ("b" if name == "relu" else "biu"):
            raise TypeError(f"{name}: not implemented for {a.dtype}")


_ACT_GRAD_SAMPLES = (_S((), ()), _S((3, 4), (3, 4)), _S((2, 1, 3), (2, 1, 3)),
                     _S((3, 4), (4,)))
SIGMOID_GRAD = register("sigmoid_grad",
                        _float_only("sigmoid_grad", _binary_infer("sigmoid_grad")),
                        _sigmoid_grad_kernel,
                        _sigmoid_grad_vjp, scalar="({1} * ({0} * (1 - {0})))", category=_EW,
                        zero_from=(1,),
                        samples=tuple(Sample(s.args, domain=(0.05, 0.95))
                                      for s in _ACT_GRAD_SAMPLES),
                        ref=lambda np, y, dy: dy * (y * (1 - y)))
TANH_GRAD = register("tanh_grad", _float_only("tanh_grad", _binary_infer("tanh_grad")),
                     _tanh_grad_kernel, _tanh_grad_vjp,
                     scalar="({1} * (1 - {0} * {0}))", category=_EW, zero_from=(1,),
                     samples=tuple(Sample(s.args, domain=(-0.9, 0.9)) for s in _ACT_GRAD_SAMPLES),
                     ref=lambda np, y, dy: dy * (1 - y * y))


def _softplus_kernel(x):
    return np.logaddexp(x, 0)   # NOTE: log(1 + exp(x)) overflows for x > 88 in float32


SOFTPLUS = register("softplus", _unary_infer, _softplus_kernel,
                    lambda g, x, **kw: (g * sigmoid(x),),
                    scalar="maximum({0}, 0) + log1p(exp(-abs({0})))", category=_EW,
                    floating=True, onnx="Softplus",
                    samples=_UNARY_SAMPLES + (_S((4, 5), domain=(-40.0, 40.0)),),
                    ref=lambda np, x: np.logaddexp(x, 0), tf="Softplus")


def _relu_kernel(x):
    if getattr(x, "dtype", None) == np.bool_:
        _refuse("relu", x)
    return np.maximum(x, 0)


RELU = register("relu", _float_only("relu", _unary_infer), _relu_kernel,
                lambda g, x, **kw: (where(x > 0, g, 0),),
                scalar="maximum({0}, 0)", category=_EW, onnx="Relu",
                samples=_UNARY_SAMPLES, ref=lambda np, x: np.maximum(x, 0), tf="Relu", tf_name="Relu")
def _abs_infer(x, **_):
    if x.dtype.kind == "c":   # NOTE: |z| is real, of the parts' precision
        return Spec(x.shape, np.dtype(np.float32 if x.dtype == np.complex64 else np.float64))
    return x


ABS = register("abs", _abs_infer, np.abs, lambda g, x, **kw: (g * sign(x),),
               scalar="abs({0})", category=_EW, onnx="Abs", samples=_UNARY_SAMPLES,
               ref=lambda np, x: np.abs(x), tf="Abs", complex=True, tf_name="Abs")


def _sign_infer(x, **_):
    if x.weak is None and x.dtype == np.bool_:
        raise ShapeError(f"sign: expects a number, got bool for {fmt_shape(x)} (NumPy raises "
                         f"too; cast it first)")
    return x


# NOTE: NaN fails both comparisons and is returned as is; 0 and -0.0 give 0, as np.sign does.
# The gradient is zero (torch's and TF's): a leaf gets a zero .grad, not None
SIGN = register("sign", _sign_infer, np.sign, lambda g, x, **kw: (g * 0.0,),
                scalar="where({0} != {0}, {0}, where({0} > 0, 1, where({0} < 0, -1, 0)))",
                category=_EW, onnx="Sign", tf="Sign", samples=_UNARY_SAMPLES, ref=lambda np, x: np.sign(x), tf_name="Sign")

SIN = register("sin", _unary_infer, np.sin, lambda g, x, **kw: (g * cos(x),),
               scalar="sin({0})", category=_EW, floating=True, onnx="Sin", samples=_UNARY_SAMPLES,
               ref=lambda np, x: np.sin(x), tf="Sin", complex=True)
COS = register("cos", _unary_infer, np.cos, lambda g, x, **kw: (-(g * sin(x)),),
               scalar="cos({0})", category=_EW, floating=True, onnx="Cos", samples=_UNARY_SAMPLES,
               ref=lambda np, x: np.cos(x), tf="Cos", complex=True)

EXPM1 = register("expm1", _unary_infer, np.expm1, lambda g, x, out, **kw: (g * (out + 1.0),), reads=("out",),
                 category="other", floating=True, front=("tf",), samples=_UNARY_SAMPLES + (
                     _S((5,), domain=(-1e-6, 1e-6)),),
                 ref=lambda np, x: np.expm1(x), tf="Expm1", complex=True)   # NOTE: exact where exp(x) - 1 cancels

_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf_kernel(x):
    # NOTE: for float32, scipy.special.erf (a dependency) runs a double-precision erf in C and
    # rounds once, as math.erf through frompyfunc does, which boxed every element as a Python
    # float: 0.63 s -> 0.02 s at the GPT's (16, 128, 1024) GELU input, the same float32 values
    # (2M samples). Its float64 erf differs from the C library's (torch's) by up to 3 ulp,
    # so float64 keeps math.erf
    x = np.asarray(x)
    if x.dtype.char == "f":
        import scipy.special   # NOTE: on first use
        return scipy.special.erf(x)
    return np.asarray(_erf_scalar(x), dtype=x.dtype)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
ERF = register("erf", _unary_infer, _erf_kernel,
               lambda g, x, **kw: (g * _TWO_OVER_SQRT_PI * exp(-(x * x)),),
               scalar="erf({0})", category=_EW, floating=True, onnx="Erf", samples=_UNARY_SAMPLES,
               ref=lambda np, x: refs.special(np).erf(x).astype(x.dtype), tf="Erf")


def _erfinv_kernel(x):
    """Giles' single-precision approximation, then two Newton steps on erf in float64:
    within an ulp of float32 and 1e-12 of float64 (numpy has no erfinv). +-1 give +-inf,
    |x| > 1 NaN, as torch."""
    y = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
        lo, hi = w - 2.5, np.sqrt(w) - 3.0
        p = np.where(w < 5.0, _horner(_ERFINV_LO, lo), _horner(_ERFINV_HI, hi)) * y
        for _ in range(2):
            p = p - (np.asarray(_erf_scalar(p), np.float64) - y) / (_TWO_OVER_SQRT_PI * np.exp(-p * p))
        p = np.where(np.abs(y) == 1.0, np.copysign(np.inf, y), p)
    return p.astype(np.asarray(x).dtype)


def _horner(coefs, w):
    p = np.full_like(w, coefs[0])
    for c in coefs[1:]:
        p = c + p * w
    return p


_ERFINV_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
ERFINV = register("erfinv", _unary_infer, _erfinv_kernel,
                  lambda g, x, out, **kw: (g * (0.5 * math.sqrt(math.pi)) * exp(out * out),),
                  category="other", floating=True, front=("tf.math",),
                  samples=tuple(Sample(s.args, domain=(-0.9, 0.9)) for s in _UNARY_SAMPLES),
                  ref=lambda np, x: refs.special(np).erfinv(x).astype(x.dtype))


def _cast_infer(x, dtype, **_):
    return same(x, dtype=dtype)


def _cast_kernel(x, dtype):
    x = np.asarray(x)
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        return x != 0 if np.dtype(dtype).kind == "b" else _real_part(x, dtype)
    return x.astype(dtype, copy=False)


def _real_part(x, dtype):
    """A complex array cast to a real dtype: its real part, with torch's UserWarning at the
    user's line (NumPy's ComplexWarning is not what torch users see)."""
    import warnings
    from .core import user_stacklevel
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                  stacklevel=user_stacklevel())
    return x.real.astype(dtype)


def _cast_vjp(g, x, dtype, **kw):
    if not inexact(np.dtype(x.dtype)):
        return (None,)
    return (cast(g, dtype=str(np.dtype(x.dtype))),)


CAST = register("cast", _cast_infer, _cast_kernel, _cast_vjp, reads=(),
                scalar=lambda dtype: f"cast_{dtype}({{0}})",
                category=_EW, may_alias=True,
                samples=(_S((3, 4), attrs={"dtype": "float64"}),
                                   _S((2,), attrs={"dtype": "int64"}, grad=False)),
                ref=lambda np, x, dtype: x.astype(dtype), alias_layout="same_spec", complex=True, tf_name="Cast")


def _stop_gradient_kernel(x):
    return x


STOP_GRADIENT = register("stop_gradient", _unary_infer, _stop_gradient_kernel, None,
                         scalar="{0}", category=_EW, samples=(_S((3,)),), ref=lambda np, x: x,
                         view=True, inference_identity=True, tf="StopGradient", complex=True)


def _scale_grad_infer(x, s, **_):
    if broadcast("scale_grad", x, s) != tuple(x.shape):
        raise ShapeError(f"scale_grad: the scale {fmt_shape(s)} does not broadcast to "
                         f"{fmt_shape(x)}")
    return x


# NOTE: x itself, whose gradient is scaled by s (torch's embedding(scale_grad_by_freq=True)
# divides each row's gradient by the row's count in the batch): s takes no gradient
def _scale_grad_kernel(x, s):
    if np.broadcast_shapes(np.shape(x), np.shape(s)) != np.shape(x):
        raise ValueError("the scale does not broadcast to x")
    return x


SCALE_GRAD = register("scale_grad", _scale_grad_infer, _scale_grad_kernel,
                      lambda g, x, s, **kw: (g * s, None), category="other", view=True,
                      inference_identity=True,
                      samples=(_S((3, 4), (3, 1), grad=False),
                               _S((3, 1), (3, 4), match="does not broadcast")),
                      ref=lambda np, x, s: x)


def _copy_kernel(x):
    return np.array(x, copy=True)


# NOTE: torch.clone, a result with memory of its own. Front ends end with it where torch
# returns a new tensor and the computation may be a no-op on the input (roll by 0, tile by 1,
# flip as a negative-step slice), so a write through the result never changes the input.
COPY = register("copy", _unary_infer, _copy_kernel, lambda g, x, **kw: (g,), reads=(),
                scalar="{0}", category=_EW, onnx="Identity", samples=_UNARY_SAMPLES,
                ref=lambda np, x: x.copy(), complex=True)


# -- binary -----------------------------------------------------------------------------------
_BINARY_SAMPLES = (
    _S((), ()), _S((3, 4), (3, 4)), _S((3, 4), ()), _S((4, 1), (1, 5)), _S((2, 3, 4), (4,)),
    _S((1,), (3, 1)),
    _S((3, 4), (5,), match=r"cannot broadcast \(3, 4\), \(5,\): dimension -1 is 4 vs 5"),
)


def _add_vjp(g, x, y, needs=(True, True), **kw):
    return (unbroadcast(g, x) if needs[0] else None,
            unbroadcast(g, y) if needs[1] else None)


def _sub_vjp(g, x, y, needs=(True, True), **kw):
    return (unbroadcast(g, x) if needs[0] else None,
            unbroadcast(-g, y) if needs[1] and is_value(y) else None)


def _mul_vjp(g, x, y, needs=(True, True), **kw):
    return (unbroadcast(g * y, x) if needs[0] else None,
            unbroadcast(g * x, y) if needs[1] else None)


def _div_vjp(g, x, y, out=None, needs=(True, True), **kw):
    gx = g / y
    return (unbroadcast(gx, x) if needs[0] else None,
            unbroadcast(-gx * out, y) if needs[1] and is_value(y) else None)


def small_int_power(y):
    """The exponent as a small int (0..4) or None: such powers become multiplications."""
    if np.ndim(y) != 0 or np.iscomplexobj(y):
        return None   # NOTE: a complex exponent, even 2+0j, takes NumPy's complex pow as torch
    v = float(y)
    return int(v) if v in (0.0, 1.0, 2.0, 3.0, 4.0) else None


def _pow_kernel(x, y):
    # NOTE: x ** 3 on negative x takes NumPy's scalar pow path (about 18x slower than x*x*x).
    k = small_int_power(y)
    xk, yk = np.asarray(x).dtype.kind, np.asarray(y).dtype.kind
    if xk == "b" and yk == "b" and type(y) is np.ndarray:
        # NOTE: a bool tensor ** True is a bool, as torch's; a bool tensor exponent is refused
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")   # NOTE: torch's words
    if k is None and np.ndim(y) == 0 and yk in "iu" and xk in "biu" and y < 0:
        # NOTE: as torch, also for an empty x (NumPy checks element by element); the integer
        # read before any cast (uint8 ** -2 is not uint8 ** 254). A graph holds a Python
        # exponent as a 0-d constant, so a 0-d tensor exponent is refused too (torch computes)
        raise ValueError("Integers to negative integer powers are not allowed.")
    if k is None and np.ndim(y) > 0 and np.result_type(x, y).kind in "iu" and \
            np.asarray(y).dtype.kind == "i" and (np.asarray(y) < 0).any():
        return _int_pow_negative(x, np.asarray(y))
    if k is None or np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return np.power(x, y)
    if k == 0:
        return np.ones_like(x, dtype=np.result_type(x, y))
    r = x
    for _ in range(k - 1):
        r = r * x
    return r if k > 1 else np.array(x, dtype=np.result_type(x, y), copy=True)


def _int_pow_negative(x, y):
    """Integer x ** y where a tensor exponent y has negative entries, as torch computes it
    (NumPy raises): x ** -k truncates 1 / x ** k, so it is 1 for x = 1, +-1 for x = -1 (by
    k's parity) and 0 otherwise (0 too, as torch)."""
    neg = y < 0
    dt = np.result_type(x, y)   # NOTE: before x becomes an array (3 ** int8 is int8, as torch's)
    x, y = np.broadcast_arrays(np.asarray(x), y)
    pos = np.power(x, np.where(neg, 0, y)).astype(dt)
    inv = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0)).astype(dt)
    return np.where(neg, inv, pos)


def _pow_vjp(g, x, y, out=None, needs=(True, True), **kw):
    gx = gy = None
    if needs[0]:
        k = small_int_power(y) if not is_value(y) else None
        if k == 2:
            gx = g * 2.0 * x
        elif k == 1:
            gx = g
        else:
            gx = g * y * (x ** (y - 1))
        gx = unbroadcast(gx, x)
    if needs[1] and is_value(y):
        # NOTE: torch's rule: out * log(x), NaN for x < 0, and 0 at x = 0 with y >= 0 (-inf
        # with y < 0); log is taken of positive values only (no NumPy warning)
        lg = where(x > 0, log(where(x > 0, x, 1.0)), where(x == 0, -np.inf, np.nan))
        term = out * lg
        gy = unbroadcast(g * where(x == 0, where(y >= 0, 0.0, term), term), y)
    return gx, gy


def _maximum_vjp(g, x, y, **kw):
    m = x >= y
    return unbroadcast(where(m, g, 0.0), x), unbroadcast(where(m, 0.0, g), y)


def _minimum_vjp(g, x, y, **kw):
    m = x <= y
    return unbroadcast(where(m, g, 0.0), x), unbroadcast(where(m, 0.0, g), y)


def _scalar_in_opmath(ufunc):
    """ufunc reading a Python number second operand beside a float16 / bfloat16 array in
    float32 and rounding the result once, as torch's mul and div do (`Op.scalar_opmath`,
    rules.torch_scalar_opmath; a 0-d tensor operand is cast by the engine)."""
    def kernel(x, y, **kw):
        # NOTE: on eager's dispatch path: two type tests for an array operand pair
        ty = type(y)
        if (ty is float or ty is int) and type(x) is np.ndarray and x.dtype in HALF:
            return ufunc(x.astype(np.float32), y, **kw).astype(x.dtype)
        return ufunc(x, y, **kw)
    kernel.__name__ = ufunc.__name__
    return kernel


_POW_SAMPLES = (Sample(((3, 4), 3), domain=(-2.0, 2.0)), Sample(((3, 4), 2)),
                Sample(((3, 4), 0.5), domain=(0.2, 3.0)),
                Sample(((3, 4), (3, 4)), domain=(0.2, 3.0)), Sample(((4, 1), (1, 2)), domain=(0.5, 2.0)))

ADD = register("add", _binary_infer("add"), np.add, _add_vjp, promote="common", reads=(), scalar="({0} + {1})", category=_EW,
               onnx="Add",
               samples=_BINARY_SAMPLES, ref=lambda np, x, y: x + y, tf="AddV2", complex=True, tf_name="add")
SUB = register("sub", _binary_infer("sub"), np.subtract, _sub_vjp, promote="common", reads=(), scalar="({0} - {1})",
               category=_EW, onnx="Sub", tf="Sub", samples=_BINARY_SAMPLES, ref=lambda np, x, y: x - y, complex=True, tf_name="sub")
def _mul_reads(needs):
    """x * y: x's gradient reads y, y's reads x."""
    return tuple(k for k in (0, 1) if needs is None or needs[1 - k])


MUL = register("mul", _binary_infer("mul"), _scalar_in_opmath(np.multiply), _mul_vjp, promote="common",
               reads=_mul_reads,
               scalar="({0} * {1})", scalar_opmath=True, category=_EW, onnx="Mul", tf="Mul", samples=_BINARY_SAMPLES, ref=lambda np, x, y: x * y, complex=True, tf_name="mul")
DIV = register("div", _div_infer, _scalar_in_opmath(np.true_divide), _div_vjp, promote="divide", reads=(1, "out"),
               scalar="({0} / {1})", scalar_opmath=True, category=_EW,
               onnx="Div",
               samples=tuple(Sample(s.args, domain=(0.5, 2.0), match=s.match)
                             for s in _BINARY_SAMPLES), ref=lambda np, x, y: x / y, tf="RealDiv", complex=True, tf_name="truediv")
POW = register("pow", _binary_infer("pow"), _pow_kernel, _pow_vjp, promote="common", scalar="({0} ** {1})",
               category=_EW, onnx="Pow", tf="Pow", samples=_POW_SAMPLES, ref=lambda np, x, y: np.power(x, y), complex=True, tf_name="pow")
MAXIMUM = register("maximum", _binary_infer("maximum"), np.maximum, _maximum_vjp, promote="common",
                   scalar="maximum({0}, {1})", category=_EW, onnx="Max", samples=_BINARY_SAMPLES,
                   ref=lambda np, x, y: np.maximum(x, y), tf="Maximum", tf_name="Maximum")
MINIMUM = register("minimum", _binary_infer("minimum"), np.minimum, _minimum_vjp, promote="common",
                   scalar="minimum({0}, {1})", category=_EW, onnx="Min", samples=_BINARY_SAMPLES,
                   ref=lambda np, x, y: np.minimum(x, y), tf="Minimum", tf_name="Minimum")



def _atan2_infer(y, x, **_):
    spec = _binary_infer("atan2")(y, x)
    return spec if floating(spec.dtype) else Spec(spec.shape, np.dtype(np.float32))


def _atan2_kernel(y, x):
    # NOTE: as torch: integers give float32; an integer or Python-number operand takes the
    # float dtype of the other
    floats = [a.dtype for a in (y, x) if isinstance(a, np.ndarray) and floating(a.dtype)]
    dt = np.result_type(*floats) if floats else np.dtype(np.float32)
    return np.arctan2(np.asarray(y, dt), np.asarray(x, dt))


def _atan2_vjp(g, y, x, needs=(True, True), **kw):
    d = y * y + x * x
    zero = eq(d, 0.0)
    r = where(zero, 0.0, g / where(zero, 1.0, d))    # NOTE: 0 at (0, 0), as torch
    return (unbroadcast(r * x, y) if needs[0] else None,
            unbroadcast(-(r * y), x) if needs[1] and is_value(x) else None)


ATAN2 = register("atan2", _atan2_infer, _atan2_kernel, _atan2_vjp, category="other",
                 samples=tuple(Sample(s.args, domain=(0.3, 2.0), match=s.match)
                               for s in _BINARY_SAMPLES), ref=lambda np, y, x: np.arctan2(y, x), tf="Atan2")

_CMP_SAMPLES = tuple(Sample(s.args, grad=False, match=s.match) for s in _BINARY_SAMPLES)
# NOTE: ONNX has no NotEqual: the exporter writes ne as Not(Equal)
for _name, _kernel, _sym, _onnx, _tf in (
        ("eq", np.equal, "==", "Equal", "Equal"), ("ne", np.not_equal, "!=", None, "NotEqual"),
        ("lt", np.less, "<", "Less", "Less"), ("le", np.less_equal, "<=", "LessOrEqual", "LessEqual"),
        ("gt", np.greater, ">", "Greater", "Greater"),
        ("ge", np.greater_equal, ">=", "GreaterOrEqual", "GreaterEqual")):
    register(_name, _binary_infer(_name, np.bool_), _kernel, None, promote="common",
             scalar=f"({{0}} {_sym} {{1}})", category=_EW, onnx=_onnx, tf=_tf, samples=_CMP_SAMPLES,
             ref=eval(f"lambda np, x, y: x {_sym} y"),  # noqa: S307 - a fixed operator table
             complex=_name in ("eq", "ne"), tf_name=_tf)   # NOTE: complex numbers are not ordered


def _where_infer(c, x, y, **_):
    if c.weak is None and c.dtype != np.bool_:
        raise ShapeError(f"where: condition must be bool, got {c.dtype} for {fmt_shape(c)}")
    shape = broadcast("where", c, x, y)
    return Spec(shape, result_dtype(x, y))


def _where_vjp(g, c, x, y, **kw):
    return (None,
            unbroadcast(where(c, g, 0.0), x) if is_value(x) else None,
            unbroadcast(where(c, 0.0, g), y) if is_value(y) else None)


_NATIVE_WHERE = 4096   # NOTE: from this size the numba loop (0.15 ns per element) beats
# np.where (about 1 ns per float32 element) despite its 2 us call


def _where_kernel(c, x, y):
    if type(c) is np.ndarray and c.size >= _NATIVE_WHERE and c.dtype == np.bool_ \
            and c.flags.c_contiguous:
        from . import native
        out = native.where(c, x, y)
        if out is not None:
            return out
    return np.where(c, x, y)


WHERE = register(
    "where", _where_infer, _where_kernel, _where_vjp, promote="where", reads=(0,), scalar="where({0}, {1}, {2})", category=_EW,
    onnx="Where",
    samples=(Sample((np.array([True, False, True]), (3,), (3,))),
             Sample((np.array([[True], [False]]), (2, 3), ())),
             Sample((np.array([True, False]), (2,), (3,)),
                    match=r"cannot broadcast \(2,\), \(2,\), \(3,\)")),
    ref=lambda np, c, x, y: np.where(c, x, y), complex=True)

def _rounding(name, fn, onnx):
    """floor / ceil / round: integers pass through; the gradient is zero (as torch's). ONNX
    and TF name them alike (TF's Round is also half to even)."""
    def kernel(x):
        return np.array(x, copy=True) if np.asarray(x).dtype.kind in "biu" else fn(x)
    return register(name, _unary_infer, kernel, lambda g, x, **kw: (g * 0.0,),
                    category="other", onnx=onnx, tf=onnx, samples=_UNARY_SAMPLES,
                    ref=lambda np, x: getattr(np, name)(x))


FLOOR, CEIL, ROUND = (_rounding("floor", np.floor, "Floor"), _rounding("ceil", np.ceil, "Ceil"),
                      _rounding("round", np.round, "Round"))   # NOTE: half to even, as torch



# -- floor division and its remainder (TF's FloorDiv, FloorMod; Python's // and %) -------------
def _int_divisor(name, x, y):
    if np.result_type(x, y) == np.bool_:
        raise TypeError(f"{name}: not implemented for bool inputs (as torch's and TF's)")
    if np.asarray(x).dtype.kind in "biu" and np.asarray(y).dtype.kind in "biu" and \
            np.any(np.asarray(y) == 0):   # NOTE: True // 0 too
        raise ZeroDivisionError(f"{name}: integer division by zero")


def _divmod_infer(name):
    """floordiv / floormod: bool operands are refused (NumPy's kernel would give int8)."""
    rule = _binary_infer(name)

    def infer(x, y, **_):
        out = rule(x, y)
        if out.dtype == np.bool_:
            raise ShapeError(f"{name}: bool inputs {fmt_shape(x)}, {fmt_shape(y)} are not "
                             f"supported (as torch's and TF's); cast them to an integer dtype")
        return out
    return infer


def _floordiv_kernel(x, y, exact=False):
    """floor(x / y), TF's FloorDiv (1 // 0.1 is 10); exact=True: the floor of the exact
    quotient, Python's float // and torch's div_floor_floating (1 // 0.1 is 9), each step in
    the operands' dtype (float16 and bfloat16 round every one, as c10::Half does)."""
    _int_divisor("floordiv", x, y)
    if not inexact(np.result_type(x, y)):
        return np.floor_divide(x, y)
    if not exact:
        return np.floor(np.divide(x, y))
    dt = np.result_type(x, y)
    x, y = np.asarray(x, dt), np.asarray(y, dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        mod = np.fmod(x, y)
        div = (x - mod) / y
        div = np.where((mod != 0) & ((y < 0) != (mod < 0)), div - dt.type(1), div)
        low = np.floor(div)
        low = np.where(div - low > dt.type(0.5), low + dt.type(1), low)
        low = np.where(div != 0, low, np.copysign(dt.type(0), x / y))
        return np.where(y == 0, x / y, low).astype(dt, copy=False)


def _floormod_kernel(x, y):
    _int_divisor("floormod", x, y)
    return np.mod(x, y)   # NOTE: the divisor's sign, as TF's FloorMod (C's fmod, then + y)


def _floormod_vjp(g, x, y, needs=(True, True), **kw):
    return (unbroadcast(g, x) if needs[0] else None,
            unbroadcast(-(g * floordiv(x, y, exact=True)), y) if needs[1] and is_value(y)
            else None)


def _truncatemod_kernel(x, y):
    _int_divisor("truncatemod", x, y)
    with np.errstate(invalid="ignore"):
        return np.fmod(x, y)   # NOTE: C's fmod: exact, the dividend's sign


def _truncatemod_vjp(g, x, y, needs=(True, True), **kw):
    return (unbroadcast(g, x) if needs[0] else None,
            unbroadcast(-(g * _toward_zero(div(x, y))), y) if needs[1] and is_value(y)
            else None)


def _toward_zero(q):
    return where(ge(q, 0), FLOOR.fn(q), CEIL.fn(q))


_DIV_SAMPLES = tuple(Sample(s.args, domain=(-3.0, -0.3) if k % 2 else (0.3, 3.0), match=s.match)
                     for k, s in enumerate(_BINARY_SAMPLES))
FLOORDIV = register("floordiv", _divmod_infer("floordiv"), _scalar_in_opmath(_floordiv_kernel),
                    lambda g, x, y, **kw: (unbroadcast(g * 0.0, x), unbroadcast(g * 0.0, y)),
                    category="other", promote="common", scalar_opmath=True,
                    samples=_DIV_SAMPLES + tuple(
                        Sample(s.args, {"exact": True}, domain=s.domain)
                        for s in _DIV_SAMPLES[:2]),
                    ref=lambda np, x, y, exact=False: np.floor_divide(x, y) if exact
                    else np.floor(x / y), tf="FloorDiv", tf_name="FloorDiv")
FLOORMOD = register("floormod", _divmod_infer("floormod"), _floormod_kernel, _floormod_vjp,
                    category="other", promote="common", samples=_DIV_SAMPLES,
                    ref=lambda np, x, y: x - np.floor(x / y) * y, tf="FloorMod", tf_name="FloorMod")

# NOTE: torch.fmod, TF's TruncateMod and ONNX's Mod(fmod=1): the remainder of the quotient
# truncated toward zero, computed exactly (x - trunc(x / y) * y rounds twice)
TRUNCATEMOD = register("truncatemod", _divmod_infer("truncatemod"), _truncatemod_kernel,
                       _truncatemod_vjp, category="other", promote="common", samples=_DIV_SAMPLES,
                       ref=lambda np, x, y: np.fmod(x, y), tf="TruncateMod")

# public functions: ops.add(x, y), ops.exp(x), …
neg, exp, log, sqrt, tanh, sigmoid, relu, abs, sign, erf = (  # noqa: A001 - op names
    NEG.fn, EXP.fn, LOG.fn, SQRT.fn, TANH.fn, SIGMOID.fn, RELU.fn, ABS.fn, SIGN.fn, ERF.fn)
log1p, expm1, floordiv, floormod = LOG1P.fn, EXPM1.fn, FLOORDIV.fn, FLOORMOD.fn
truncatemod = TRUNCATEMOD.fn
sin, cos, softplus, erfinv, atan2 = SIN.fn, COS.fn, SOFTPLUS.fn, ERFINV.fn, ATAN2.fn
sigmoid_grad, tanh_grad = SIGMOID_GRAD.fn, TANH_GRAD.fn
add, sub, mul, div, pow, maximum, minimum, where = (  # noqa: A001
    ADD.fn, SUB.fn, MUL.fn, DIV.fn, POW.fn, MAXIMUM.fn, MINIMUM.fn, WHERE.fn)
eq, ne, lt, le, gt, ge = (REGISTRY[n].fn for n in ("eq", "ne", "lt", "le", "gt", "ge"))
stop_gradient, scale_grad = STOP_GRADIENT.fn, SCALE_GRAD.fn
copy = COPY.fn
floor, ceil, round = FLOOR.fn, CEIL.fn, ROUND.fn  # noqa: A001


def cast(x, dtype):
    return bind(CAST, x, dtype=str(np.dtype(dtype)))


CAST.fn = cast

