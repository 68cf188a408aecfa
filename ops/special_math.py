"""More special functions, as torch.special names them: the modified Bessel functions (i0, i1,
their exponentially scaled forms), the normal distribution's inverse CDF and log CDF (ndtri,
log_ndtr), erfcx, the Bessel functions of the first and second kind, Airy's Ai, Hurwitz's zeta,
the regularised incomplete gamma functions, and the classical orthogonal polynomials.

Kernels compute in float64 with scipy.special (SciPy comes with scikit-learn, a dependency) and
return the input's dtype; the gradients that torch defines are written in ops below. The
polynomials are evaluated by their three-term recurrences, with n truncated to an integer and
0 for negative n, as torch's.

>>> import numpy as np
>>> from dualgrad import ops
>>> np.round(ops.i0(np.array([0.0, 1.0])), 6).tolist(), ops.chebyshev_polynomial_t(np.array([0.5]), 2).tolist()
([1.0, 1.266066], [-0.5])
"""
from __future__ import annotations

import math

import numpy as np

from . import refs
from .core import Sample, Spec, primitive, register
from .elementwise import eq, exp, log, sign, unbroadcast, where
from .special import lgamma
from .rules import broadcast, result_dtype, same

_SAMPLES = (Sample(((),)), Sample(((1,),)), Sample(((3, 4),)), Sample(((2, 1, 3),)))
_UNIT = tuple(Sample(s.args, domain=(0.05, 0.95)) for s in _SAMPLES)
_NODIFF = tuple(Sample(s.args, domain=(0.2, 3.0), grad=False) for s in _SAMPLES)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _sp():
    import scipy.special   # NOTE: imported on first use: most programs never call these
    return scipy.special


def _infer(x, **_):
    return same(x)


def _float64(fn):
    """A kernel: fn(scipy.special) applied in float64, the result in the input's dtype."""
    def kernel(x):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return np.asarray(fn(_sp())(x.astype(np.float64))).astype(x.dtype)
    return kernel


def _unary(name, fn, vjp=None, samples=_SAMPLES, front=(), ref=None):
    op = register(name, _infer, _float64(fn), vjp, category="other", floating=True, front=front,
                  samples=samples if vjp else tuple(
                      Sample(s.args, domain=s.domain, grad=False) for s in samples), ref=ref)
    return primitive(op)


def _at_zero(x, value, expr):
    """expr(x) with x == 0 replaced by `value` (expr's limit there)."""
    zero = eq(x, 0)
    return where(zero, value, expr(where(zero, 1.0, x)))


i0 = _unary("i0", lambda sp: sp.i0, lambda g, x, **kw: (g * i1(x),),
            front={"tf.math": "bessel_i0"})
i0e = _unary("i0e", lambda sp: sp.i0e,
             lambda g, x, **kw: (g * (i1e(x) - sign(x) * i0e(x)),), front={"tf.math": "bessel_i0e"})
i1 = _unary("i1", lambda sp: sp.i1,
            lambda g, x, **kw: (g * _at_zero(x, 0.5, lambda v: i0(v) - i1(v) / v),),
            front={"tf.math": "bessel_i1"})
i1e = _unary("i1e", lambda sp: sp.i1e, lambda g, x, **kw: (g * _at_zero(
    x, 0.5, lambda v: i0e(v) - i1e(v) * (sign(v) + 1.0 / v)),), front={"tf.math": "bessel_i1e"})
ndtri = _unary("ndtri", lambda sp: sp.ndtri,
               lambda g, x, out, **kw: (g * _SQRT_2PI * exp(out * out * 0.5),), samples=_UNIT,
               front=("tf.math",))
log_ndtr = _unary("log_ndtr", lambda sp: sp.log_ndtr,
                  lambda g, x, out, **kw: (g * exp(x * x * -0.5 - out) / _SQRT_2PI,))
erfcx = _unary("erfcx", lambda sp: sp.erfcx,
               lambda g, x, out, **kw: (g * (2.0 * x * out - 2.0 / math.sqrt(math.pi)),))
# NOTE: tf.math.erfcinv; the reference is TF's own formula, -ndtri(x / 2) / sqrt(2)
erfcinv = _unary("erfcinv", lambda sp: sp.erfcinv,
                 lambda g, x, out, **kw: (g * (-0.5 * math.sqrt(math.pi)) * exp(out * out),),
                 samples=tuple(Sample(s.args, domain=(0.05, 1.95)) for s in _SAMPLES),
                 front=("tf.math",),
                 ref=lambda np, x: (-refs.special(np).ndtri(x / 2) / np.sqrt(2)).astype(x.dtype))

# torch defines no gradient for these: they are values only
bessel_j0 = _unary("bessel_j0", lambda sp: sp.j0)
bessel_j1 = _unary("bessel_j1", lambda sp: sp.j1)
bessel_y0 = _unary("bessel_y0", lambda sp: sp.y0, samples=_NODIFF)
bessel_y1 = _unary("bessel_y1", lambda sp: sp.y1, samples=_NODIFF)
modified_bessel_k0 = _unary("modified_bessel_k0", lambda sp: sp.k0, samples=_NODIFF)
modified_bessel_k1 = _unary("modified_bessel_k1", lambda sp: sp.k1, samples=_NODIFF)
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0", lambda sp: sp.k0e,
                                   samples=_NODIFF)
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1", lambda sp: sp.k1e,
                                   samples=_NODIFF)
airy_ai = _unary("airy_ai", lambda sp: lambda v: sp.airy(v)[0])
spherical_bessel_j0 = _unary("spherical_bessel_j0",
                             lambda sp: lambda v: sp.spherical_jn(0, v))


# -- binary: both inputs of one floating dtype (the frontend promotes) -------------------------
def _binary_infer(name):
    def infer(x, y, **_):
        return Spec(broadcast(name, x, y), result_dtype(x, y))
    return infer


def _binary(name, fn, samples, vjp=None):
    def kernel(x, y):
        dt = np.result_type(x, y)   # NOTE: before asarray: a Python number is weak
        x, y = np.asarray(x), np.asarray(y)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64), y.astype(np.float64))).astype(dt)
    return primitive(register(name, _binary_infer(name), kernel, vjp, category="other",
                              samples=samples, ref=None))


def _incomplete_gamma_vjp(name, sign):
    """igamma / igammac: differentiable in x (+- the gamma density x^(a-1) e^-x / Gamma(a)),
    not in a, as torch's (its NotImplementedError, when a needs a gradient)."""
    def vjp(g, a, x, out, needs=(True, True), **_):
        if needs[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        density = exp((a - 1.0) * log(x) - x - lgamma(a))
        return None, unbroadcast(g * density if sign > 0 else -(g * density), x)
    return vjp


_PAIRS = (Sample(((3, 4), (3, 4)), domain=(0.5, 3.0), grad=False),
          Sample(((2, 1, 3), (4, 1)), domain=(0.5, 3.0), grad=False))
zeta = _binary("zeta", lambda x, q: _sp().zeta(x, q), _PAIRS)
igamma = _binary("igamma", lambda a, x: _sp().gammainc(a, x), _PAIRS,
                 _incomplete_gamma_vjp("igamma", +1))
igammac = _binary("igammac", lambda a, x: _sp().gammaincc(a, x), _PAIRS,
                  _incomplete_gamma_vjp("igammac", -1))




def _exact_binary(name, fn, vjp, samples):
    """A binary op computed in the inputs' (common) dtype: gcd and lcm of integers, nextafter."""
    return primitive(register(name, _binary_infer(name), fn, vjp, category="other",
                              samples=samples, ref=None))


_INT_PAIRS = (Sample((np.array([[-4, 0, 9], [12, 7, 0]]), np.array([6, 0, 3])), grad=False),)
gcd = _exact_binary("gcd", np.gcd, None, _INT_PAIRS)
lcm = _exact_binary("lcm", np.lcm, None, _INT_PAIRS)
# NOTE: torch passes the gradient through to x unchanged (and none to `other`)
nextafter = _exact_binary("nextafter", np.nextafter,
                          lambda g, x, y, **kw: (unbroadcast(g, x), None),
                          (Sample(((3, 4), (3, 4))), Sample(((2, 1, 3), (4, 1)))))


def _frexp_infer(x, **_):
    return Spec(x.shape, np.dtype(np.int32))


# frexp's exponent (int32, no gradient); the mantissa is x * 2**-exponent, exactly
frexp_exponent = primitive(register(
    "frexp_exponent", _frexp_infer, lambda x: np.frexp(np.asarray(x))[1].astype(np.int32),
    None, category="other", samples=tuple(Sample(s.args, grad=False) for s in _SAMPLES),
    ref=lambda np, x: np.frexp(x)[1].astype(np.int32)))


# -- the orthogonal polynomials p_n(x): p_0, p_1 and a three-term recurrence ------------------
def _chebyshev(first):
    return (lambda x: np.ones_like(x), first, lambda x, k, p, q: 2 * x * p - q)


_POLYS = {
    "chebyshev_polynomial_t": _chebyshev(lambda x: x),
    "chebyshev_polynomial_u": _chebyshev(lambda x: 2 * x),
    "chebyshev_polynomial_v": _chebyshev(lambda x: 2 * x - 1),
    "chebyshev_polynomial_w": _chebyshev(lambda x: 2 * x + 1),
    "hermite_polynomial_h": (lambda x: np.ones_like(x), lambda x: 2 * x,
                             lambda x, k, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": (lambda x: np.ones_like(x), lambda x: x,
                              lambda x, k, p, q: x * p - k * q),
    "laguerre_polynomial_l": (lambda x: np.ones_like(x), lambda x: 1 - x,
                              lambda x, k, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": (lambda x: np.ones_like(x), lambda x: x,
                              lambda x, k, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}


def _recurrence(x, n, rule):
    """p_n(x) elementwise for integer n >= 0 (0 where n < 0)."""
    p0, p1, step = rule
    x, n = np.broadcast_arrays(x, n)
    prev, cur = p0(x), p1(x)
    out = np.where(n == 0, prev, 0.0)
    out = np.where(n == 1, cur, out)
    for k in range(1, int(n.max(initial=0))):
        prev, cur = cur, step(x, k, cur, prev)
        out = np.where(n == k + 1, cur, out)
    return out


def _poly_kernel(name, shifted):
    rule = _POLYS[name]

    def kernel(x, n):
        dt = np.result_type(x, n)
        x, n = np.asarray(x), np.asarray(n)
        v = x.astype(np.float64)
        with np.errstate(all="ignore"):
            out = _recurrence(2 * v - 1 if shifted else v,
                              np.trunc(np.nan_to_num(n.astype(np.float64))).astype(np.int64),
                              rule)
        return out.astype(dt)
    return kernel


_POLY_SAMPLES = (Sample(((3, 4), 3), grad=False), Sample(((2, 1, 3), 0), grad=False),
                 Sample(((5,), 6), domain=(-1.0, 1.0), grad=False))


def _poly(name, shifted=False):
    full = f"shifted_{name}" if shifted else name
    return primitive(register(full, _binary_infer(full), _poly_kernel(name, shifted), None,
                              category="other", samples=_POLY_SAMPLES, ref=None))


chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, \
    chebyshev_polynomial_w = (_poly(f"chebyshev_polynomial_{c}") for c in "tuvw")
shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v, \
    shifted_chebyshev_polynomial_w = (_poly(f"chebyshev_polynomial_{c}", True) for c in "tuvw")
hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p = (
    _poly(n) for n in ("hermite_polynomial_h", "hermite_polynomial_he",
                       "laguerre_polynomial_l", "legendre_polynomial_p"))

__all__ = ["i0", "i0e", "i1", "i1e", "ndtri", "log_ndtr", "erfcx", "bessel_j0", "bessel_j1",
           "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai",
           "spherical_bessel_j0", "zeta", "igamma", "igammac", "gcd", "lcm", "nextafter",
           "frexp_exponent", *(
               p for n in _POLYS for p in (n, f"shifted_{n}") if p in globals())]
