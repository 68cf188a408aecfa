"""TF1's variable initialisers (`tf.compat.v1.*_initializer`): callables `init(shape, dtype=None,
partition_info=None)` returning the initial value, a random op or an array.

Fans are TF's: for a 2-d shape (fan_in, fan_out); for a conv kernel (kh, kw, in, out) the
receptive field kh*kw multiplies both.

>>> import numpy as np
>>> from dualgrad import graph
>>> graph.constant_initializer([1.0, 2.0])((2, 2)).tolist()
[[1.0, 2.0], [2.0, 2.0]]
"""
from __future__ import annotations

import math

import numpy as np

from .dtypes import as_dtype
from .math_ops import random_normal, random_uniform, truncated_normal

__all__ = ["zeros_initializer", "ones_initializer", "constant_initializer",
           "random_normal_initializer", "truncated_normal_initializer",
           "random_uniform_initializer", "glorot_uniform_initializer",
           "glorot_normal_initializer", "variance_scaling_initializer", "compute_fans",
           "he_normal", "he_uniform", "lecun_normal", "lecun_uniform"]


def compute_fans(shape):
    """(fan_in, fan_out) of a variable shape, as TF computes them."""
    shape = tuple(int(d) for d in shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2], dtype=np.int64))
    return shape[-2] * receptive, shape[-1] * receptive


class _Initializer:
    """Base: holds the default dtype; `__call__(shape, dtype=None, partition_info=None)`."""

    def __init__(self, dtype="float32"):
        self.dtype = as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return self._make(tuple(int(d) for d in shape),
                          self.dtype if dtype is None else as_dtype(dtype))

    def _make(self, shape, dtype):
        raise NotImplementedError


class zeros_initializer(_Initializer):  # noqa: N801 - TF's names
    def _make(self, shape, dtype):
        return np.zeros(shape, dtype)


class ones_initializer(_Initializer):  # noqa: N801
    def _make(self, shape, dtype):
        return np.ones(shape, dtype)


class constant_initializer(_Initializer):  # noqa: N801
    """A scalar fills the shape; a list shorter than the shape is padded with its last
    element (TF1's rule), one of the right size is reshaped."""

    def __init__(self, value=0, dtype="float32", verify_shape=False):
        super().__init__(dtype)
        self.value, self.verify_shape = np.asarray(value), verify_shape

    def _make(self, shape, dtype):
        v, n = self.value, int(np.prod(shape, dtype=np.int64))
        if v.ndim == 0:
            return np.full(shape, v, dtype)
        if self.verify_shape and v.shape != shape:
            raise ValueError(f"constant_initializer: value of shape {v.shape} does not have "
                             f"the variable's shape {shape} (verify_shape=True)")
        flat = v.reshape(-1)
        if flat.size > n:
            raise ValueError(f"constant_initializer: {flat.size} values are too many for "
                             f"shape {shape} ({n} elements)")
        if flat.size < n:
            flat = np.concatenate([flat, np.repeat(flat[-1:], n - flat.size)])
        return flat.reshape(shape).astype(dtype)


class _Normal(_Initializer):
    """The options of the two normal initializers (siblings in TF)."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype="float32"):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed


class random_normal_initializer(_Normal):  # noqa: N801
    def _make(self, shape, dtype):
        return random_normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)


class truncated_normal_initializer(_Normal):  # noqa: N801
    def _make(self, shape, dtype):
        return truncated_normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)


class random_uniform_initializer(_Initializer):  # noqa: N801
    def __init__(self, minval=0, maxval=None, seed=None, dtype="float32"):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def _make(self, shape, dtype):
        return random_uniform(shape, self.minval, self.maxval, dtype=dtype, seed=self.seed)


class variance_scaling_initializer(_Initializer):  # noqa: N801
    """stddev = sqrt(scale / n) (after truncation for 'truncated_normal', TF1's default
    distribution; 'normal' means the same), or uniform in +-sqrt(3 * scale / n); n is the
    fan_in, the fan_out or their mean (mode 'fan_avg')."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype="float32"):
        super().__init__(dtype)
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"variance_scaling_initializer: mode must be 'fan_in', 'fan_out' "
                             f"or 'fan_avg', got {mode!r}")
        if distribution not in ("normal", "truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"variance_scaling_initializer: unknown distribution "
                             f"{distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def _make(self, shape, dtype):
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        var = self.scale / max(1.0, n[self.mode])
        if self.distribution == "uniform":
            lim = math.sqrt(3.0 * var)
            return random_uniform(shape, -lim, lim, dtype=dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(shape, 0.0, math.sqrt(var), dtype=dtype, seed=self.seed)
        # NOTE: the stddev of a normal truncated at 2 sigma is 0.8796... of the untruncated one
        return truncated_normal(shape, 0.0, math.sqrt(var) / 0.87962566103423978, dtype=dtype,
                                seed=self.seed)


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801
    """Uniform in +-sqrt(6 / (fan_in + fan_out)): get_variable's default for floats."""

    def __init__(self, seed=None, dtype="float32"):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801
    def __init__(self, seed=None, dtype="float32"):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


def he_normal(seed=None):
    """Truncated normal with variance 2 / fan_in (tf.compat.v1.initializers.he_normal)."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)
