"""Draws from the gamma family, reparameterised, as torch.distributions samples Gamma, Beta and
Dirichlet: each draw is a pure function of its parameters and an integer `seed` input (the
caller draws the seed from its generator, so a compiled function draws a new one per call),
and its gradient is the implicit one, d sample / d parameter at the sample drawn.

- `standard_gamma(alpha, seed)`: Gamma(alpha, 1) draws, at least the dtype's smallest normal
  number (torch's `_standard_gamma`); gradient `standard_gamma_grad(alpha, x)`.
- `standard_gamma_grad(alpha, x)`: dx/dalpha = -(dP(alpha, x)/dalpha) / p(alpha, x), P the
  gamma CDF and p its density (torch's `_standard_gamma_grad`).
- `sample_dirichlet(alpha, seed)`: gammas normalised over the last axis, clamped to
  [tiny, 1 - eps] (torch's `_sample_dirichlet`); gradient through `dirichlet_grad`.
- `dirichlet_grad(x, alpha, total)`: the Beta(alpha, total - alpha) draw's dx/dalpha divided
  by 1 - x (torch's `_dirichlet_grad`), the factor torch's Dirichlet backward uses.
- `sample_poisson(rate, seed)`, `sample_binomial(count, probs, seed)`: counts, not
  differentiable (torch's `poisson` and `_sample_binomial`).

torch evaluates the two gradients with fitted approximations (relative error up to about 3e-4
for the gamma and 4e-3 for the Dirichlet factor); here both come from the CDF itself,
differentiated in forward mode through its series and continued fractions (they agree with
scipy's CDFs differentiated by finite differences to about 1e-8, that check's own accuracy).

>>> import numpy as np
>>> from dualgrad import ops
>>> np.round(ops.standard_gamma_grad(np.array([1.0, 2.5]), np.array([0.5, 2.0])), 6).tolist()
[0.806979, 0.953463]
"""
from __future__ import annotations

import math

import numpy as np

from .core import Sample, Spec, ShapeError, primitive, register
from .elementwise import mul, sub
from .reduce import sum as _sum
from .rules import broadcast, shapes_str
from .special import _digamma_kernel

__all__ = ["standard_gamma", "standard_gamma_grad", "sample_dirichlet", "dirichlet_grad",
           "sample_poisson", "sample_binomial"]

_SEED = np.array(20240517, np.int64)


# -- the gamma CDF and its derivative ----------------------------------------------------
def _gamma_series(a, x):
    """S and dS/da for P(a, x) = x^a e^-x / Gamma(a + 1) * S below the bulk, where
    S = sum_n x^n / ((a + 1) ... (a + n)), summed term by term until every term is negligible."""
    c, d = np.ones_like(a), np.zeros_like(a)
    s, ds = c.copy(), d.copy()
    live = np.arange(a.size)
    for n in range(1, 200000):
        aa, xx = a[live], x[live]
        r = xx / (aa + n)
        d[live] = r * (d[live] - c[live] / (aa + n))
        c[live] = c[live] * r
        s[live] += c[live]
        ds[live] += d[live]
        done = (c[live] <= 1e-17 * s[live]) & (np.abs(d[live]) <= 1e-17 * np.abs(ds[live]))
        live = live[~done]
        if live.size == 0:
            break
    return s, ds


def _gamma_fraction(a, x, depth=40):
    """C and dC/da for Q(a, x) = x^a e^-x / Gamma(a) * C in the upper tail, with Legendre's
    continued fraction C = 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)), evaluated from its
    tail up."""
    u, du = x + 2 * depth + 1 - a, -np.ones_like(a)
    for k in range(depth, 0, -1):
        num, dnum = k * (k - a), -float(k)
        u, du = x + 2 * k - 1 - a - num / u, -1.0 - (dnum * u - num * du) / (u * u)
    return 1.0 / u, -du / (u * u)


def _gamma_regions(alpha, x):
    """alpha and x broadcast and flattened (float64), with the masks of the series region (x
    below a + 1 + 4 sqrt(a): the fraction converges slowly near the bulk) and the tail."""
    shape = np.broadcast_shapes(np.shape(alpha), np.shape(x))
    a, v = (np.broadcast_to(np.asarray(t, np.float64), shape).ravel() for t in (alpha, x))
    with np.errstate(all="ignore"):
        ok = (a > 0) & (v > 0) & np.isfinite(v)
        low = ok & (v < a + 1 + 4 * np.sqrt(a))
    return shape, a, v, low, ok & ~low


def _standard_gamma_grad_kernel(alpha, x):
    dtype = np.result_type(alpha, x)
    shape, a, v, low, high = _gamma_regions(alpha, x)
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        s, ds = _gamma_series(a[low], v[low])
        out[low] = -(v[low] / a[low]) * (s * (np.log(v[low]) - _digamma_kernel(a[low] + 1.0)) + ds)
        c, dc = _gamma_fraction(a[high], v[high])
        out[high] = v[high] * (c * (np.log(v[high]) - _digamma_kernel(a[high])) + dc)
    out[(v == 0) & (a > 0)] = 0.0                    # NOTE: torch's value at a zero draw
    return out.reshape(shape).astype(dtype)


# -- the beta CDF's derivative ------------------------------------------------------------
def _beta_fraction(a, b, x, da, db):
    """The incomplete beta function's continued fraction 1 / (1 + d1 / (1 + d2 / ...)), with
    I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) times it, and its derivative along (da, db)."""
    depth = 2 * int(20 + 3 * math.sqrt(float(np.max(a + b, initial=1.0))))
    t, dt = np.ones_like(x), np.zeros_like(x)
    for j in range(depth, 0, -1):
        m = j // 2
        if j % 2:
            num = -(a + m) * (a + b + m) * x
            dnum = -(da * (a + b + m) + (a + m) * (da + db)) * x
            den, dden = (a + 2 * m) * (a + 2 * m + 1), da * (2 * a + 4 * m + 1)
        else:
            num, dnum = m * (b - m) * x, m * db * x
            den, dden = (a + 2 * m - 1) * (a + 2 * m), da * (2 * a + 4 * m - 1)
        q, dq = num / den, (dnum * den - num * dden) / (den * den)
        t, dt = 1.0 + q / t, (dq * t - q * dt) / (t * t)
    return 1.0 / t, -dt / (t * t)


def _beta_grad(x, a, b):
    """dx/da of a Beta(a, b) draw x with b held fixed: -(dI_x(a, b)/da) / density, from the
    fraction in x when x is left of its mean, else in 1 - x by I_x(a, b) = 1 - I_1-x(b, a)."""
    y = 1.0 - x
    lx, psi = np.log(x), _digamma_kernel(a + b) - _digamma_kernel(a)
    left = x < (a + 1) / (a + b + 2)
    out = np.empty_like(x)
    c, dc = _beta_fraction(a[left], b[left], x[left], 1.0, 0.0)
    out[left] = -(x * y / a)[left] * (c * (lx[left] - 1 / a[left] + psi[left]) + dc)
    r = ~left
    c, dc = _beta_fraction(b[r], a[r], y[r], 0.0, 1.0)
    out[r] = (x * y / b)[r] * (c * (lx[r] + psi[r]) + dc)
    return out


def _dirichlet_grad_kernel(x, alpha, total):
    dtype = np.result_type(x, alpha, total)
    shape = np.broadcast_shapes(np.shape(x), np.shape(alpha), np.shape(total))
    v, a, t = (np.broadcast_to(np.asarray(u, np.float64), shape).ravel()
               for u in (x, alpha, total))
    out = np.full(v.shape, np.nan)
    with np.errstate(all="ignore"):
        ok = (a > 0) & (t > a) & (v > 0) & (v < 1)
        out[ok] = _beta_grad(v[ok], a[ok], t[ok] - a[ok]) / (1.0 - v[ok])
    return out.reshape(shape).astype(dtype)


# -- the draws ----------------------------------------------------------------------------
def _rng(seed):
    return np.random.default_rng(int(seed))


def _standard_gamma_kernel(alpha, seed):
    a = np.asarray(alpha)
    x = np.asarray(_rng(seed).standard_gamma(a.astype(np.float64)))
    return np.maximum(x.astype(a.dtype), np.finfo(a.dtype).tiny)


def _dirichlet_kernel(alpha, seed):
    a = np.asarray(alpha)
    g = np.asarray(_rng(seed).standard_gamma(a.astype(np.float64)))
    with np.errstate(all="ignore"):
        x = (g / g.sum(-1, keepdims=True)).astype(a.dtype)
    fi = np.finfo(a.dtype)
    return np.clip(x, fi.tiny, 1 - fi.eps)


def _poisson_kernel(rate, seed):
    r = np.asarray(rate)
    return np.asarray(_rng(seed).poisson(r.astype(np.float64))).astype(r.dtype)


def _binomial_kernel(count, probs, seed):
    dtype = np.result_type(count, probs)
    n, p = np.broadcast_arrays(np.asarray(count, np.float64), np.asarray(probs, np.float64))
    return np.asarray(_rng(seed).binomial(n.astype(np.int64), np.clip(p, 0.0, 1.0))).astype(dtype)


# -- shape rules --------------------------------------------------------------------------
def _seeded(name, nparams):
    def infer(*specs, **_):
        params, seed = specs[:nparams], specs[nparams]
        if seed.shape != () or seed.dtype.kind not in "iu":
            raise ShapeError(f"{name}: the seed must be a 0-d integer, got "
                             f"{shapes_str(seed)} {seed.dtype}")
        if any(s.dtype.kind != "f" for s in params):
            raise ShapeError(f"{name}: the parameters must be floating point, got "
                             f"{', '.join(str(s.dtype) for s in params)}")
        if name == "sample_dirichlet" and len(params[0].shape) < 1:
            raise ShapeError(f"{name}: alpha must have at least one dim (the categories), "
                             f"got {shapes_str(params[0])}")
        shape = broadcast(name, *params) if nparams > 1 else params[0].shape
        return Spec(shape, np.result_type(*(s.dtype for s in params)))
    return infer


def _grad_infer(name):
    def infer(*specs, **_):
        return Spec(broadcast(name, *specs), np.result_type(*(s.dtype for s in specs)))
    return infer


# -- references (the tests' oracle: the CDF differentiated numerically by scipy) -------------
def _gamma_grad_ref(np_, alpha, x):
    from scipy import special as sp
    dtype, alpha, x = np.result_type(alpha, x), np.float64(alpha), np.float64(x)
    h = 1e-6 * alpha
    up, down = np_.where(x < alpha, sp.gammainc(alpha + h, x), -sp.gammaincc(alpha + h, x)), \
        np_.where(x < alpha, sp.gammainc(alpha - h, x), -sp.gammaincc(alpha - h, x))
    dens = np_.exp((alpha - 1) * np_.log(x) - x - sp.gammaln(alpha))
    return (-(up - down) / (2 * h) / dens).astype(dtype)


def _dirichlet_grad_ref(np_, x, alpha, total):
    from scipy import special as sp
    dtype = np.result_type(x, alpha, total)
    x, alpha, total = np.float64(x), np.float64(alpha), np.float64(total)
    b, h = total - alpha, 1e-6 * alpha
    up, down = (np_.where(x < alpha / total, sp.betainc(alpha + e, b, x),
                          -sp.betainc(b, alpha + e, 1 - x)) for e in (h, -h))
    dens = np_.exp((alpha - 1) * np_.log(x) + (b - 1) * np_.log1p(-x) - sp.betaln(alpha, b))
    return (-(up - down) / (2 * h) / dens / (1 - x)).astype(dtype)


_POS = (0.3, 4.0)
STANDARD_GAMMA_GRAD = register(
    "standard_gamma_grad", _grad_infer("standard_gamma_grad"), _standard_gamma_grad_kernel,
    category="other",
    samples=(Sample(((3,), (3,)), domain=_POS), Sample(((2, 1), (4,)), domain=_POS),
             Sample(((), ()), domain=_POS)),
    ref=_gamma_grad_ref)
DIRICHLET_GRAD = register(
    "dirichlet_grad", _grad_infer("dirichlet_grad"), _dirichlet_grad_kernel, category="other",
    samples=(Sample((np.array([0.2, 0.5, 0.9]), (3,), np.array(6.0)), domain=_POS),
             Sample((np.array([[0.05], [0.7]]), (2, 1), np.array([5.0, 9.0])), domain=_POS)),
    ref=_dirichlet_grad_ref)


def _standard_gamma_vjp(g, alpha, seed, out, **_):
    return mul(g, STANDARD_GAMMA_GRAD.fn(alpha, out)), None


def _dirichlet_vjp(g, alpha, seed, out, **_):
    """torch's Dirichlet backward: D * (g - sum(x g)) with D = dirichlet_grad(x, alpha,
    sum(alpha)) per category."""
    total = _sum(alpha, axis=-1, keepdims=True)
    d = DIRICHLET_GRAD.fn(out, alpha, total)
    return mul(d, sub(g, _sum(mul(out, g), axis=-1, keepdims=True))), None


# NOTE: a draw's reference is its definition, NumPy's stream from the seed (the registry tests
# check that every engine computes it alike); its law and its gradient are checked against
# torch in tests/eager/test_distributions_torch.py. No finite-difference check of the gradient:
# the implicit gradient is not the derivative of NumPy's rejection sampler at a fixed seed
_NOGRAD = dict(domain=_POS, grad=False)
STANDARD_GAMMA = register(
    "standard_gamma", _seeded("standard_gamma", 1), _standard_gamma_kernel, _standard_gamma_vjp,
    category="other", samples=(Sample(((3, 2), _SEED), **_NOGRAD), Sample(((), _SEED), **_NOGRAD)),
    ref=lambda np_, alpha, seed: _standard_gamma_kernel(alpha, seed))
SAMPLE_DIRICHLET = register(
    "sample_dirichlet", _seeded("sample_dirichlet", 1), _dirichlet_kernel, _dirichlet_vjp,
    category="other", samples=(Sample(((2, 3), _SEED), **_NOGRAD),),
    ref=lambda np_, alpha, seed: _dirichlet_kernel(alpha, seed))
SAMPLE_POISSON = register(
    "sample_poisson", _seeded("sample_poisson", 1), _poisson_kernel, category="other",
    samples=(Sample(((4,), _SEED), domain=_POS),),
    ref=lambda np_, rate, seed: _poisson_kernel(rate, seed))
SAMPLE_BINOMIAL = register(
    "sample_binomial", _seeded("sample_binomial", 2), _binomial_kernel, category="other",
    samples=(Sample((np.array([3.0, 10.0, 0.0]), (3,), _SEED), domain=(0.0, 1.0)),),
    ref=lambda np_, count, probs, seed: _binomial_kernel(count, probs, seed))

standard_gamma, standard_gamma_grad, sample_dirichlet, dirichlet_grad, sample_poisson, \
    sample_binomial = (primitive(op) for op in (
        STANDARD_GAMMA, STANDARD_GAMMA_GRAD, SAMPLE_DIRICHLET, DIRICHLET_GRAD, SAMPLE_POISSON,
        SAMPLE_BINOMIAL))
