"""MultivariateNormal, through the lower Cholesky factor of its covariance, and
LowRankMultivariateNormal, through the capacitance matrix of its low-rank-plus-diagonal one,
LKJCholesky, over Cholesky factors of correlation matrices, and Wishart."""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from . import constraints
from .distribution import Distribution, ExponentialFamily, eager, lazy_property

__all__ = ["MultivariateNormal", "LowRankMultivariateNormal", "LKJCholesky", "Wishart"]


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


class LKJCholesky(Distribution):
    """Cholesky factors of dim x dim correlation matrices with density proportional to
    det(C)^(concentration - 1); draws by the onion method through Beta draws."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        from .distribution import broadcast_all
        from .gamma import Beta
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        e = eager()
        # NOTE: the onion method (Lewandowski, Kurowicka and Joe 2009, 3.2): row i >= 1 of the
        # factor has squared norm ~ Beta(i / 2, eta + (dim - 2) / 2 - (i - 1) / 2) (row 0 is
        # unused). torch draws Beta(i - 1/2, ...) from row 2 on, whose rows are not LKJ's
        # (docs/pytorch-compat.md); the density, log_prob, is the same
        marginal = self.concentration + 0.5 * (dim - 2)
        dt = self.concentration.dtype
        offset = e.cat([e.zeros(1, dtype=dt), e.arange(dim - 1, dtype=dt)])
        half_rows = e.cat([e.full((1,), 0.5, dtype=dt), e.arange(1, dim, dtype=dt) / 2])
        # NOTE: broadcast explicitly: the batch's size-1 dim meets the rows on purpose
        marginal, offset = e.broadcast_tensors(marginal.unsqueeze(-1), offset)
        self._beta = Beta(half_rows.expand(offset.shape), marginal - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        e = eager()
        with e.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = e.randn(*self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            # NOTE: the first row is all zeros (0 / 0): torch sets it to 0
            first = e.arange(self.dim) == 0
            u = e.where(first.unsqueeze(-1), 0.0, u / e.where(norm == 0, 1.0, norm))
            w = y.sqrt() * u
            tiny = e.finfo(w.dtype).tiny
            diag = (1 - (w ** 2).sum(-1)).clamp(min=tiny).sqrt()
            return w + e.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        e = eager()
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        c, order = e.broadcast_tensors((self.concentration - 1).unsqueeze(-1),
                                       e.arange(2, self.dim + 1))
        order = 2 * c + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + e.mvlgamma(alpha - 0.5, dm1) - \
            alpha.lgamma() * dm1
        return unnormalized - normalize


def _mvdigamma(x, p):
    """The multivariate digamma: sum over i < p of digamma(x - i / 2)."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = eager().arange(p, dtype=x.dtype) / 2
    xs, halves = eager().broadcast_tensors(x.unsqueeze(-1), halves)
    return (xs - halves).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """Positive definite p x p matrices X = L A A^T L^T (Bartlett): df and exactly one of
    covariance_matrix, precision_matrix or scale_tril (L), as torch's."""
    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param, e = given[0], eager()
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = e.tensor(df, dtype=param.dtype)
        else:
            batch_shape = tuple(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        name = ("covariance_matrix" if covariance_matrix is not None else
                "precision_matrix" if precision_matrix is not None else "scale_tril")
        setattr(self, name, param.expand(batch_shape + event_shape))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = e.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        """Chi2(df - i) for i < p: the squared diagonal of Bartlett's factor."""
        from .gamma import Chi2
        p = self._event_shape[-1]
        steps = eager().arange(p, dtype=self._unbroadcasted_scale_tril.dtype)
        df, steps = eager().broadcast_tensors(self.df.unsqueeze(-1), steps)
        return Chi2(df - steps)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tuple(batch_shape)
        cov_shape = batch_shape + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _full(self, x):
        return x.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return self._full(tril @ tril.mT)

    @lazy_property
    def precision_matrix(self):
        eye = eager().eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return self._full(eager().cholesky_solve(eye, self._unbroadcasted_scale_tril))

    def _df_matrix(self, x):
        return x.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = eager().where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        v = self.covariance_matrix
        d = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (v.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape):
        from .distribution import vec_to_tril_matrix
        e, p = eager(), self._event_shape[-1]
        eps = e.finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = e.randn(*(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,)),
                        dtype=diag.dtype)
        noise = e.diag_embed(diag) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws; a draw that is not positive definite is drawn again (up to
        max_try_correction times, 10 by default), with torch's warning."""
        sample_shape = tuple(sample_shape)
        sample = self._bartlett(sample_shape)
        singular = ~self.support.check(sample)
        if not bool(singular.any()):
            return sample
        warnings.warn("Singular sample detected.", stacklevel=2)
        for _ in range(10 if max_try_correction is None else max_try_correction):
            sample = eager().where(singular[..., None, None], self._bartlett(sample_shape),
                                   sample)
            singular = ~self.support.check(sample)
            if not bool(singular.any()):
                break
        return sample

    def _log_det_scale_part(self, p):
        return p * math.log(2) / 2 + \
            self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        e, nu, p = eager(), self.df, self._event_shape[-1]
        trace = e.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            dim1=-2, dim2=-1).sum(-1)
        return -nu * self._log_det_scale_part(p) - e.mvlgamma(nu / 2, p) + \
            (nu - p - 1) / 2 * e.linalg.slogdet(value).logabsdet - trace / 2

    def entropy(self):
        e, nu, p = eager(), self.df, self._event_shape[-1]
        return (p + 1) * self._log_det_scale_part(p) + e.mvlgamma(nu / 2, p) - \
            (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2


def _precision_to_scale_tril(precision):
    """The lower Cholesky factor of precision's inverse, through the flipped Cholesky factor
    of precision (no explicit inverse), as torch."""
    e = eager()
    lf = e.linalg.cholesky(precision.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).mT
    eye = e.eye(precision.shape[-1], dtype=precision.dtype)
    return e.linalg.solve_triangular(l_inv, eye.expand(tuple(l_inv.shape)), upper=False)
