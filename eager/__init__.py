"""dualgrad's eager engine: define-by-run, in PyTorch's style.

>>> from dualgrad import eager
>>> x = eager.tensor([[1.0, 2.0]], requires_grad=True)
>>> w = eager.ones(2, 3)
>>> (x @ w).sum().backward()
>>> x.grad
tensor([[3., 3.]])
"""
from __future__ import annotations
if __name__ != "dualgrad.eager":  # NOTE: a second copy would mean a second op registry
    raise ImportError(f"dualgrad's engines import under one root: write `from dualgrad import eager`, "
                      f"not `import {__name__}` (found {__file__})")

import builtins

import numpy as np

from dualgrad import ops
from dualgrad.ops import ShapeError, KernelError
from dualgrad.ops.rules import (torch_can_cast as _torch_can_cast,
                                torch_result_dtype as _torch_result_dtype)
from .core import Tensor, _GRAD

from .dtypes import dtype, of as _dtype_of  # noqa: E402 - torch.dtype (eager/dtypes.py)
float16, float32, float64 = (_dtype_of(n) for n in ("float16", "float32", "float64"))
int8, int16, int32, int64 = (_dtype_of(n) for n in ("int8", "int16", "int32", "int64"))
uint8, bool_ = _dtype_of("uint8"), _dtype_of("bool")
complex64, complex128 = _dtype_of("complex64"), _dtype_of("complex128")
cfloat, cdouble = complex64, complex128
bool = bool_  # noqa: A001 - torch.bool
float, double, half, long, int, short = (  # noqa: A001 - torch's aliases
    float32, float64, float16, int64, int32, int16)

from .devices import (accelerator, backends, cpu, cuda, device, get_default_device,  # noqa: E402
                     set_default_device)
from . import amp  # noqa: E402
from .amp import autocast, get_autocast_dtype, is_autocast_enabled, lowers as _lowers  # noqa: E402


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")
from .generator import Generator, default_generator  # noqa: E402
from .factories import (arange, as_tensor, empty, empty_like, eye, from_numpy,  # noqa: E402
                        full, full_like, get_default_dtype, linspace, logspace, ones,
                        ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
                        randperm, set_default_dtype, tensor, zeros, zeros_like)
from dualgrad.ops.symbolic import Dim  # noqa: E402 - a symbolic dim for meta tensors (meta.py)


def manual_seed(seed: int):
    """Seed dualgrad's generator (randn, rand, dropout masks, parameter init, samplers)."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor (torch.get_rng_state)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Put the default generator back in a state get_rng_state() returned."""
    default_generator.set_state(new_state)


def initial_seed():
    return default_generator.initial_seed()


def is_tensor(obj):
    return isinstance(obj, Tensor)


# -- grad mode (grad_mode.py) ------------------------------------------------------------------
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: E402
                        set_grad_enabled)


# -- functions, with torch's names ------------------------------------------------------------
def _lift(x):
    return x if isinstance(x, Tensor) else tensor(x)


def stack(tensors, dim=0):
    return ops.stack(*[_lift(t) for t in tensors], axis=dim)


def split(tensor, split_size_or_sections, dim=0):
    return tuple(ops.split(tensor, split_size_or_sections, axis=dim))


def where(condition, input=None, other=None):  # noqa: A002 - torch's names
    """input where condition holds, else other; where(condition) alone is
    nonzero(condition, as_tuple=True), as torch."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() expects condition, input and other (or condition alone)")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # NOTE: two Python numbers give torch's dtype (where(c, 1.0, 0.0) is float32)
        input = np.asarray(input, _torch_result_dtype([input, other], get_default_dtype()))
    return ops.where(_lift(condition), input, other)


@_lowers
def matmul(a, b):
    return ops.matmul(a, b)


def sum(t, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - torch's name
    return _lift(t).sum(dim, keepdim, dtype=dtype)


def mean(t, dim=None, keepdim=False, *, dtype=None):
    return _lift(t).mean(dim, keepdim, dtype=dtype)


def max(t, dim=None, keepdim=False):  # noqa: A001
    return _lift(t).max(dim, keepdim)


def min(t, dim=None, keepdim=False):  # noqa: A001
    return _lift(t).min(dim, keepdim)


def argmax(t, dim=None, keepdim=False):
    return _lift(t).argmax(dim, keepdim)


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
    return t.squeeze(dim)


def flatten(t, start_dim=0, end_dim=-1):
    return t.flatten(start_dim, end_dim)


def softmax(t, dim, dtype=None):
    """torch.softmax: dtype= casts the input first (as torch, for float16 inputs summed in
    float32)."""
    return ops.softmax(t if dtype is None else ops.cast(t, np.dtype(dtype)), axis=dim)


def log_softmax(t, dim, dtype=None):
    return ops.log_softmax(t if dtype is None else ops.cast(t, np.dtype(dtype)), axis=dim)


def logsumexp(t, dim, keepdim=False):
    return Tensor.logsumexp(t, dim, keepdim)


def pow(t, exponent):  # noqa: A001
    return t ** exponent


def abs(t):  # noqa: A001
    return ops.abs(t)


def argmin(t, dim=None, keepdim=False):
    return _lift(t).argmin(dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """The vector p-norm ('fro', the default, is the 2-norm of all elements); p='nuc' the
    nuclear norm over dim (a pair; the last two dims by default)."""
    if out is not None:
        raise NotImplementedError("norm(out=) is not supported by dualgrad")
    x = input if dtype is None else ops.cast(input, np.dtype(dtype))
    if p == "nuc":
        return Tensor.norm(x, "nuc", dim, keepdim)
    return ops.norm(x, ord=2 if p == "fro" else p, axis=dim, keepdims=keepdim)


def cumsum(t, dim, *, dtype=None):
    return _lift(t).cumsum(dim, dtype=dtype)


def flip(t, dims):
    return _lift(t).flip(dims)


def tril(t, diagonal=0):
    return ops.tril(t, diagonal)


def triu(t, diagonal=0):
    return ops.triu(t, diagonal)


def chunk(t, chunks, dim=0):
    return _lift(t).chunk(chunks, dim)


def square(t):
    return ops.square(t)


def rsqrt(t):
    return ops.rsqrt(t)


def allclose(a, b, rtol=1e-5, atol=1e-8):
    return builtins.bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol))


def sort(t, dim=-1, descending=False, stable=False):
    return t.sort(dim, descending, stable)


def argsort(t, dim=-1, descending=False, stable=False):
    return t.argsort(dim, descending, stable)


def topk(t, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    return t.topk(k, dim, largest, sorted)


def gather(t, dim, index):
    return t.gather(dim, index)


def index_select(t, dim, index):
    return t.index_select(dim, index)


def unique(t, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    return t.unique(sorted, return_inverse, return_counts, dim)


def numel(t):
    return t.numel()


def all(t, dim=None, keepdim=False):  # noqa: A001
    return _lift(t).all(dim, keepdim)


def any(t, dim=None, keepdim=False):  # noqa: A001
    return _lift(t).any(dim, keepdim)


def clone(t, *, memory_format=None):
    return t.clone(memory_format=memory_format)


def equal(a, b):
    return a.equal(b)


def result_type(a, b):
    """PyTorch's promotion of two operands (tensors or Python numbers)."""
    return _dtype_of(_torch_result_dtype([x._array if isinstance(x, Tensor) else x for x in (a, b)],
                                         get_default_dtype()))


def can_cast(from_, to):
    """torch.can_cast: may a result of dtype from_ be written in place into dtype `to`?"""
    return _torch_can_cast(from_, to)


def promote_types(a, b):
    return _dtype_of(_torch_result_dtype([np.zeros(1, a), np.zeros(1, b)]))


def _unary(fn):
    """fn as torch's one-tensor function, `fn(input)`: any other argument is torch's
    TypeError (an `out=` reached NumPy's ufunc, and its message the user)."""
    def call(input):  # noqa: A002 - torch's name
        return fn(input)
    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__, call.__wrapped__ = fn.__doc__, fn
    return call


exp, log, sqrt, tanh, sigmoid, relu, sin, cos = (
    _unary(f) for f in (ops.exp, ops.log, ops.sqrt, ops.tanh, ops.sigmoid, ops.relu, ops.sin,
                        ops.cos))
add, sub, mul, div = ops.add, ops.sub, ops.mul, ops.div
eq, ne, lt, le, gt, ge = ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
detach = Tensor.detach
clip = clamp
from .functions import *  # noqa: E402,F401,F403 - torch.* math by torch's names
from .functions import TORCH_NAMES as _TORCH_NAMES  # noqa: E402
from .pointwise import *  # noqa: E402,F401,F403 - sign, erfinv, atan2, hypot, fmax, …
from .reductions import *  # noqa: E402,F401,F403 - median, quantile, trace, cummax, …
from .shaping import *  # noqa: E402,F401,F403 - select, hstack, movedim, index_add, …
from .info import *  # noqa: E402,F401,F403 - finfo, iinfo, Size, pi, inf, is_floating_point, …
from .printing import set_printoptions  # noqa: E402
from .extra_pointwise import *  # noqa: E402,F401,F403 - i0, gcd, lcm, frexp, ldexp, mvlgamma, …
from .extra_shaping import *  # noqa: E402,F401,F403 - *_copy, combinations, tensordot, trapz, …
from .complexes import *  # noqa: E402,F401,F403 - complex, polar, real, imag, view_as_real, …
from .native_norms import *  # noqa: E402,F401,F403 - native_layer_norm, native_batch_norm, …
from .extra_linalg import TORCH as _LINALG  # noqa: E402
globals().update({n: f for n, f in _LINALG.items() if n not in globals()})   # logdet, cholesky, svd, …
from .extra_linalg import chain_matmul  # noqa: E402 - deprecated in torch: a function only
from .surface import install as _install_surface  # noqa: E402
_install_surface()   # Tensor's methods beyond its core, from surface.py's table

from . import autograd, distributions, linalg, nn, optim, special, utils  # noqa: E402  (they use the names above)
from . import autograd_functional as _autograd_functional  # noqa: E402

# NOTE: torch.autograd.functional is a submodule: registered so that
# `from dualgrad.eager.autograd.functional import jacobian` imports as torch's does
autograd.functional = _autograd_functional
is_anomaly_enabled = autograd.is_anomaly_enabled
is_anomaly_check_nan_enabled = autograd.is_anomaly_check_nan_enabled
__import__("sys").modules[autograd.__name__ + ".functional"] = _autograd_functional
from . import futures, multiprocessing  # noqa: E402
import types as _types  # noqa: E402
from dualgrad import __version__ as _dg_version  # noqa: E402

__version__ = f"2.13.0+dualgrad.{_dg_version}"   # the torch API followed; +local: dualgrad's own
version = _types.ModuleType("dualgrad.eager.version", "torch.version")
version.__version__, version.cuda, version.hip, version.git_version = __version__, None, None, ""
from . import fft, masked, signal, testing  # noqa: E402
from .serialization import load, save  # noqa: E402
from .checking import check  # noqa: E402 - shape bugs on meta tensors (checking.py)
from .aliases import accept_numpy_names as _accept_numpy_names  # noqa: E402

from . import refusals as _refusals, special as _special  # noqa: E402
from .nn import functional as _functional  # noqa: E402
import sys as _sys  # noqa: E402

# NOTE: torch's functions and methods of the same name and arguments as nn.functional's
hardshrink, prelu = _functional.hardshrink, _functional.prelu
Tensor.hardshrink = lambda self, lambd=0.5: hardshrink(self, lambd)
Tensor.prelu = lambda self, weight: prelu(self, weight)

# NOTE: the dtypes torch refuses (x.mean() of integers, ...), over methods and functions alike
_refusals.install(Tensor, _sys.modules[__name__], _functional, _special)
for _space, _names in _refusals.COMPLEX_REFUSED.items():
    _refusals.install_complex(_sys.modules[__name__] if not _space else
                              _sys.modules[f"{__name__}.{_space}"], _names)
_refusals.install_complex(Tensor, _refusals.COMPLEX_REFUSED[""])
_accept_numpy_names(globals(), Tensor)   # x.sum(axis=1), torch.cat(ts, axis=0), keepdims=
# NOTE: last, so no code of this module calls it for the builtin (torch exports it too)
from .factories import range  # noqa: E402,A004 - torch.range, deprecated there too

__all__ = [n for n in dir() if not n.startswith("_")] + ["bfloat16"]

_ = (ShapeError, KernelError)


def __getattr__(name):
    """A name dualgrad does not provide raises AttributeError (hasattr is False), with the
    reason when it is a row of eager/not_provided.py."""
    if name == "fx":   # NOTE: torch.fx without `import torch.fx`, loaded on first use
        import importlib
        return importlib.import_module(".fx", __name__)
    if name == "bfloat16":   # NOTE: ml_dtypes' (NumPy has none), imported on first use
        from .dtypes import of_bfloat16
        return of_bfloat16()
    from .not_provided import absent
    raise absent("", name)
