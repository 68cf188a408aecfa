"""torch.distributions.transforms: invertible maps with their log |det Jacobian|, for
TransformedDistribution (a tanh-squashed Gaussian policy, a log-normal, a Gumbel).

>>> from dualgrad import eager as torch
>>> from dualgrad.eager.distributions.transforms import TanhTransform
>>> t = TanhTransform(cache_size=1)
>>> x = torch.tensor([0.5]); y = t(x)
>>> t.inv(y) is x, round(t.log_abs_det_jacobian(x, y).item(), 4)
(True, -0.2402)
"""
from __future__ import annotations

import math

import numpy as np

from . import constraints
from .distribution import eager, sum_rightmost
from .transform_base import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform,
                             PowerTransform, SigmoidTransform, SoftmaxTransform,
                             SoftplusTransform, TanhTransform, Transform, _clipped_sigmoid,
                             identity_transform)

__all__ = ["Transform", "ComposeTransform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "SoftmaxTransform", "AbsTransform",
           "PowerTransform", "SoftplusTransform", "IndependentTransform", "ReshapeTransform",
           "StickBreakingTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "CumulativeDistributionTransform", "CorrCholeskyTransform", "CatTransform",
           "StackTransform", "identity_transform"]


class IndependentTransform(Transform):
    """base_transform with its rightmost reinterpreted_batch_ndims dims taken as one event."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, " \
               f"{self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """The rightmost dims of shape in_shape reshaped to out_shape (log |det J| = 0)."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = eager().Size(in_shape), eager().Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _reshaped(self, shape, frm, to):
        if len(shape) < len(frm):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(frm)
        if tuple(shape[cut:]) != tuple(frm):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {frm}")
        return tuple(shape[:cut]) + tuple(to)

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


class StickBreakingTransform(Transform):
    """R^(K-1) onto the K-simplex by stick breaking (bijective, unlike SoftmaxTransform)."""
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    def __hash__(self):
        return hash(StickBreakingTransform)

    @staticmethod
    def _offset(n, like):
        return n - eager().ones(n, dtype=like.dtype).cumsum(-1)

    def _call(self, x):
        F = eager().nn.functional
        z = _clipped_sigmoid(x - (self._offset(x.shape[-1], x) + 1).log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - eager().ones(y_crop.shape[-1], dtype=y.dtype).cumsum(-1)
        # NOTE: clamped: 1 - cumsum can round to 0 or below when y[..., -1] ~ 0
        sf = (1 - y_crop.cumsum(-1)).clamp(min=eager().finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - (self._offset(x.shape[-1], x) + 1).log()
        # NOTE: 1 - sigmoid(x) = exp(-x) sigmoid(x)
        return (-x + eager().nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """An unconstrained square matrix to a lower-triangular one with a positive diagonal."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    def __hash__(self):
        return hash(LowerCholeskyTransform)

    def _call(self, x):
        return x.tril(-1) + eager().diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + eager().diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """An unconstrained square matrix to L L^T, L its LowerCholeskyTransform."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    def __hash__(self):
        return hash(PositiveDefiniteTransform)

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(eager().linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """x -> distribution.cdf(x), onto the unit interval."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


class CorrCholeskyTransform(Transform):
    """R^(D(D-1)/2) onto Cholesky factors of D x D correlation matrices: tanh, then stick
    breaking on the squared entries of each row (Stan's construction)."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    def __hash__(self):
        return hash(CorrCholeskyTransform)

    def _call(self, x):
        from .distribution import vec_to_tril_matrix
        e = eager()
        eps = float(np.finfo(np.dtype(x.dtype)).eps)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # NOTE: y = sign(r) sqrt(z prod(1 - z)) = r sqrt(prod over earlier entries of (1 - z))
        remaining = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + e.eye(r.shape[-1], dtype=r.dtype)
        return r * e.nn.functional.pad(remaining[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        from .distribution import tril_matrix_to_vec
        left = 1 - (y * y).cumsum(-1)
        shifted = eager().nn.functional.pad(left[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """Of x and the flattened strictly-lower part of y (the spaces' dimensions differ)."""
        from .distribution import tril_matrix_to_vec
        left = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        stick = 0.5 * left.log().sum(-1)
        tanh = -2 * (x + eager().nn.functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


def _check_along(z, dim, size, what, name="tensor"):
    if not -z.dim() <= dim < z.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {z.dim()} dimensions")
    if z.shape[dim] != size:
        raise AssertionError(f"{what}")


class CatTransform(Transform):
    """Transforms applied to consecutive pieces (of lengths `lengths`) of dim `dim`."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, z, name):
        _check_along(z, self.dim, self.length,
                     f"{name}.size({self.dim}) = {z.shape[self.dim]} must equal length "
                     f"{self.length}", "tensor" if name in "xy" else name)
        start = 0
        for t, n in zip(self.transforms, self.lengths):
            yield t, z.narrow(self.dim, start, n)
            start += n

    def _call(self, x):
        return eager().cat([t(piece) for t, piece in self._pieces(x, "x")], self.dim)

    def _inverse(self, y):
        return eager().cat([t.inv(piece) for t, piece in self._pieces(y, "y")], self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        for (t, xs), (_, ys) in zip(self._pieces(x, "x"), self._pieces(y, "y")):
            term = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                term = sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return eager().cat(terms, dim)
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms applied to the slices of dim `dim`, one each."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z, name):
        n = len(self.transforms)
        _check_along(z, self.dim, n, f"{name}.size({self.dim}) = {z.shape[self.dim]} must "
                                     f"equal len(transforms) {n}")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return eager().stack([t(s) for s, t in zip(self._slices(x, "x"), self.transforms)],
                             self.dim)

    def _inverse(self, y):
        return eager().stack([t.inv(s) for s, t in zip(self._slices(y, "y"), self.transforms)],
                             self.dim)

    def log_abs_det_jacobian(self, x, y):
        return eager().stack([t.log_abs_det_jacobian(a, b) for a, b, t in zip(
            self._slices(x, "x"), self._slices(y, "y"), self.transforms)], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
