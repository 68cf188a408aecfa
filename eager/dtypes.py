"""torch's dtype objects: `torch.float32`, `x.dtype` and `torch.get_default_dtype()` are
`torch.dtype`s, which print as torch's (`torch.float32`, repr and str alike) and have its
attributes (`is_floating_point`, `is_complex`, `is_signed`, `itemsize`, `to_real()`,
`to_complex()`). Each stands for a NumPy dtype (`.dtype`), which NumPy reads wherever it
takes a dtype, and equals and hashes as it (ops/dtypes.py, shared with graph's `tf.DType`):
`x.dtype == np.float32` is True, where torch says False (docs/pytorch-compat.md).

>>> from dualgrad import eager as torch
>>> x = torch.zeros(2)
>>> x.dtype, f"{x.dtype}", x.dtype.is_floating_point, torch.cfloat.to_real()
(torch.float32, 'torch.float32', True, torch.float32)
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.dtypes import DTypeBase, table_of
from dualgrad.ops.rules import TORCH_SCALAR_NAMES, bfloat16, is_bfloat16

# NOTE: torch's short names (torch.float32.abbr)
_ABBR = {"float": "f", "int": "i", "uint": "u", "complex": "c", "bfloat": "bf"}
_SCALAR_NAMES = {**TORCH_SCALAR_NAMES, "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


class dtype(DTypeBase):  # noqa: N801 - torch's name
    """torch.dtype: one object per dtype (`torch.float32 is x.dtype`); torch's names and
    predicates; as NumPy's dtype it stands for, it also has NumPy's attributes (`kind`, `name`)."""
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch.dtype' instances")

    @property
    def is_floating_point(self):
        return self.kind == "f" or is_bfloat16(self.dtype)

    @property
    def is_complex(self):
        return self.kind == "c"

    @property
    def is_signed(self):
        return self.kind in "ifc" or is_bfloat16(self.dtype)

    @property
    def abbr(self):
        name = self.dtype.name
        if name == "bool":
            return "b8"
        stem = name.rstrip("0123456789")
        return _ABBR.get(stem, stem) + name[len(stem):]

    def to_real(self):
        """The real dtype of a complex one (complex64 -> float32); any other dtype itself."""
        return of(np.float32 if self.dtype == np.complex64 else np.float64) \
            if self.kind == "c" else self

    def to_complex(self):
        """The complex dtype of a floating one (float32 and bfloat16 -> complex64); a complex
        dtype itself; torch's RuntimeError for the others."""
        if self.kind == "c":
            return self
        if self.dtype == np.float64:
            return of(np.complex128)
        if self.dtype == np.float32 or is_bfloat16(self.dtype):
            return of(np.complex64)
        if self.dtype == np.float16:
            raise RuntimeError("torch.float16.to_complex() is torch.complex32 (ComplexHalf), "
                               "which dualgrad does not provide: its complex dtypes are "
                               "complex64 and complex128")
        name = self.dtype.name
        raise RuntimeError(f"Unknown Complex ScalarType for {_SCALAR_NAMES.get(name, name)}")

    def __repr__(self):
        return f"torch.{self.dtype.name}"

    __str__ = __repr__


TABLE = table_of(dtype)   # NOTE: Tensor.dtype's lookup (core.py)
of = dtype.of   # the one torch.dtype of a NumPy dtype, type or name


def of_bfloat16():
    """torch.bfloat16 (ml_dtypes', imported on first use)."""
    return TABLE[bfloat16()]
