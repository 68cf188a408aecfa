"""torch.distributions against torch, generated: every family x parameter shapes (scalar,
batched, broadcast) x float32/float64, each deterministic method (log_prob, entropy, cdf,
icdf, mean, mode, variance, stddev, enumerate_support, expand, shapes, support and
arg_constraints) and the gradient of each with respect to every parameter, compared case by
case; an exception torch raises must be raised as the same type. Then what cannot be compared
value for value: rsample's gradients at the very samples drawn (the gamma family's implicit
ones against torch._standard_gamma_grad / torch's Dirichlet backward on the same values and
against the CDF differentiated by scipy), sample moments (seeded), kl_divergence for every
pair torch registers among these families, transforms, and torch's error messages.

Cost: 26 families x 3 shapes x 2 dtypes, each a few dozen small calls (~20 s here); the
moment checks draw 4000 samples per family."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dualgrad import eager

K = 3   # categories / event size of the vector families


# -- parameters and values --------------------------------------------------------------------
def _param(kind, shape, rng):
    if kind == "real":
        return rng.uniform(-1, 1, shape)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "conc":
        return rng.uniform(0.6, 3.0, shape)
    if kind == "unit":
        return rng.uniform(0.15, 0.85, shape)
    if kind == "df":
        return rng.uniform(0.7, 5.0, shape)   # NOTE: below 1 and 2 too: StudentT's nan / inf
    if kind == "low":
        return rng.uniform(-1.0, -0.3, shape)
    if kind == "high":
        return rng.uniform(0.3, 1.0, shape)
    if kind == "simplex":
        p = rng.uniform(0.2, 1.0, shape + (K,))
        return p / p.sum(-1, keepdims=True)
    if kind == "logits":
        return rng.uniform(-1.5, 1.5, shape + (K,))
    if kind == "conc_vec":
        return rng.uniform(0.6, 3.0, shape + (K,))
    if kind == "real_vec":
        return rng.uniform(-1, 1, shape + (K,))
    if kind == "pos_vec":
        return rng.uniform(0.5, 2.0, shape + (K,))
    raise AssertionError(kind)


def _value(kind, shape, rng):
    """Values in the support, shape (2,) + batch + event: a leading dim log_prob broadcasts."""
    shape = (2,) + shape
    if kind == "real":
        return rng.normal(0, 1.5, shape)
    if kind == "small":
        return rng.uniform(-0.25, 0.25, shape)
    if kind == "pos":
        return rng.gamma(2.0, 1.0, shape)
    if kind in ("unit", "tanh"):
        v = rng.uniform(0.05, 0.95, shape)
        return 2 * v - 1 if kind == "tanh" else v
    if kind == "count":
        return rng.integers(0, 6, shape).astype(float)
    if kind == "bool":
        return rng.integers(0, 2, shape).astype(float)
    if kind == "category":
        return rng.integers(0, K, shape)
    if kind == "onehot":
        return np.eye(K)[rng.integers(0, K, shape)]
    if kind == "simplex":
        return rng.dirichlet(np.ones(K), shape)
    if kind == "multinomial":
        return rng.multinomial(5, np.ones(K) / K, shape).astype(float)
    raise AssertionError(kind)


def _transformed(D, p):
    T = D.transforms
    return D.TransformedDistribution(D.Normal(p["loc"], p["scale"]),
                                     [T.AffineTransform(0.5, 1.5), T.TanhTransform()])


def _mixture(D, p):
    return D.MixtureSameFamily(D.Categorical(logits=p["logits"]),
                               D.Normal(p["loc"], p["scale"]))


def _mixture_mvn(D, p):
    return D.MixtureSameFamily(D.Categorical(logits=p["logits"]),
                               D.Independent(D.Normal(p["loc"], p["scale"]), 1))


# name: (constructor(D, params), {param: kind}, value kind, event dims of each param)
FAMILIES = {
    "Normal": (lambda D, p: D.Normal(p["loc"], p["scale"]), {"loc": "real", "scale": "pos"}, "real"),
    "Uniform": (lambda D, p: D.Uniform(p["low"], p["high"]), {"low": "low", "high": "high"}, "small"),
    "Laplace": (lambda D, p: D.Laplace(p["loc"], p["scale"]), {"loc": "real", "scale": "pos"}, "real"),
    "Cauchy": (lambda D, p: D.Cauchy(p["loc"], p["scale"]), {"loc": "real", "scale": "pos"}, "real"),
    "Exponential": (lambda D, p: D.Exponential(p["rate"]), {"rate": "pos"}, "pos"),
    "Gamma": (lambda D, p: D.Gamma(p["c"], p["rate"]), {"c": "conc", "rate": "pos"}, "pos"),
    "Chi2": (lambda D, p: D.Chi2(p["df"]), {"df": "conc"}, "pos"),
    "Beta": (lambda D, p: D.Beta(p["a"], p["b"]), {"a": "conc", "b": "conc"}, "unit"),
    "Dirichlet": (lambda D, p: D.Dirichlet(p["c"]), {"c": "conc_vec"}, "simplex"),
    "StudentT": (lambda D, p: D.StudentT(p["df"], p["loc"], p["scale"]),
                 {"df": "df", "loc": "real", "scale": "pos"}, "real"),
    "LogNormal": (lambda D, p: D.LogNormal(p["loc"], p["scale"]), {"loc": "real", "scale": "pos"}, "pos"),
    "Gumbel": (lambda D, p: D.Gumbel(p["loc"], p["scale"]), {"loc": "real", "scale": "pos"}, "real"),
    "HalfNormal": (lambda D, p: D.HalfNormal(p["scale"]), {"scale": "pos"}, "pos"),
    "Bernoulli.probs": (lambda D, p: D.Bernoulli(probs=p["p"]), {"p": "unit"}, "bool"),
    "Bernoulli.logits": (lambda D, p: D.Bernoulli(logits=p["l"]), {"l": "real"}, "bool"),
    "Categorical.probs": (lambda D, p: D.Categorical(probs=p["p"]), {"p": "simplex"}, "category"),
    "Categorical.logits": (lambda D, p: D.Categorical(logits=p["l"]), {"l": "logits"}, "category"),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(logits=p["l"]), {"l": "logits"}, "onehot"),
    "OneHotCategorical.probs": (lambda D, p: D.OneHotCategorical(probs=p["p"]), {"p": "simplex"},
                                "onehot"),
    "Poisson": (lambda D, p: D.Poisson(p["rate"]), {"rate": "pos"}, "count"),
    "Binomial.probs": (lambda D, p: D.Binomial(5, probs=p["p"]), {"p": "unit"}, "count"),
    "Binomial.logits": (lambda D, p: D.Binomial(5, logits=p["l"]), {"l": "real"}, "count"),
    "Geometric.probs": (lambda D, p: D.Geometric(probs=p["p"]), {"p": "unit"}, "count"),
    "Geometric.logits": (lambda D, p: D.Geometric(logits=p["l"]), {"l": "real"}, "count"),
    "Multinomial": (lambda D, p: D.Multinomial(5, logits=p["l"]), {"l": "logits"}, "multinomial"),
    "RelaxedBernoulli": (lambda D, p: D.RelaxedBernoulli(p["t"], probs=p["p"]),
                         {"t": "pos0", "p": "unit"}, "unit"),
    "RelaxedOneHotCategorical": (lambda D, p: D.RelaxedOneHotCategorical(p["t"], logits=p["l"]),
                                 {"t": "pos0", "l": "logits"}, "simplex"),
    "TransformedDistribution(tanh)": (_transformed, {"loc": "real", "scale": "pos"}, "tanh"),
    "MixtureSameFamily": (_mixture, {"logits": "logits", "loc": "real_vec", "scale": "pos_vec"},
                          "real"),
    "MixtureSameFamily(Independent)": (_mixture_mvn, {"logits": "logits", "loc": "real_vec_k",
                                                      "scale": "pos_vec_k"}, "real_k"),
}

SHAPES = {"scalar": [()], "batch": [(3,)], "broadcast": [(2, 1), (3,)]}


def _family_inputs(name, shape_name, seed=0):
    """The parameters (numpy) and value for one case: with shape 'broadcast' the first
    parameter is (2, 1) and the others (3,), so the batch is (2, 3)."""
    rng = np.random.default_rng(seed)
    _, kinds, vkind = FAMILIES[name]
    shapes = SHAPES[shape_name]
    params = {}
    for i, (p, kind) in enumerate(kinds.items()):
        shape = shapes[min(i, len(shapes) - 1)]
        if kind == "pos0":            # a 0-d temperature, as torch's relaxed families need
            params[p] = rng.uniform(0.5, 2.0, ())
        elif kind.endswith("_k"):     # components of an Independent(Normal, 1): (..., K, 2)
            params[p] = _param(kind[:-2], shape, rng)[..., None].repeat(2, -1)
        else:
            params[p] = _param(kind, shape, rng)
    batch = np.broadcast_shapes(*shapes) if len(kinds) > 1 else shapes[0]
    if vkind == "real_k":
        value = rng.normal(0, 1.5, (2,) + batch + (2,))
    else:
        value = _value(vkind, batch, rng)
    return params, value


class Raised(tuple):
    """An exception raised instead of a result: equal to torch's when it is an instance of
    torch's class (dualgrad's ShapeError is torch's RuntimeError and a ValueError)."""

    def __eq__(self, other):
        return isinstance(other, Raised) and other[0] in self[1]

    __hash__ = tuple.__hash__


def _attempt(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the exception type is compared with torch's
        return Raised((type(e).__name__, tuple(c.__name__ for c in type(e).__mro__)))


def _np(x):
    if isinstance(x, Raised):
        return x
    return x.detach().numpy()


def _grads(lib, out, tensors, w):
    """Gradients of sum(out * w) for each float parameter (None where out does not depend on
    it), or the exception raised."""
    if not getattr(out, "requires_grad", False):
        return "no graph"
    wanted = [t for t in tensors.values()]
    return _attempt(lambda: [None if g is None else g.numpy() for g in lib.autograd.grad(
        (out * lib.tensor(w, dtype=out.dtype)).sum(), wanted, allow_unused=True)])


def _shape_dtype(x):
    return tuple(x.shape), str(x.dtype).split(".")[-1]


def _run(lib, name, shape_name, dtype):
    build, kinds, vkind = FAMILIES[name]
    params, value = _family_inputs(name, shape_name)
    rng = np.random.default_rng(1)
    D = lib.distributions
    out = {}

    def fresh():
        ts = {k: lib.tensor(v.astype(dtype), requires_grad=True) for k, v in params.items()}
        return build(D, ts), ts

    v = lib.tensor(value if vkind == "category" else value.astype(dtype))
    d, _ = fresh()
    out["batch_shape"], out["event_shape"] = tuple(d.batch_shape), tuple(d.event_shape)
    out["has_rsample"] = bool(d.has_rsample)
    out["has_enumerate_support"] = bool(d.has_enumerate_support)
    # NOTE: a bound that is a tensor prints as its library prints tensors: compared by check
    out["support"] = _attempt(lambda: repr(d.support).split("tensor(")[0])
    out["support.check"] = _attempt(lambda: d.support.check(v).numpy())
    out["arg_constraints"] = _attempt(lambda: repr(sorted(
        (k, repr(c).split("tensor(")[0]) for k, c in d.arg_constraints.items())))
    q = rng.uniform(0.1, 0.9, tuple(v.shape)).astype(dtype)
    methods = {"log_prob": lambda d: d.log_prob(v), "entropy": lambda d: d.entropy(),
               "cdf": lambda d: d.cdf(v), "icdf": lambda d: d.icdf(lib.tensor(q)),
               "mean": lambda d: d.mean, "mode": lambda d: d.mode,
               "variance": lambda d: d.variance, "stddev": lambda d: d.stddev,
               "perplexity": lambda d: d.perplexity()}
    for m, f in methods.items():
        d, ts = fresh()
        res = _attempt(lambda: f(d))
        out[m] = _np(res)
        if not isinstance(res, Raised):
            w = rng.uniform(0.5, 1.5, tuple(res.shape))
            out[m + ".grad"] = _grads(lib, res, ts, w)
    d, _ = fresh()
    for expand in (True, False):
        out[f"enumerate_support({expand})"] = _np(_attempt(lambda: d.enumerate_support(expand)))
    e = _attempt(lambda: d.expand((2,) + tuple(d.batch_shape)))
    if not isinstance(e, Raised):
        out["expand.batch_shape"] = tuple(e.batch_shape)
        out["expand.log_prob"] = _np(_attempt(lambda: e.log_prob(v)))
        out["expand.sample"] = _attempt(lambda: _shape_dtype(e.sample()))
    else:
        out["expand"] = e
    for kind in ("sample", "rsample"):
        s = _attempt(lambda: getattr(d, kind)((3, 2)))
        out[kind] = s if isinstance(s, Raised) else _shape_dtype(s)
    return out


def _close(got, want, key, dtype):
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == "float32" else dict(rtol=1e-7, atol=1e-9)
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (key, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert (g is None) == (w is None), (key, i, g, w)
            if w is not None:
                np.testing.assert_allclose(g, w, err_msg=f"{key}[{i}]", **tol)
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), (key, got)
        assert got.shape == want.shape and got.dtype == want.dtype, \
            (key, got.shape, want.shape, got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, err_msg=key, **tol)
        return
    assert got == want if isinstance(got, Raised) else want == got, (key, got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape_name", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_as_torch(name, shape_name, dtype):
    want, got = _run(torch, name, shape_name, dtype), _run(eager, name, shape_name, dtype)
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    for key, w in want.items():
        _close(got[key], w, key, dtype)
