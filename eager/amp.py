"""torch.amp on a CPU-only machine: `autocast` and `GradScaler` as torch behaves without a GPU.

CPU autocast (`autocast("cpu")`, bfloat16 by default, float16 too) casts the inputs of the
functions torch's CPU autocast lowers (matmul, linear, conv, bmm, addmm, ...: `LOWER`) to its
dtype, and those it keeps in float32 (the losses, prod, cdist, the solvers, ...: `FP32`) to
float32; everything else runs in its inputs' widest dtype, as always. Each such function is
marked where it is defined (`@lowers` / `@keeps_fp32`), and the casts are ops, so gradients
flow back to float32 parameters and compile() traces them (the autocast state is part of a
compiled function's guard). For device_type "cuda" both autocast and GradScaler warn and
turn themselves off, as torch's do without a GPU.

>>> from dualgrad import eager as torch
>>> x, w = torch.ones(2, 3), torch.ones(4, 3)
>>> with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
...     y = torch.nn.functional.linear(x, w)
...     loss = torch.nn.functional.mse_loss(y, torch.zeros(2, 4))
>>> y.dtype, loss.dtype
(dtype(bfloat16), dtype('float32'))
"""
from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import is_value
from dualgrad.ops.rules import HALF, bfloat16

from .dtypes import of as torch_dtype
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available", "lowers", "keeps_fp32"]

_FLOAT32, _FLOAT64, _FLOAT16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)


class _Autocast(threading.local):
    """This thread's CPU autocast: on or off, its dtype, and whether a marked function is
    running (its inner calls are not cast again, as torch runs the op's own kernel)."""
    enabled = False
    chosen = None      # NOTE: None: bfloat16, torch's default (ml_dtypes loaded on first use)
    inside = False

    @property
    def dtype(self):
        return bfloat16() if self.chosen is None else self.chosen

    @dtype.setter
    def dtype(self, dt):
        self.chosen = dt


AUTOCAST = _Autocast()

# torch's CPU autocast policies, by torch's names: which dualgrad functions carry a mark
LOWER = ("matmul", "Tensor.__matmul__", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum",
         "tensordot", "linalg.vecdot", "linalg.multi_dot", "nn.functional.linear",
         "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv_transpose1d",
         "nn.functional.conv_transpose2d", "nn.functional.prelu",
         "nn.functional.scaled_dot_product_attention")
FP32 = ("prod", "cdist", "trace", "quantile", "nanquantile", "inverse", "pinverse",
        "linalg.qr", "linalg.svd", "linalg.inv", "linalg.solve", "linalg.eigh", "linalg.cond",
        "linalg.matrix_rank", "nn.functional.pad",
        "nn.functional.cross_entropy", "nn.functional.nll_loss", "nn.functional.mse_loss",
        "nn.functional.l1_loss", "nn.functional.smooth_l1_loss", "nn.functional.huber_loss",
        "nn.functional.kl_div", "nn.functional.binary_cross_entropy",
        "nn.functional.binary_cross_entropy_with_logits", "nn.functional.margin_ranking_loss",
        "nn.functional.soft_margin_loss", "nn.functional.hinge_embedding_loss",
        "nn.functional.poisson_nll_loss", "nn.functional.cosine_embedding_loss",
        "nn.functional.triplet_margin_loss", "nn.functional.multi_margin_loss",
        "nn.functional.multilabel_margin_loss")


def state():
    """(dtype,) while CPU autocast is on in this thread, else None: what compile() guards on."""
    return (AUTOCAST.dtype,) if AUTOCAST.enabled else None


def _eligible(x, to):
    """A floating tensor autocast casts: float64 and non-float tensors are left alone."""
    if not is_value(x):
        return False
    dt = np.dtype(x.dtype)
    return dt != to and (dt == _FLOAT32 or dt in HALF)


def _cast(v, to):
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return type(v)(_cast(x, to) for x in v)
    return ops.cast(v, to) if _eligible(v, to) else v


def _marked(fn, policy):
    inner = not_autocast(fn)     # NOTE: as torch runs the op's own kernel: no cast inside

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not AUTOCAST.enabled or AUTOCAST.inside or \
                policy == "fp32" and not policy_applies(fn, args, kwargs):
            return fn(*args, **kwargs)
        to = AUTOCAST.dtype if policy == "lower" else _FLOAT32
        return inner(*_cast(args, to), **{k: _cast(v, to) for k, v in kwargs.items()})
    run.__autocast__ = policy
    return run


def policy_applies(fn, args, kwargs):
    """F.pad keeps float32 only for the modes torch lists (reflection and replication pads)."""
    if fn.__name__ == "pad":
        mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
        return mode in ("reflect", "replicate")
    return True


def not_autocast(fn):
    """fn run without autocast: the in-place forms (`x.addmm_(a, b)`), which torch never
    autocasts."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not AUTOCAST.enabled or AUTOCAST.inside:
            return fn(*args, **kwargs)
        AUTOCAST.inside = True
        try:
            return fn(*args, **kwargs)
        finally:
            AUTOCAST.inside = False
    return run


def lowers(fn):
    """Mark fn as one torch's CPU autocast runs in its lower-precision dtype."""
    return _marked(fn, "lower")


def keeps_fp32(fn):
    """Mark fn as one torch's CPU autocast runs in float32."""
    return _marked(fn, "fp32")


def is_autocast_available(device_type):
    """True for the device types torch's build knows (on "cuda" autocast then turns itself
    off without a GPU)."""
    return device_type in ("cpu", "cuda", "mps", "xpu", "hpu", "xla")


class autocast:  # noqa: N801 - torch's name
    """torch.autocast: a context manager and a decorator. On "cpu" (dtype bfloat16 by default,
    or float16) it lowers the `LOWER` functions and keeps the `FP32` ones in float32; on
    "cuda" it warns and does nothing, as torch without a GPU."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device, self._enabled = device_type, bool(enabled)
        self.fast_dtype = torch_dtype(bfloat16() if dtype is None else dtype)
        if self._enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                          "autocast.", stacklevel=2)
            self._enabled = False
        elif device_type != "cpu" and device_type != "cuda":
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        elif self._enabled and self.fast_dtype not in HALF:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                          "torch.float16 currently.", stacklevel=2)
            self._enabled = False

    def __enter__(self):
        if self.device != "cpu":
            return self
        self._saved = (AUTOCAST.enabled, AUTOCAST.dtype)
        AUTOCAST.enabled = self._enabled
        if self._enabled:
            AUTOCAST.dtype = self.fast_dtype.dtype
        return self

    def __exit__(self, *exc):
        if self.device == "cpu":
            AUTOCAST.enabled, AUTOCAST.dtype = self._saved
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return wrapped


def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled: this thread's CPU autocast for "cpu"; False for "cuda" (and
    for no argument, which asks about CUDA as torch does)."""
    return AUTOCAST.enabled if device_type == "cpu" else False


def get_autocast_dtype(device_type):
    return torch_dtype(AUTOCAST.dtype if device_type == "cpu" else _FLOAT16)
