"""torch.distributions.transforms: invertible maps with their log |det Jacobian|, for
TransformedDistribution (a tanh-squashed Gaussian policy, a log-normal, a Gumbel).

>>> from dualgrad import eager as torch
>>> from dualgrad.eager.distributions.transforms import TanhTransform
>>> t = TanhTransform(cache_size=1)
>>> x = torch.tensor([0.5]); y = t(x)
>>> t.inv(y) is x, round(t.log_abs_det_jacobian(x, y).item(), 4)
(True, -0.2399)
"""
from __future__ import annotations

import math
import numbers
import weakref

import numpy as np

from . import constraints
from .distribution import eager, sum_rightmost

__all__ = ["Transform", "ComposeTransform", "ExpTransform", "AffineTransform",
           "SigmoidTransform", "TanhTransform", "SoftmaxTransform", "AbsTransform",
           "PowerTransform", "SoftplusTransform", "IndependentTransform", "ReshapeTransform",
           "StickBreakingTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "CumulativeDistributionTransform", "CorrCholeskyTransform", "CatTransform",
           "StackTransform",
           "identity_transform"]


class Transform:
    """An invertible (where `bijective`) map from `domain` to `codomain`; `inv` is its inverse,
    `log_abs_det_jacobian(x, y)` the log |dy/dx|. cache_size=1 keeps the last (x, y) pair, so
    the inverse of a y this transform returned is the x it came from, exactly."""
    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = None, None
        super().__init__()

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return id(self)

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self):
        return hash(("inv", self._inv))

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """parts applied in order; the domain and codomain widened to the event dims they need."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def __hash__(self):
        return hash(tuple(self.parts))

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim -= part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return eager().zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(sum_rightmost(part.log_abs_det_jacobian(a, b),
                                       event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    def __hash__(self):
        return hash(ExpTransform)

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _broadcast_params(exponent)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else \
            PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tuple(np.broadcast_shapes(tuple(shape), tuple(getattr(self.exponent, "shape", ()))))

    inverse_shape = forward_shape


def _broadcast_params(*values):
    from .distribution import broadcast_all
    return broadcast_all(*values)


def _clipped_sigmoid(x):
    fi = np.finfo(np.dtype(x.dtype))
    return x.sigmoid().clamp(min=float(fi.tiny), max=1.0 - float(fi.eps))


class SigmoidTransform(Transform):
    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    def __hash__(self):
        return hash(SigmoidTransform)

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        fi = np.finfo(np.dtype(y.dtype))
        y = y.clamp(min=float(fi.tiny), max=1.0 - float(fi.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        F = eager().nn.functional
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); the inverse is atanh, unclamped as torch's (a y of exactly +-1 gives inf:
    keep the pre-tanh sample with cache_size=1, as SAC implementations do)."""
    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    def __hash__(self):
        return hash(TanhTransform)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # NOTE: log(1 - tanh(x)^2) written stably: 2 (log 2 - x - softplus(-2x))
        return 2.0 * (math.log(2.0) - x - eager().nn.functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    def __hash__(self):
        return hash(AbsTransform)

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x over event_dim rightmost dims."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else \
            constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        return _same(self.loc, other.loc) and _same(self.scale, other.scale)

    def __hash__(self):
        return id(self)

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            s = float(self.scale)
            return 1 if s > 0 else -1 if s < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Real):
            result = eager().full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self._event_dim]) +
                                    (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tuple(np.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                         tuple(getattr(self.scale, "shape", ()))))

    inverse_shape = forward_shape


def _same(a, b):
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    if isinstance(a, numbers.Number) or isinstance(b, numbers.Number):
        return False
    return tuple(a.shape) == tuple(b.shape) and bool((a == b).all())


class SoftmaxTransform(Transform):
    """x -> softmax(x) over the last dim (not bijective: its inverse is log)."""
    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    def __hash__(self):
        return hash(SoftmaxTransform)

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""
    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    def __hash__(self):
        return hash(SoftplusTransform)

    def _call(self, x):
        return eager().nn.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -eager().nn.functional.softplus(-x)


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
