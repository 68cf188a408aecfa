"""What torch says about dtypes and shapes: `finfo`, `iinfo`, `Size`, the constants `pi e
inf nan newaxis`, and the predicates `is_floating_point is_complex is_nonzero is_same_size`
as functions.

>>> from dualgrad import eager as torch
>>> torch.finfo(torch.float32).eps, torch.iinfo(torch.int8).max, torch.Size([2, 3]).numel()
(1.1920928955078125e-07, 127, 6)
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad.ops.rules import finfo as rules_finfo, floating

from .dtypes import of as torch_dtype
from .factories import get_default_dtype
from .size import Size  # noqa: F401 - torch.Size
from .formats import (channels_last, channels_last_3d, contiguous_format,  # noqa: F401 - torch.*
                      memory_format, preserve_format)

pi, e, inf, nan, newaxis = math.pi, math.e, math.inf, math.nan, None


class layout:  # noqa: N801 - torch's name
    """torch's tensor layouts, as arguments: every dualgrad tensor is dense (`strided`);
    sparse layouts are not provided (docs/pytorch-compat.md)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


strided = layout("strided")


def check_layout(name, lay):
    """A layout argument dualgrad can honour (None or strided), else a clear error."""
    if lay is not None and lay is not strided:
        raise NotImplementedError(f"{name}(layout={lay!r}) is not supported by dualgrad: its "
                                  f"tensors are dense (torch.strided) only")


class finfo:  # noqa: N801 - torch's name
    """Machine limits of a floating dtype (the default dtype when none is given), as Python
    floats: bits, eps, max, min, tiny (= smallest_normal), resolution."""

    def __init__(self, type=None):  # noqa: A002 - torch's argument name
        dt = np.dtype(get_default_dtype() if type is None else type)
        if not floating(dt):
            raise TypeError(f"torch.finfo() requires a floating point input type, got {dt}")
        fi = rules_finfo(dt)   # NOTE: ml_dtypes' for bfloat16 (NumPy's knows none)
        self.dtype, self.bits = dt.name, int(fi.bits)
        self.eps, self.max, self.min = float(fi.eps), float(fi.max), float(fi.min)
        self.tiny = self.smallest_normal = float(fi.smallest_normal)
        self.resolution = 10.0 ** -int(fi.precision)   # NOTE: torch's, a Python float (NumPy's is the
        # dtype's rounding of it: 9.99999997e-07 for float32)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801
    """Limits of an integer dtype, as Python ints: bits, min, max."""

    def __init__(self, type):  # noqa: A002
        dt = np.dtype(type)
        if dt.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.kind not in "iu":
            raise TypeError(f"torch.iinfo() requires an integer input type, got {dt}")
        ii = np.iinfo(dt)
        self.dtype, self.bits, self.min, self.max = dt.name, int(ii.bits), int(ii.min), int(ii.max)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def _legacy(name, dtype):
    """torch.FloatTensor and its kin: FloatTensor([1, 2]) holds the data in that dtype,
    FloatTensor(2, 3) is a tensor of that shape (zeros here: torch leaves it uninitialised)."""
    def make(*args):
        from .factories import tensor, zeros
        if len(args) == 1 and not isinstance(args[0], int):
            return tensor(args[0], dtype=dtype)
        return zeros(*args, dtype=dtype)
    make.__name__ = make.__qualname__ = name
    make.dtype = torch_dtype(dtype)
    return make


FloatTensor, DoubleTensor, HalfTensor = (_legacy("FloatTensor", "float32"),
                                         _legacy("DoubleTensor", "float64"),
                                         _legacy("HalfTensor", "float16"))
LongTensor, IntTensor, ShortTensor = (_legacy("LongTensor", "int64"), _legacy("IntTensor", "int32"),
                                      _legacy("ShortTensor", "int16"))
ByteTensor, CharTensor, BoolTensor = (_legacy("ByteTensor", "uint8"), _legacy("CharTensor", "int8"),
                                      _legacy("BoolTensor", "bool"))


def set_default_tensor_type(t):
    """torch's deprecated form of set_default_dtype: a float type (FloatTensor, DoubleTensor,
    HalfTensor, or its name "torch.FloatTensor") sets the default dtype; others refuse, as
    torch's (a CUDA type: not available)."""
    from .core import warn_once
    from .factories import set_default_dtype
    warn_once("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
              "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
              stacklevel=2)
    name = t if isinstance(t, str) else f"{getattr(t, '__module__', 'torch')}.{t.__name__}"
    name = name.replace("dualgrad.eager.info", "torch")
    if ".cuda." in name:
        raise TypeError(f"type {name} not available. Torch not compiled with CUDA enabled.")
    known = {f"torch.{n}": globals()[n] for n in ("FloatTensor", "DoubleTensor", "HalfTensor",
                                                  "LongTensor", "IntTensor", "ShortTensor",
                                                  "ByteTensor", "CharTensor", "BoolTensor")}
    if name not in known:
        raise TypeError(f"invalid type: '{name}'")
    if known[name].dtype.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(known[name].dtype)


def is_floating_point(input):  # noqa: A002
    return input.is_floating_point()


def is_complex(input):  # noqa: A002
    return input.is_complex()


def is_nonzero(input):  # noqa: A002
    return input.is_nonzero()


def is_same_size(input, other):  # noqa: A002
    return input.is_same_size(other)


__all__ = ["pi", "e", "inf", "nan", "newaxis", "memory_format", "contiguous_format",
           "preserve_format", "channels_last", "channels_last_3d", "layout", "strided", "finfo", "iinfo", "Size", "set_default_tensor_type", "FloatTensor",
           "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "ByteTensor",
           "CharTensor", "BoolTensor", "is_floating_point",
           "is_complex", "is_nonzero", "is_same_size"]
