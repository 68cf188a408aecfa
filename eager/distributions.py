"""torch.distributions, the part VAE and reinforcement-learning scripts use: `Normal`,
`Bernoulli`, `Categorical`, `Uniform`, `Independent`, `MultivariateNormal` (`sample`, the reparameterised
`rsample`, `log_prob`, `entropy`, `mean`, `variance`, `stddev`, `cdf` where torch has it)
and `kl_divergence` between two of the same family, with torch's formulas (probabilities
clamped to [eps, 1 - eps] when they are turned into logits). Samples come from dualgrad's
generator, so they differ from torch's draws; everything else agrees.

>>> from dualgrad import eager as torch
>>> from dualgrad.eager.distributions import Normal, kl_divergence
>>> p, q = Normal(torch.tensor(0.0), torch.tensor(1.0)), Normal(torch.tensor(1.0), torch.tensor(2.0))
>>> round(p.log_prob(torch.tensor(0.5)).item(), 4), round(kl_divergence(p, q).item(), 4)
(-1.0439, 0.4431)
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import ops
from .core import Tensor

__all__ = ["Distribution", "Normal", "Bernoulli", "Categorical", "Uniform", "Independent",
           "MultivariateNormal", "kl_divergence"]


def _t(x):
    if isinstance(x, Tensor):
        return x
    return Tensor(np.asarray(x, dtype=np.float32 if isinstance(x, (int, float)) else None))


def _eager():
    from dualgrad import eager
    return eager


class Distribution:
    """Base class: batch_shape and event_shape, sample() as rsample() without gradient."""
    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        self._validate_args = True if validate_args is None else bool(validate_args)

    def _check(self, what, name, value, ok):
        """torch's argument validation (on by default): a parameter or a value outside its
        support is a ValueError."""
        if self._validate_args and not bool(np.all(ok)):
            raise ValueError(f"Expected {what} {name} ({type(value).__name__} of shape "
                             f"{tuple(np.shape(value))}) of distribution {type(self).__name__} "
                             f"to be within its support, but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()):
        with _eager().no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sample "
                                  f"(rsample); use sample()")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def __repr__(self):
        return f"{type(self).__name__}(batch_shape={list(self._batch_shape)})"


class Normal(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast(_t(loc), _t(scale))
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)
        self._check("parameter", "scale", self.scale, self.scale._array > 0)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale ** 2

    @property
    def stddev(self):
        return self.scale

    def rsample(self, sample_shape=()):
        eps = _eager().randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - \
            math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def cdf(self, value):
        return 0.5 * (1 + ops.erf((value - self.loc) / (self.scale * math.sqrt(2))))


def _broadcast(*ts):
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in ts))
    return [t if tuple(t.shape) == shape else ops.broadcast_to(t, shape=shape) for t in ts]


def _clamped(probs):
    eps = float(np.finfo(np.dtype(probs.dtype)).eps)
    return probs.clamp(eps, 1 - eps)


class Bernoulli(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = _t(probs)
            p = _clamped(self.probs)
            self.logits = p.log() - (-p).log1p()
        else:
            self.logits = _t(logits)
            self.probs = self.logits.sigmoid()
        super().__init__(tuple(self.probs.shape), validate_args=validate_args)
        if probs is not None:
            p = self.probs._array
            self._check("parameter", "probs", self.probs, (p >= 0) & (p <= 1))

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        with _eager().no_grad():
            shape = self._extended_shape(sample_shape)
            return _eager().bernoulli(ops.broadcast_to(self.probs, shape=shape))

    def log_prob(self, value):
        v = _t(value)._array
        self._check("value", "argument", value, (v == 0) | (v == 1))
        logits, value = _broadcast(self.logits, _t(value).to(self.logits.dtype))
        return -_eager().nn.functional.binary_cross_entropy_with_logits(logits, value,
                                                                        reduction="none")

    def entropy(self):
        return _eager().nn.functional.binary_cross_entropy_with_logits(
            self.logits, self.probs, reduction="none")


class Categorical(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            probs = _t(probs)
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = _clamped(self.probs).log()
        else:
            logits = _t(logits)
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._num_events = self.probs.shape[-1]
        super().__init__(tuple(self.probs.shape[:-1]), validate_args=validate_args)
        if probs is not None:
            self._check("parameter", "probs", probs, probs._array >= 0)

    @property
    def param_shape(self):
        return tuple(self.probs.shape)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        n = int(np.prod(sample_shape, dtype=np.int64))
        flat = self.probs.detach().reshape(-1, self._num_events)
        draws = _eager().multinomial(flat, n, replacement=True)   # (batch, n)
        out = draws.t().reshape(sample_shape + self._batch_shape)
        return out

    def log_prob(self, value):
        v = _t(value)._array
        self._check("value", "argument", value,
                    (v >= 0) & (v < self._num_events) & (np.floor(v) == v))
        value = _t(value).long().unsqueeze(-1)
        value, log_pmf = _broadcast(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = float(np.finfo(np.dtype(self.logits.dtype)).min)
        return -(self.logits.clamp(min=min_real) * self.probs).sum(-1)

    @property
    def mean(self):
        return _eager().full(self._batch_shape, math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast(_t(low), _t(high))
        super().__init__(tuple(self.low.shape), validate_args=validate_args)
        self._check("parameter", "low", self.low, self.low._array < self.high._array)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        u = _eager().rand(*self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        v = _t(value)._array
        self._check("value", "argument", value, (self.low._array <= v) & (v <= self.high._array))
        inside = (self.low <= value) & (self.high > value)
        return inside.to(self.low.dtype).log() - (self.high - self.low).log()

    def entropy(self):
        return (self.high - self.low).log()

    def cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)


class Independent(Distribution):
    """base_distribution with its rightmost reinterpreted_batch_ndims batch dims taken as one
    event: log_prob and entropy sum over them."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, \
            reinterpreted_batch_ndims
        shape = base_distribution.batch_shape + base_distribution.event_shape
        cut = len(base_distribution.batch_shape) - reinterpreted_batch_ndims
        super().__init__(shape[:cut], shape[cut:])
        self.has_rsample = base_distribution.has_rsample

    def _sum(self, x):
        n = self.reinterpreted_batch_ndims
        return x.sum(tuple(range(-n, 0))) if n else x

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum(self.base_dist.entropy())


class MultivariateNormal(Distribution):
    """torch's MultivariateNormal: loc (..., k) and exactly one of covariance_matrix,
    precision_matrix or scale_tril (..., k, k); everything through the lower Cholesky factor
    L (covariance = L L^T): rsample loc + L eps, log_prob from a triangular solve, entropy
    from log det L."""
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        loc = _t(loc)
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        la = _eager().linalg
        if scale_tril is not None:
            tril = _t(scale_tril)
        elif covariance_matrix is not None:
            tril = self._factor(la, _t(covariance_matrix), "covariance_matrix", validate_args)
        else:
            tril = self._factor(la, la.inv(_t(precision_matrix)), "precision_matrix",
                                validate_args)
        if tril.ndim < 2 or tril.shape[-1] != tril.shape[-2] or tril.shape[-1] != loc.shape[-1]:
            raise ValueError(f"the matrix must be at least two-dimensional and square with "
                             f"loc's last dim ({loc.shape[-1]}), got shape {tuple(tril.shape)}")
        batch = np.broadcast_shapes(tuple(loc.shape[:-1]), tuple(tril.shape[:-2]))
        k = loc.shape[-1]
        self.loc = loc.expand(*batch, k)
        self._unbroadcasted_scale_tril = tril
        self.scale_tril = tril.expand(*batch, k, k)
        super().__init__(batch, (k,), validate_args=validate_args)

    def _factor(self, la, matrix, name, validate_args):
        try:
            return la.cholesky(matrix)
        except Exception:  # noqa: BLE001 - not positive definite: torch's ValueError
            if validate_args is False:
                raise
            raise ValueError(f"Expected parameter {name} (Tensor of shape "
                             f"{tuple(matrix.shape)}) of distribution MultivariateNormal to "
                             f"satisfy the constraint PositiveDefinite(), but found invalid "
                             f"values:\n{matrix}") from None

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def covariance_matrix(self):
        return self.scale_tril @ self.scale_tril.transpose(-1, -2)

    @property
    def precision_matrix(self):
        return _eager().linalg.inv(self.covariance_matrix)

    @property
    def variance(self):
        return (self.scale_tril ** 2).sum(-1)

    def rsample(self, sample_shape=()):
        eps = _eager().randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self.scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        diff = _t(value) - self.loc
        shape = np.broadcast_shapes(tuple(diff.shape[:-1]), tuple(self.scale_tril.shape[:-2]))
        k = self._event_shape[0]
        tril = self.scale_tril.expand(*shape, k, k)
        z = _eager().linalg.solve_triangular(tril, diff.expand(*shape, k).unsqueeze(-1),
                                             upper=False).squeeze(-1)
        return -0.5 * (k * math.log(2 * math.pi) + (z ** 2).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h


def kl_divergence(p, q):
    """KL(p || q) for two distributions of the same family (Normal, Bernoulli, Categorical,
    MultivariateNormal, Independent of those)."""
    if type(p) is not type(q):
        raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}) is "
                                  f"not implemented by dualgrad")
    if isinstance(p, Normal):
        var_ratio = (p.scale / q.scale) ** 2
        t1 = ((p.loc - q.loc) / q.scale) ** 2
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())
    if isinstance(p, Categorical):
        t = p.probs * (p.logits - q.logits)
        t = ops.where(_as_mask(q.probs == 0, t), math.inf, t)
        return ops.where(_as_mask(p.probs == 0, t), 0.0, t).sum(-1)
    if isinstance(p, Bernoulli):
        F = _eager().nn.functional
        t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
        t1 = ops.where(p.probs == 0, 0.0, ops.where(q.probs == 0, math.inf, t1))
        t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
        t2 = ops.where(p.probs == 1, 0.0, ops.where(q.probs == 1, math.inf, t2))
        return t1 + t2
    if isinstance(p, MultivariateNormal):
        return _kl_mvn(p, q)
    if isinstance(p, Independent):
        if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
            raise NotImplementedError("kl_divergence of Independent distributions with "
                                      "different reinterpreted_batch_ndims")
        return p._sum(kl_divergence(p.base_dist, q.base_dist))
    raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}) is not "
                              f"implemented by dualgrad")


def _kl_mvn(p, q):
    """KL(p || q) of two MultivariateNormals from their Cholesky factors: log det L_q -
    log det L_p + (||L_q^-1 L_p||_F^2 + ||L_q^-1 (loc_q - loc_p)||^2 - k) / 2."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    k = p.event_shape[0]
    batch = np.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    lp, lq = p.scale_tril.expand(*batch, k, k), q.scale_tril.expand(*batch, k, k)
    solve = _eager().linalg.solve_triangular
    m = solve(lq, lp, upper=False)
    d = solve(lq, (q.loc - p.loc).expand(*batch, k).unsqueeze(-1), upper=False).squeeze(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * ((m ** 2).sum((-2, -1)) +
                                                         (d ** 2).sum(-1) - k)


def _as_mask(mask, like):
    return ops.broadcast_to(mask, shape=tuple(like.shape))
