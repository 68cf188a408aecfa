"""torch.distributions against torch, the part that is not a family: kl_divergence for every
pair torch registers among dualgrad's families (values and gradients for both sides),
register_kl's dispatch, each transform (forward, inverse, log |det J| and its gradient,
domains, signs, shapes, caching), biject_to / transform_to, the matrix constraints, a
tanh-squashed policy step and gammainc's gradients. The families, parameter draws and the
comparison rules are test_distributions_torch.py's. Cost: ~5 s here."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dualgrad import eager
from tests.eager.test_distributions_torch import (FAMILIES, K, Raised, _attempt, _close,
                                                  _family_inputs, _grads, _np)


# -- kl_divergence: every pair torch registers among these families ----------------------------
KL_FAMILIES = {"Normal": "Normal", "Uniform": "Uniform", "Laplace": "Laplace",
               "Cauchy": "Cauchy", "Exponential": "Exponential", "Gamma": "Gamma",
               "Beta": "Beta", "Dirichlet": "Dirichlet", "Gumbel": "Gumbel",
               "HalfNormal": "HalfNormal", "Bernoulli": "Bernoulli.probs",
               "Categorical": "Categorical.logits", "OneHotCategorical": "OneHotCategorical",
               "Poisson": "Poisson", "Binomial": "Binomial.probs", "Geometric": "Geometric.probs",
               "LogNormal": "LogNormal", "Pareto": "Pareto",
               "ContinuousBernoulli": "ContinuousBernoulli.probs",
               "MultivariateNormal": "MultivariateNormal",
               "LowRankMultivariateNormal": "LowRankMultivariateNormal"}
KL_PAIRS = sorted({(p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY
                   if p.__name__ in KL_FAMILIES and q.__name__ in KL_FAMILIES} |
                  {("LogNormal", "LogNormal"), ("Chi2", "Gamma")})
KL_FAMILIES["Chi2"] = "Chi2"


def _kl_params(family, seed):
    params, _ = _family_inputs(KL_FAMILIES[family], "batch", seed=seed)
    rng = np.random.default_rng(seed)
    if family == "Uniform":     # NOTE: inside [0, 1] for some pairs, across it for others
        params = {"low": rng.uniform(-0.1, 0.3, 3), "high": rng.uniform(0.6, 1.1, 3)}
    if family == "Pareto":      # NOTE: alpha on both sides of 1 and 2 (infinite moments)
        params = {"scale": rng.uniform(0.05, 0.3, 3), "alpha": np.array([0.8, 1.5, 3.5])}
    return params


def _kl_run(lib, pair, dtype):
    D = lib.distributions
    tp, tq = ({k: lib.tensor(v.astype(dtype), requires_grad=True)
               for k, v in _kl_params(f, seed).items()} for f, seed in zip(pair, (11, 12)))
    p = FAMILIES[KL_FAMILIES[pair[0]]][0](D, tp)
    q = FAMILIES[KL_FAMILIES[pair[1]]][0](D, tq)
    kl = _attempt(lambda: D.kl_divergence(p, q))
    if isinstance(kl, Raised):
        return {"kl": kl}
    w = np.random.default_rng(13).uniform(0.5, 1.5, tuple(kl.shape))
    return {"kl": _np(kl), "grad_p": _grads(lib, kl, tp, w), "grad_q": _grads(lib, kl, tq, w)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pair", KL_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_divergence_as_torch(pair, dtype):
    want, got = _kl_run(torch, pair, dtype), _kl_run(eager, pair, dtype)
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        g = got[key]
        if key.startswith("grad") and isinstance(w, list):
            # NOTE: where KL is infinite the gradient is torch's NaN or 0 from a masked
            # formula; compared where KL is finite
            finite = np.isfinite(want["kl"])

            def masked(grads):
                return [None if a is None else np.where(finite.reshape(
                    finite.shape + (1,) * (a.ndim - finite.ndim)), a, 0) for a in grads]
            w, g = masked(w), masked(g) if isinstance(g, list) else g
        _close(g, w, f"{pair}:{key}", dtype)


def test_kl_registry_as_torch():
    D = eager.distributions
    p, q = D.Normal(eager.tensor(0.0), eager.tensor(1.0)), D.Poisson(eager.tensor(1.0))
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented"):
        D.kl_divergence(p, q)

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _half(a, b):
        return 0.5 * torch_like_kl(a, b)

    def torch_like_kl(a, b):
        return D.kl.kl_divergence(D.Normal(a.loc, a.scale), b)

    mine = MyNormal(eager.tensor(1.0), eager.tensor(2.0))
    assert D.kl_divergence(mine, p).item() == pytest.approx(0.5 * D.kl_divergence(
        D.Normal(eager.tensor(1.0), eager.tensor(2.0)), p).item())
    assert D.kl_divergence(p, MyNormal(eager.tensor(0.0), eager.tensor(1.0))).item() == 0.0


# -- transforms ---------------------------------------------------------------------------------
def _affine_vec(T, lib):
    return T.AffineTransform(lib.tensor([0.5, -1.0, 2.0]), lib.tensor([1.5, -0.5, 2.0]),
                             event_dim=1)


TRANSFORMS = {
    "Exp": (lambda T, lib: T.ExpTransform(), "real"),
    "Affine": (lambda T, lib: T.AffineTransform(0.5, -2.0), "real"),
    "AffineVector": (_affine_vec, "real"),
    "Sigmoid": (lambda T, lib: T.SigmoidTransform(), "real"),
    "Tanh": (lambda T, lib: T.TanhTransform(), "real"),
    "Softmax": (lambda T, lib: T.SoftmaxTransform(), "real"),
    "Abs": (lambda T, lib: T.AbsTransform(), "real"),
    "Power": (lambda T, lib: T.PowerTransform(lib.tensor(2.5)), "pos"),
    "Compose": (lambda T, lib: T.ComposeTransform([T.AffineTransform(0.5, 1.5),
                                                   T.TanhTransform()]), "real"),
    "ExpInverse": (lambda T, lib: T.ExpTransform().inv, "pos"),
    "ComposeVector": (lambda T, lib: T.ComposeTransform([_affine_vec(T, lib),
                                                         T.SoftmaxTransform()]), "real"),
    "Softplus": (lambda T, lib: T.SoftplusTransform(), "real"),
    "Independent": (lambda T, lib: T.IndependentTransform(T.ExpTransform(), 1), "real"),
    "Reshape": (lambda T, lib: T.ReshapeTransform((K,), (K, 1)), "real"),
    "StickBreaking": (lambda T, lib: T.StickBreakingTransform(), "real"),
    "CorrCholesky": (lambda T, lib: T.CorrCholeskyTransform(), "real"),
    "Cat": (lambda T, lib: T.CatTransform([T.ExpTransform(), T.TanhTransform()], -1, [1, 2]),
            "real"),
    "Stack": (lambda T, lib: T.StackTransform([T.ExpTransform(), T.TanhTransform(),
                                               T.AffineTransform(1.0, 3.0)], -1), "real"),
    "CumulativeDistribution": (lambda T, lib: T.CumulativeDistributionTransform(
        lib.distributions.Laplace(lib.tensor(0.2), lib.tensor(1.5))), "real"),
}


def _transform_run(lib, name, dtype):
    build, kind = TRANSFORMS[name]
    t = build(lib.distributions.transforms, lib)
    rng = np.random.default_rng(9)
    x0 = rng.uniform(-1.5, 1.5, (2, K)) if kind == "real" else rng.uniform(0.3, 2.0, (2, K))
    x = lib.tensor(x0.astype(dtype), requires_grad=True)
    out = {"bijective": t.bijective, "sign": _attempt(lambda: _plain(t.sign)),
           "domain": repr(t.domain), "codomain": repr(t.codomain),
           "domain.event_dim": t.domain.event_dim, "codomain.event_dim": t.codomain.event_dim,
           "forward_shape": _attempt(lambda: tuple(t.forward_shape((4, K)))),
           "inverse_shape": _attempt(lambda: tuple(t.inverse_shape((4, K))))}
    y = t(x)
    out["y"] = _np(y)
    out["y.grad"] = _grads(lib, y, {"x": x}, np.ones(tuple(y.shape)))
    out["inv"] = _np(_attempt(lambda: t.inv(y.detach())))
    ladj = _attempt(lambda: t.log_abs_det_jacobian(x, t(x)))
    out["ladj"] = _np(ladj)
    if not isinstance(ladj, Raised):
        out["ladj.grad"] = _grads(lib, ladj, {"x": x}, np.ones(tuple(ladj.shape)))
    return out


def _plain(sign):
    return sign if isinstance(sign, int) else sign.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_as_torch(name, dtype):
    want, got = _transform_run(torch, name, dtype), _transform_run(eager, name, dtype)
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        _close(got[key], w, f"{name}:{key}", dtype)


CONSTRAINTS = {
    "real": lambda C, t: C.real, "positive": lambda C, t: C.positive,
    "nonnegative": lambda C, t: C.nonnegative, "unit_interval": lambda C, t: C.unit_interval,
    "interval": lambda C, t: C.interval(-1.0, 2.0),
    "half_open_interval": lambda C, t: C.half_open_interval(0.5, 3.0),
    "greater_than": lambda C, t: C.greater_than(1.5), "less_than": lambda C, t: C.less_than(-0.5),
    "greater_than_eq": lambda C, t: C.greater_than_eq(-2.0),
    "interval(tensors)": lambda C, t: C.interval(t.tensor([0.0, -1.0, 1.0]),
                                                 t.tensor([1.0, 1.0, 4.0])),
    "simplex": lambda C, t: C.simplex, "real_vector": lambda C, t: C.real_vector,
    "independent(positive)": lambda C, t: C.independent(C.positive, 1),
    "lower_cholesky": lambda C, t: C.lower_cholesky,
    "positive_definite": lambda C, t: C.positive_definite,
    "corr_cholesky": lambda C, t: C.corr_cholesky,
    "cat": lambda C, t: C.cat([C.positive, C.interval(-1.0, 1.0)], -1, [1, 2]),
    "stack": lambda C, t: C.stack([C.positive, C.real, C.unit_interval], -1),
}


def _registry_run(lib, name, dtype):
    D = lib.distributions
    c = CONSTRAINTS[name](D.constraints, lib)
    shape = (2, K) if name == "corr_cholesky" else (2, K, K) if "chol" in name or \
        "definite" in name else (2, K)
    x0 = np.random.default_rng(15).uniform(-1.5, 1.5, shape)
    out = {}
    for which in ("biject_to", "transform_to"):
        t = _attempt(lambda: getattr(D, which)(c))
        if isinstance(t, Raised):
            out[which] = t
            continue
        x = lib.tensor(x0.astype(dtype), requires_grad=True)
        y = t(x)
        out[which] = repr(t)
        out[which + ".y"] = _np(y)
        out[which + ".in_support"] = _np(c.check(y))
        ladj = _attempt(lambda: t.log_abs_det_jacobian(x, y))
        out[which + ".ladj"] = _np(ladj)
        if not isinstance(ladj, Raised):
            out[which + ".ladj.grad"] = _grads(lib, ladj, {"x": x}, np.ones(tuple(ladj.shape)))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_biject_to_and_transform_to_as_torch(name, dtype):
    want, got = _registry_run(torch, name, dtype), _registry_run(eager, name, dtype)
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        _close(got[key], w, f"{name}:{key}", dtype)


@pytest.mark.parametrize("name", ["square", "symmetric", "positive_semidefinite",
                                  "positive_definite", "lower_cholesky", "lower_triangular",
                                  "corr_cholesky"])
def test_matrix_constraints_as_torch(name):
    rng = np.random.default_rng(16)
    a = rng.normal(size=(K, K))
    chol = np.linalg.cholesky(a @ a.T + np.eye(K))
    mats = np.stack([a @ a.T + np.eye(K), a, np.tril(a), np.tril(np.abs(a)) + np.eye(K),
                     -np.eye(K), np.zeros((K, K)), chol / np.linalg.norm(chol, axis=-1,
                                                                           keepdims=True)])
    got = [getattr(lib.distributions.constraints, name).check(lib.tensor(mats)).numpy()
           for lib in (torch, eager)]
    np.testing.assert_array_equal(got[1], got[0])
    assert repr(getattr(eager.distributions.constraints, name)) == \
        repr(getattr(torch.distributions.constraints, name))


def test_transform_cache_inverse_and_equality():
    T = eager.distributions.transforms
    t = T.TanhTransform(cache_size=1)
    x = eager.tensor([0.3, 25.0])        # NOTE: tanh(25) rounds to 1: atanh would give inf
    y = t(x)
    assert t.inv(y) is x and t.inv.inv is t
    assert np.isinf(T.TanhTransform().inv(y).numpy()[1])
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.TanhTransform()
    assert T.ExpTransform().inv == T.ExpTransform().inv
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.TanhTransform(cache_size=2)
    for lib in (torch, eager):
        with pytest.raises(ValueError, match="transforms must be a Transform or list"):
            lib.distributions.TransformedDistribution(
                lib.distributions.Normal(0.0, 1.0), lib.distributions.transforms.ExpTransform)


def test_tanh_squashed_gaussian_policy_step_as_torch():
    """A SAC actor's log-probability: Normal rsample through TanhTransform(cache_size=1) and
    log_prob of the same action (through the cache), then its gradients."""
    rng = np.random.default_rng(10)
    mu, log_std = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)) * 0.3
    out = []
    for lib in (torch, eager):
        D = lib.distributions
        m = lib.tensor(mu, requires_grad=True)
        s = lib.tensor(log_std, requires_grad=True)
        base = D.Normal(m, s.exp())
        pi = D.TransformedDistribution(base, [D.transforms.TanhTransform(cache_size=1)])
        pre = lib.tensor(rng.normal(size=(4, 2)))     # the same noise for both
        action = pi.transforms[0](m + s.exp() * pre)
        lp = pi.log_prob(action).sum(-1)
        (lp.sum() + (action ** 2).sum()).backward()
        out.append([lp.detach().numpy(), m.grad.numpy(), s.grad.numpy()])
        rng = np.random.default_rng(10)
        rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    for w, g in zip(*out):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_gammainc_gradient_in_x_and_error_in_a_as_torch():
    rng = np.random.default_rng(14)
    a, x = rng.uniform(0.3, 5, 6), rng.uniform(0.1, 8, 6)
    grads = []
    for lib in (torch, eager):
        xt = lib.tensor(x, requires_grad=True)
        for fn in (lib.special.gammainc, lib.special.gammaincc):
            fn(lib.tensor(a), xt).sum().backward()
            grads.append(xt.grad.numpy().copy())
            xt.grad = None
        at = lib.tensor(a, requires_grad=True)
        with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input'"):
            lib.special.gammainc(at, lib.tensor(x)).sum().backward()
    for g, w in zip(grads[2:], grads[:2]):
        np.testing.assert_allclose(g, w, rtol=1e-10)
