"""nn.init: in-place initialisers with torch's formulas (fan_in / fan_out, gains).

They write under no_grad, like torch's, so they work on parameters that require grad.

>>> from dualgrad.eager import nn
>>> w = nn.Linear(64, 32).weight
>>> _ = nn.init.xavier_uniform_(w)
>>> bool(abs(w).max() <= (6 / (64 + 32)) ** 0.5)
True
"""
from __future__ import annotations

import math

import numpy as np

from ..generator import rng_of
from ..inplace import _stamp


def calculate_gain(nonlinearity, param=None):
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(t):
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = int(np.prod(t.shape[2:])) if t.ndim > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


def _set(t, values):
    t._array[...] = np.asarray(values, dtype=t._array.dtype)
    _stamp(t)
    return t


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _set(tensor, rng_of(generator).uniform(a, b, tensor.shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _set(tensor, rng_of(generator).normal(mean, std, tensor.shape))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal samples redrawn until they fall in [a, b]."""
    rng, out = rng_of(generator), np.empty(tensor.shape)
    flat, todo = out.reshape(-1), np.arange(out.size)
    while todo.size:
        draw = rng.normal(mean, std, todo.size)
        ok = (draw >= a) & (draw <= b)
        flat[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return _set(tensor, out)


def constant_(tensor, val):
    return _set(tensor, np.full(tensor.shape, val))


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _set(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """The identity of a convolution: 1 at the centre of channel d's kernel for input
    channel d (per group), 0 elsewhere; 3-, 4- and 5-d weights, as torch's."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    out = np.zeros(sizes)
    centre = tuple(n // 2 for n in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            out[(g * per_group + d, d) + centre] = 1
    return _set(tensor, out)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-d normal(0, std) sample with ceil(sparsity * rows) zeros in each column, at rows
    drawn at random per column, as torch's."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    rng = rng_of(generator)
    out = rng.normal(0.0, std, (rows, cols))
    for c in range(cols):
        out[rng.permutation(rows)[:zeros], c] = 0
    return _set(tensor, out)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan = _fans(tensor)[0 if mode == "fan_in" else 1]
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor._array.size // rows
    flat = rng_of(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _set(tensor, gain * q.reshape(tensor.shape))


def _deprecated(new):
    """torch's old spellings without the trailing underscore: warn and call the new one."""
    def old(*args, **kwargs):
        import warnings
        warnings.warn(f"`nn.init.{new.__name__[:-1]}` is now deprecated in favor of "
                      f"`nn.init.{new.__name__}`.", FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    old.__name__ = new.__name__[:-1]
    return old


uniform, normal, constant = _deprecated(uniform_), _deprecated(normal_), _deprecated(constant_)
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
