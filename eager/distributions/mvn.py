"""MultivariateNormal, through the lower Cholesky factor of its covariance."""
from __future__ import annotations

import math

import numpy as np

from . import constraints
from .distribution import Distribution, eager, lazy_property

__all__ = ["MultivariateNormal"]


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


