"""dtypes as TF names them (`graph.float32`, …): plain NumPy dtypes, so `t.dtype == np.float32` holds.

Wherever a dtype is taken, a NumPy dtype, a NumPy scalar type or a string works too;
TF's own spellings "float" (float32) and "double" (float64) are understood.

>>> from dualgrad import graph
>>> graph.as_dtype("float") == graph.float32
True
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.rules import BFLOAT16 as bfloat16   # NOTE: ml_dtypes' (NumPy has none)

float16, float32, float64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
int8, int16, int32, int64 = (np.dtype(f"int{b}") for b in (8, 16, 32, 64))
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
string = np.dtype(object)   # tf.string: bytes values in object arrays (tf.data, TFRecords)

# TF's names whose NumPy reading differs ("float" is float64 to NumPy, float32 to TF)
_TF_NAMES = {"float": float32, "double": float64, "half": float16, "bool": bool_,
             "string": string}
_SUPPORTED = {float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool_, string}


def as_dtype(dtype) -> np.dtype:
    """A NumPy dtype from a dtype, type or name; a clear TypeError for anything else."""
    if isinstance(dtype, str) and dtype in _TF_NAMES:
        return _TF_NAMES[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype; use graph.float32, np.float32 or "
                        f"'float32'") from None
    if dt not in _SUPPORTED:
        raise TypeError(f"dtype {dt} is not supported; supported: "
                        f"{', '.join(sorted(d.name for d in _SUPPORTED))}")
    return dt
