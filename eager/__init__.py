"""dualgrad's eager engine: define-by-run, in PyTorch's style.

>>> from dualgrad import eager
>>> x = eager.tensor([[1.0, 2.0]], requires_grad=True)
>>> w = eager.ones(2, 3)
>>> (x @ w).sum().backward()
>>> x.grad
tensor([[3., 3.]], shape=(1, 2), dtype=float32)
"""
from __future__ import annotations
if __name__ != "dualgrad.eager":  # NOTE: a second copy would mean a second op registry
    raise ImportError(f"dualgrad's engines import under one root: write `from dualgrad import eager`, "
                      f"not `import {__name__}` (found {__file__})")

from contextlib import contextmanager

import numpy as np

from dualgrad import ops
from dualgrad.ops import ShapeError, KernelError
from .tensor import Tensor, _GRAD

float16, float32, float64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
int32, int64, bool_ = np.dtype("int32"), np.dtype("int64"), np.dtype("bool")
float, double, long = float32, float64, int64  # noqa: A001 - torch's aliases
_DEFAULT_FLOAT = [float32]


# -- making tensors ---------------------------------------------------------------------------
def _dtype_of(data, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    arr = np.asarray(data)
    if arr.dtype.kind == "f" and not isinstance(data, np.ndarray):
        return _DEFAULT_FLOAT[0]       # Python floats become float32, as in torch
    if arr.dtype == np.float64 and isinstance(data, np.ndarray):
        return arr.dtype               # an explicit float64 array stays float64 (torch does too)
    return arr.dtype if arr.dtype.kind != "i" else np.dtype(np.int64)


def tensor(data, dtype=None, requires_grad=False):
    """A new leaf tensor holding a copy of `data` (a list, scalar, ndarray or Tensor)."""
    if isinstance(data, Tensor):
        data = data.data
    arr = np.array(data, dtype=_dtype_of(data, dtype), copy=True)
    if requires_grad and arr.dtype.kind not in "fc":
        raise RuntimeError(f"only floating-point tensors can require gradients, got {arr.dtype}")
    return Tensor(arr, requires_grad=requires_grad)


def from_numpy(arr):
    """A tensor sharing memory with `arr` (no copy), as torch.from_numpy."""
    return Tensor(np.asarray(arr))


def as_tensor(data, dtype=None):
    if isinstance(data, Tensor) and (dtype is None or data.dtype == np.dtype(dtype)):
        return data
    return tensor(data, dtype)


def _size(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def zeros(*shape, dtype=None, requires_grad=False):
    return Tensor(np.zeros(_size(shape), dtype or _DEFAULT_FLOAT[0]), requires_grad)


def ones(*shape, dtype=None, requires_grad=False):
    return Tensor(np.ones(_size(shape), dtype or _DEFAULT_FLOAT[0]), requires_grad)


def full(shape, fill_value, dtype=None, requires_grad=False):
    return Tensor(np.full(shape, fill_value, dtype or _DEFAULT_FLOAT[0]), requires_grad)


def empty(*shape, dtype=None):
    return Tensor(np.empty(_size(shape), dtype or _DEFAULT_FLOAT[0]))


def zeros_like(t, dtype=None, requires_grad=False):
    return Tensor(np.zeros(t.shape, dtype or t.dtype), requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return Tensor(np.ones(t.shape, dtype or t.dtype), requires_grad)


def randn(*shape, dtype=None, requires_grad=False):
    """Standard-normal samples from the generator that manual_seed() seeds."""
    data = ops.generator().standard_normal(_size(shape)).astype(dtype or _DEFAULT_FLOAT[0])
    return Tensor(data, requires_grad)


def rand(*shape, dtype=None, requires_grad=False):
    data = ops.generator().random(_size(shape)).astype(dtype or _DEFAULT_FLOAT[0])
    return Tensor(data, requires_grad)


def randint(low, high, size, dtype=None):
    return Tensor(ops.generator().integers(low, high, size).astype(dtype or np.int64))


def randperm(n):
    return Tensor(ops.generator().permutation(n).astype(np.int64))


def arange(start, end=None, step=1, dtype=None):
    if end is None:
        start, end = 0, start
    arr = np.arange(start, end, step)
    if dtype is None and arr.dtype.kind == "f":
        dtype = _DEFAULT_FLOAT[0]
    return Tensor(arr.astype(dtype) if dtype is not None else arr.astype(np.int64)
                  if arr.dtype.kind == "i" else arr)


def manual_seed(seed: int):
    """Seed dualgrad's generator (randn, rand, dropout masks, parameter init)."""
    ops.manual_seed(seed)


def set_default_dtype(dtype):
    _DEFAULT_FLOAT[0] = np.dtype(dtype)


def get_default_dtype():
    return _DEFAULT_FLOAT[0]


# -- grad mode --------------------------------------------------------------------------------
@contextmanager
def no_grad():
    """Ops inside record no tape (for evaluation and parameter updates)."""
    prev = _GRAD[0]
    _GRAD[0] = False
    try:
        yield
    finally:
        _GRAD[0] = prev


@contextmanager
def enable_grad():
    prev = _GRAD[0]
    _GRAD[0] = True
    try:
        yield
    finally:
        _GRAD[0] = prev


def is_grad_enabled():
    return _GRAD[0]


# -- functions, with torch's names ------------------------------------------------------------
def _lift(x):
    return x if isinstance(x, Tensor) else tensor(x)


def cat(tensors, dim=0):
    return ops.concat(*[_lift(t) for t in tensors], axis=dim)


concat = cat


def stack(tensors, dim=0):
    return ops.stack(*[_lift(t) for t in tensors], axis=dim)


def split(t, split_size_or_sections, dim=0):
    return tuple(ops.split(t, split_size_or_sections, axis=dim))


def where(condition, x, y):
    return ops.where(_lift(condition), x, y)


def matmul(a, b):
    return ops.matmul(a, b)


def sum(t, dim=None, keepdim=False):  # noqa: A001 - torch's name
    return ops.sum(t, axis=dim, keepdims=keepdim)


def mean(t, dim=None, keepdim=False):
    return ops.mean(t, axis=dim, keepdims=keepdim)


def max(t, dim=None, keepdim=False):  # noqa: A001
    return _lift(t).max(dim, keepdim)


def min(t, dim=None, keepdim=False):  # noqa: A001
    return _lift(t).min(dim, keepdim)


def argmax(t, dim=None, keepdim=False):
    return _lift(t).argmax(dim, keepdim)


def maximum(a, b):
    return ops.maximum(a, b)


def minimum(a, b):
    return ops.minimum(a, b)


def clamp(t, min=None, max=None):  # noqa: A002
    return t.clamp(min, max)


def reshape(t, shape):
    return ops.reshape(t, shape)


def transpose(t, dim0, dim1):
    return t.transpose(dim0, dim1)


def permute(t, dims):
    return t.permute(*dims)


def unsqueeze(t, dim):
    return ops.expand_dims(t, axis=dim)


def squeeze(t, dim=None):
    return ops.squeeze(t, axis=dim)


def flatten(t, start_dim=0, end_dim=-1):
    return t.flatten(start_dim, end_dim)


def softmax(t, dim):
    return ops.softmax(t, axis=dim)


def log_softmax(t, dim):
    return ops.log_softmax(t, axis=dim)


def logsumexp(t, dim, keepdim=False):
    return ops.logsumexp(t, axis=dim, keepdims=keepdim)


def pow(t, exponent):  # noqa: A001
    return t ** exponent


def abs(t):  # noqa: A001
    return ops.abs(t)


def argmin(t, dim=None, keepdim=False):
    return _lift(t).argmin(dim, keepdim)


def norm(t, p=2, dim=None, keepdim=False):
    return ops.norm(t, ord=p, axis=dim, keepdims=keepdim)


def cumsum(t, dim):
    return ops.cumsum(t, axis=dim)


def flip(t, dims):
    return _lift(t).flip(dims)


def tril(t, diagonal=0):
    return ops.tril(t, diagonal)


def triu(t, diagonal=0):
    return ops.triu(t, diagonal)


def chunk(t, chunks, dim=0):
    return _lift(t).chunk(chunks, dim)


def square(t):
    return t * t


def rsqrt(t):
    return 1.0 / ops.sqrt(t)


def allclose(a, b, rtol=1e-5, atol=1e-8):
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol))


exp, log, sqrt, tanh, sigmoid, relu, erf = (ops.exp, ops.log, ops.sqrt, ops.tanh, ops.sigmoid,
                                            ops.relu, ops.erf)
sign, sin, cos = ops.sign, ops.sin, ops.cos
add, sub, mul, div = ops.add, ops.sub, ops.mul, ops.div
eq, ne, lt, le, gt, ge = ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge
detach = Tensor.detach

from . import nn, optim  # noqa: E402  (they use the names above)
from .serialization import load, save  # noqa: E402

__all__ = [n for n in dir() if not n.startswith("_")]
_ = (ShapeError, KernelError)
