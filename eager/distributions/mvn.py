"""MultivariateNormal, through the lower Cholesky factor of its covariance, and
LowRankMultivariateNormal, through the capacitance matrix of its low-rank-plus-diagonal one."""
from __future__ import annotations

import math

import numpy as np

from . import constraints
from .distribution import Distribution, eager, lazy_property

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal"]


class MultivariateNormal(Distribution):
    """torch's MultivariateNormal: loc (..., k) and exactly one of covariance_matrix,
    precision_matrix or scale_tril (..., k, k); everything through the lower Cholesky factor
    L (covariance = L L^T): rsample loc + L eps, log_prob from a triangular solve, entropy
    from log det L."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        la = eager().linalg
        if scale_tril is not None:
            tril = scale_tril
        elif covariance_matrix is not None:
            tril = self._factor(la, covariance_matrix, "covariance_matrix", validate_args)
        else:
            tril = self._factor(la, la.inv(precision_matrix), "precision_matrix",
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

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        k = self._event_shape[0]
        new.loc = self.loc.expand(*batch_shape, k)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        new.scale_tril = self.scale_tril.expand(*batch_shape, k, k)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def covariance_matrix(self):
        return self.scale_tril @ self.scale_tril.transpose(-1, -2)

    @lazy_property
    def precision_matrix(self):
        return eager().linalg.inv(self.covariance_matrix)

    @property
    def variance(self):
        return (self.scale_tril ** 2).sum(-1)

    def rsample(self, sample_shape=()):
        eps = eager().randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self.scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        diff = value - self.loc
        shape = np.broadcast_shapes(tuple(diff.shape[:-1]), tuple(self.scale_tril.shape[:-2]))
        k = self._event_shape[0]
        tril = self.scale_tril.expand(*shape, k, k)
        z = eager().linalg.solve_triangular(tril, diff.expand(*shape, k).unsqueeze(-1),
                                             upper=False).squeeze(-1)
        return -0.5 * (k * math.log(2 * math.pi) + (z ** 2).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h




class LowRankMultivariateNormal(Distribution):
    """A normal with covariance cov_factor cov_factor^T + diag(cov_diag): log_prob and entropy
    through the capacitance matrix I + W^T D^-1 W (Woodbury), as torch."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape "
                             f"{eager().Size(event_shape)}")
        try:
            loc_, self.cov_factor, diag_ = eager().broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {eager().Size(loc.shape)}, "
                             f"cov_factor {eager().Size(cov_factor.shape)}, cov_diag "
                             f"{eager().Size(cov_diag.shape)}") from e
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc, new.cov_diag = self.loc.expand(loc_shape), self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    def _full(self, x, matrix=True):
        shape = tuple(self._batch_shape) + tuple(self._event_shape) * (2 if matrix else 1)
        return x.expand(shape)

    @lazy_property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self._full(w.pow(2).sum(-1) + d, matrix=False)

    @lazy_property
    def _unbroadcasted_scale_tril(self):
        # NOTE: W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, whose middle factor has
        # eigenvalues >= 1: a well-conditioned Cholesky
        n = self._event_shape[0]
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dw = self._unbroadcasted_cov_factor / sqrt_d
        k = dw @ dw.mT + eager().eye(n, dtype=dw.dtype)
        return sqrt_d * eager().linalg.cholesky(k)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        return self._full(w @ w.mT + eager().diag_embed(self._unbroadcasted_cov_diag))

    @lazy_property
    def precision_matrix(self):
        """inv(D) - A^T A with A = L_C^-1 W^T D^-1 (Woodbury)."""
        d = self._unbroadcasted_cov_diag
        a = _woodbury_a(self._capacitance_tril, self._unbroadcasted_cov_factor, d)
        return self._full(eager().diag_embed(d.reciprocal()) - a.mT @ a)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        m = self.cov_factor.shape[-1]
        e = eager()
        eps_w = e.randn(*(shape[:-1] + (m,)), dtype=self.loc.dtype)
        eps_d = e.randn(*shape, dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1) + \
            self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _half_log_det(self):
        return 0.5 * _lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        m = _lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                 value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + 2 * self._half_log_det()
                       + m)

    def entropy(self):
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self._batch_shape)) if self._batch_shape else h


def _capacitance_tril(w, d):
    """Cholesky factor of I + W^T D^-1 W."""
    m = w.shape[-1]
    k = (w.mT / d.unsqueeze(-2)) @ w + eager().eye(m, dtype=w.dtype)
    return eager().linalg.cholesky(k)


def _lowrank_logdet(d, capacitance_tril):
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def _woodbury_a(capacitance_tril, w, d):
    return eager().linalg.solve_triangular(capacitance_tril, w.mT / d.unsqueeze(-2), upper=False)


def _lowrank_mahalanobis(w, d, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2."""
    wt_dinv_x = ((w.mT / d.unsqueeze(-2)) @ x.unsqueeze(-1))
    shape = np.broadcast_shapes(tuple(wt_dinv_x.shape[:-2]), tuple(capacitance_tril.shape[:-2]))
    m = capacitance_tril.shape[-1]
    z = eager().linalg.solve_triangular(capacitance_tril.expand(*shape, m, m),
                                        wt_dinv_x.expand(*shape, m, 1), upper=False)
    return (x.pow(2) / d).sum(-1) - z.squeeze(-1).pow(2).sum(-1)
