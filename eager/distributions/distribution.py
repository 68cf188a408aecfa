"""torch.distributions.Distribution, the base every family derives from, and the helpers the
families share (torch.distributions.utils' names: broadcast_all, lazy_property,
probs_to_logits, logits_to_probs, clamp_probs)."""
from __future__ import annotations

import numbers

import numpy as np

from ..core import Tensor
from . import constraints

__all__ = ["Distribution", "ExponentialFamily", "broadcast_all", "lazy_property",
           "probs_to_logits", "logits_to_probs", "clamp_probs", "sum_rightmost",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def eager():
    from dualgrad import eager as e
    return e


class Distribution:
    """batch_shape and event_shape, torch's argument and value validation, sample() as
    rsample() without gradient, and the NotImplementedError of what a family lacks."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = eager().Size(tuple(batch_shape))
        self._event_shape = eager().Size(tuple(event_shape))
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                         lazy_property):
                continue   # NOTE: probs of a distribution given logits: never invalid
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self)} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        with eager().no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        if not isinstance(sample_shape, tuple):
            sample_shape = tuple(sample_shape)
        return eager().Size(sample_shape + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """torch's checks of a value given to log_prob / cdf: a Tensor, the event shape on
        the right, broadcastable to the batch, inside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, event = tuple(value.shape), tuple(self._event_shape)
        start = len(shape) - len(event)
        if shape[start:] != event:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{eager().Size(shape)} vs {self._event_shape}.")
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{eager().Size(shape)} vs {eager().Size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support!r}) "
                             f"of the distribution {self!r}, but found invalid values:\n"
                             f"{value}")

    def __repr__(self):
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        shown = ", ".join(f"{p}: " + (str(self.__dict__[p].item())
                                        if self.__dict__[p].numel() == 1
                                        else repr(eager().Size(self.__dict__[p].shape)))
                          for p in names)
        return f"{type(self).__name__}({shown})"


class ExponentialFamily(Distribution):
    """torch's base of the exponential families (Gamma, Beta, Dirichlet, Poisson, ...)."""


class lazy_property:
    """A property computed on first use and then stored on the instance (torch's probs of a
    distribution given logits, and the other way round)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with eager().enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def broadcast_all(*values):
    """The values broadcast to one shape: numbers become tensors of the first tensor's dtype
    (the default dtype without one), as torch's broadcast_all."""
    e = eager()
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None else e.get_default_dtype()
    ts = [v if isinstance(v, Tensor) else e.tensor(v, dtype=dtype) for v in values]
    return e.broadcast_tensors(*ts)


def clamp_probs(probs):
    eps = float(np.finfo(np.dtype(probs.dtype)).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


class BinaryParams:
    """A success probability given as `probs` or `logits`, the other derived on first read
    (Bernoulli, Binomial, Geometric, NegativeBinomial, LogitRelaxedBernoulli: torch writes the
    pair in each)."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


def sum_rightmost(value, dim):
    """value summed over its rightmost dim dims (torch's _sum_rightmost)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def seed_tensor():
    """A fresh int64 seed from the default generator, for the seeded draws of ops.draws
    (inside compile() a new draw per call)."""
    from ..generator import drawn
    seed = drawn(None, (), np.int64, lambda g: g.integers(0, 2 ** 62))
    return seed if isinstance(seed, Tensor) else Tensor(np.asarray(seed))


def _tril_positions(n, diag):
    """Flat positions (row-major) of the entries of an n x n matrix with col <= row + diag."""
    rows, cols = np.indices((n, n))
    return np.flatnonzero(cols < rows + diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The lower-triangular entries (col <= row + diag) of the last two dims, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., eager().tensor(_tril_positions(n, diag))]


def vec_to_tril_matrix(vec, diag=0):
    """The D x D lower-triangular matrices whose entries (col <= row + diag), row by row,
    are vec's last dim."""
    m = vec.shape[-1]
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > float(np.finfo(np.dtype(vec.dtype)).eps):
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         f"lower triangular part of a square D x D matrix.")
    n = round(n)
    index = np.full(n * n, m)                    # NOTE: m picks the zero appended below
    index[_tril_positions(n, diag)] = np.arange(m)
    padded = eager().cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    return padded[..., eager().tensor(index)].reshape(tuple(vec.shape[:-1]) + (n, n))
