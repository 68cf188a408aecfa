"""kl_divergence(p, q) and register_kl: torch's registry of closed forms, looked up by the
most specific pair of registered classes (a Chi2 is a Gamma, a LogNormal a
TransformedDistribution). The pairs are torch's among the families dualgrad has; a pair whose
support of p is not inside q's is infinity of p's batch shape, as torch's.

>>> from dualgrad import eager as torch
>>> from dualgrad.eager.distributions import Gamma, Exponential, kl_divergence
>>> round(kl_divergence(Gamma(torch.tensor(2.0), torch.tensor(1.0)),
...                     Exponential(torch.tensor(0.5))).item(), 4)
0.1159
"""
from __future__ import annotations

import math
import warnings
from functools import total_ordering

import numpy as np

from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import eager, sum_rightmost
from .extra import ContinuousBernoulli, Pareto
from .gamma import Beta, Dirichlet, Gamma
from .mvn import LowRankMultivariateNormal, MultivariateNormal
from .transformed import Gumbel, HalfNormal, Independent, TransformedDistribution

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}
_EULER = 0.57721566490153286060
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def register_kl(type_p, type_q):
    """Decorator: fn(p, q) is KL(p || q) for p of type_p and q of type_q (subclasses too,
    unless a more specific pair is registered)."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError(f"Expected type_p and type_q to be subclasses of Distribution, but got "
                        f"{type_p} and {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn
    return decorator


@total_ordering
class _Match:
    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun, right_fun = _KL_REGISTRY[left], _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left[0].__name__}, {right_q.__name__})", RuntimeWarning)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q) by the closed form registered for their types."""
    key = type(p), type(q)
    fun = _KL_MEMOIZE.get(key)
    if fun is None:
        fun = _KL_MEMOIZE[key] = _dispatch_kl(*key)
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fun(p, q)


def _inf_like(t):
    return eager().full_like(t, math.inf)


def _where(mask, value, t):
    return eager().where(mask, value, t).to(t.dtype)


# -- same family --------------------------------------------------------------------------
@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    F = eager().nn.functional
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = _where(q.probs == 0, math.inf, t1)
    t1 = _where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = _where(q.probs == 1, math.inf, t2)
    t2 = _where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _where((q.probs == 0).expand(t.shape), math.inf, t)
    t = _where((p.probs == 0).expand(t.shape), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sp, sq = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sp.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sq.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (sq - sp) * sp.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    cp, cq = p.concentration, q.concentration
    sp, sq = cp.sum(-1), cq.sum(-1)
    t1 = sp.lgamma() - sq.lgamma()
    t2 = (cp.lgamma() - cq.lgamma()).sum(-1)
    return t1 - t2 + ((cp - cq) * (cp.digamma() - sp.digamma().unsqueeze(-1))).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + diff / q.scale + scale_ratio * (-diff / p.scale).exp() - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + ct1 * _EULER + t3 - (1 + _EULER)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() -
                          (-q.probs).log1p())
    return _where(p.total_count > q.total_count, math.inf, kl)


@register_kl(MultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    """From the Cholesky factors: log det L_q - log det L_p + (||L_q^-1 L_p||_F^2 +
    ||L_q^-1 (loc_q - loc_p)||^2 - k) / 2."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    k = p.event_shape[0]
    batch = np.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    lp, lq = p.scale_tril.expand(*batch, k, k), q.scale_tril.expand(*batch, k, k)
    solve = eager().linalg.solve_triangular
    m = solve(lq, lp, upper=False)
    d = solve(lq, (q.loc - p.loc).expand(*batch, k).unsqueeze(-1), upper=False).squeeze(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * ((m ** 2).sum((-2, -1)) +
                                                         (d ** 2).sum(-1) - k)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra)


# -- across families: E_p[log p - log q] from p's entropy and moments ------------------------
def _to_normal(p, q, mean, var):
    """KL(p || Normal(q)) = -H(p) + log sigma + log(2 pi) / 2 + E_p[(x - mu)^2] / (2 sigma^2)."""
    return -p.entropy() + q.scale.log() + _HALF_LOG_2PI + \
        (var + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2))


def _to_exponential(p, q, mean):
    return -p.entropy() - q.rate.log() + q.rate * mean


def _to_gamma(p, q, mean, mean_log):
    a, b = q.concentration, q.rate
    return -p.entropy() - a * b.log() + a.lgamma() - (a - 1) * mean_log + b * mean


def _to_gumbel(p, q, mean, mgf):
    """KL(p || Gumbel(q)) with mgf = E_p[exp(-x / s)]: -H(p) + log s + (E x - mu) / s +
    exp(mu / s) E_p[exp(-x / s)]."""
    return -p.entropy() + q.scale.log() + (mean - q.loc) / q.scale + (q.loc / q.scale).exp() * mgf


def _beta_mean_log(p):
    return p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()


def _uniform_mean_log(p):
    """E log x for x uniform on (low, high), 0 <= low."""
    lo, hi = p.low, p.high
    return (eager().xlogy(hi, hi) - eager().xlogy(lo, lo)) / (hi - lo) - 1


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _to_normal(p, q, p.loc, p.variance)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return _to_exponential(p, q, p.mean)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return _to_exponential(p, q, p.mean)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    return _where(p.low < 0, math.inf, _to_exponential(p, q, p.mean))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    return _to_gamma(p, q, p.mean, _beta_mean_log(p))


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    return _to_gamma(p, q, p.mean, -_EULER - p.rate.log())


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    return _where(p.low < 0, math.inf, _to_gamma(p, q, p.mean, _uniform_mean_log(p)))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    return _to_gumbel(p, q, p.mean, p.rate / (p.rate + 1 / q.scale))


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    return _to_gumbel(p, q, p.mean, (1 + 1 / (q.scale * p.rate)).pow(-p.concentration))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    t = -1 / q.scale
    return _to_gumbel(p, q, p.loc, (p.loc * t + p.scale.pow(2) * t.pow(2) / 2).exp())


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    t = -1 / q.scale
    mgf = ((t * p.high).exp() - (t * p.low).exp()) / (t * (p.high - p.low))
    return _to_gumbel(p, q, p.mean, mgf)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    """E_p |x - mu_q| of a normal: sigma sqrt(2/pi) exp(-d^2 / 2 sigma^2) + d erf(d / sigma
    sqrt 2) with d = loc_p - mu_q."""
    d = p.loc - q.loc
    mean_abs = p.scale * math.sqrt(2 / math.pi) * (-d.pow(2) / (2 * p.scale.pow(2))).exp() + \
        d * eager().erf(d / (p.scale * math.sqrt(2)))
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _where((q.low > 0) | (q.high < 1), math.inf, result)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b, lo, hi = q.concentration1, q.concentration0, p.low, p.high
    xlogy = eager().xlogy
    mean_log = _uniform_mean_log(p)
    mean_log1m = (xlogy(1 - lo, 1 - lo) - xlogy(1 - hi, 1 - hi)) / (hi - lo) - 1
    log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
    result = -p.entropy() - (a - 1) * mean_log - (b - 1) * mean_log1m + log_beta
    return _where((lo < 0) | (hi > 1), math.inf, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _where(p.scale < q.scale, math.inf, result)


def _pareto_neg_entropy_mean_log(p):
    return -p.entropy(), p.scale.log() + p.alpha.reciprocal()


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    return _where(p.alpha <= 1, math.inf, _to_exponential(p, q, p.mean))


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    _, mean_log = _pareto_neg_entropy_mean_log(p)
    return _where(p.alpha <= 1, math.inf, _to_gamma(p, q, p.mean, mean_log))


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    a = p.alpha
    mean = a * p.scale / (a - 1)
    var = p.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))
    return _where(a <= 2, math.inf, _to_normal(p, q, mean, var))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    """-H(p) - E_p[log alpha + alpha log scale - (alpha + 1) log x]."""
    log_q = q.alpha.log() + q.alpha * q.scale.log() - (q.alpha + 1) * _uniform_mean_log(p)
    return _where(p.low < q.scale, math.inf, -p.entropy() - log_q)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    return t1 + t2 - q._cont_bern_log_norm() - (-q.probs).log1p()


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return _to_exponential(p, q, p.mean)


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    return _to_normal(p, q, p.mean, p.variance)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    # NOTE: torch's test is inclusive: a q of exactly [0, 1] gives inf too
    result = -p.entropy() + (q.high - q.low).log()
    return _where((q.low >= 0) | (q.high <= 1), math.inf, result)


def _to_cb(p, q):
    return -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return _to_cb(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    return _where((p.high >= 1) | (p.low <= 0), math.inf, _to_cb(p, q))


def _infinite(attr):
    def kl(p, q):
        return _inf_like(getattr(p, attr))
    return kl


for _p, _qs, _attr in (
        (Exponential, (Beta, ContinuousBernoulli, Pareto, Uniform), "rate"),
        (Gamma, (Beta, ContinuousBernoulli, Pareto, Uniform), "concentration"),
        (Gumbel, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform), "loc"),
        (Laplace, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform), "loc"),
        (Normal, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform), "loc"),
        (Beta, (Pareto,), "concentration1"),
        (Pareto, (Beta, ContinuousBernoulli, Uniform), "scale"),
        (ContinuousBernoulli, (Pareto,), "probs"),
        (Poisson, (Bernoulli, Binomial), "rate")):
    for _q in _qs:
        register_kl(_p, _q)(_infinite(_attr))
