"""dtypes as TF names them: `graph.float32`, `t.dtype` and `graph.as_dtype(...)` are `DType`s,
which print as TF's (`tf.float32`, `<dtype: 'float32'>`) and equal, and hash as, the NumPy
dtype they stand for, so `t.dtype == np.float32` holds and `np.zeros(3, t.dtype)` works.
Inside the engine a Spec's dtype is the plain NumPy dtype (`as_dtype` here gives that one).

Wherever a dtype is taken, a NumPy dtype, a NumPy scalar type or a string works too;
TF's own spellings "float" (float32) and "double" (float64) are understood.

>>> from dualgrad import graph
>>> graph.as_dtype("float") == graph.float32, graph.float32, graph.float32.is_floating
(True, tf.float32, True)
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.dtypes import DTypeBase
from dualgrad.ops.rules import bfloat16 as _bfloat16, is_bfloat16


float16, float32, float64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
int8, int16, int32, int64 = (np.dtype(f"int{b}") for b in (8, 16, 32, 64))
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
string = np.dtype(object)   # tf.string: bytes values in object arrays (tf.data, TFRecords)

# TF's names whose NumPy reading differs ("float" is float64 to NumPy, float32 to TF)
_TF_NAMES = {"float": float32, "double": float64, "half": float16, "bool": bool_,
             "string": string}
_SUPPORTED = {float16, float32, float64, int8, int16, int32, int64, uint8, bool_, string}


def __getattr__(name):
    if name == "bfloat16":   # NOTE: ml_dtypes' (NumPy has none), imported on first use
        return _bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_dtype(dtype) -> np.dtype:
    """A NumPy dtype from a dtype, type or name; a clear TypeError for anything else."""
    if type(dtype) is DType:
        return dtype.dtype
    if isinstance(dtype, str) and dtype in _TF_NAMES:
        return _TF_NAMES[dtype]
    if isinstance(dtype, str) and dtype == "bfloat16":
        return _bfloat16()
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype; use graph.float32, np.float32 or "
                        f"'float32'") from None
    if dt not in _SUPPORTED and not is_bfloat16(dt):
        raise TypeError(f"dtype {dt} is not supported; supported: "
                        f"{', '.join(sorted([d.name for d in _SUPPORTED] + ['bfloat16']))}")
    return dt


# -- tf.DType: what users see ------------------------------------------------------------------
class DType(DTypeBase):
    """TF's `DType` over a NumPy dtype (`.dtype`, which NumPy reads wherever it takes a
    dtype): TF's names and predicates; NumPy's attributes (`kind`, `itemsize`) are there too.
    One object per dtype (`dtype_of`); equality, hashing, copies and NumPy's attributes are
    ops.dtypes.DTypeBase's, which eager's `torch.dtype` shares."""
    __slots__ = ()

    @staticmethod
    def _coerce(other):
        return as_dtype(other)

    @property
    def name(self):
        return "string" if self.dtype == string else self.dtype.name

    @property
    def as_numpy_dtype(self):
        return object if self.dtype == string else self.dtype.type

    @property
    def is_floating(self):
        return self.dtype.kind == "f" or is_bfloat16(self.dtype)

    @property
    def is_integer(self):
        return self.dtype.kind in "iu"

    @property
    def is_unsigned(self):
        return self.dtype.kind == "u"

    @property
    def is_bool(self):
        return self.dtype.kind == "b"

    @property
    def is_complex(self):
        return False   # NOTE: no complex dtype is supported (docs/tf1-compat.md)

    @property
    def is_quantized(self):
        return False

    @property
    def base_dtype(self):   # NOTE: no `_ref` dtypes: variables are TF 2's resource variables
        return self

    real_dtype = base_dtype

    @property
    def size(self):   # NOTE: TF's string has no fixed size (NumPy's object is a pointer)
        return 0 if self.dtype == string else self.dtype.itemsize

    @property
    def min(self):
        return self._limits()[0]

    @property
    def max(self):
        return self._limits()[1]

    def _limits(self):
        if self.is_floating:
            info = np.finfo(self.dtype)
        elif self.is_integer:
            info = np.iinfo(self.dtype)
        else:
            raise TypeError(f"Cannot find minimum value of {self}.")
        return info.min, info.max

    @property
    def as_datatype_enum(self):
        from .graph_def import dtype_code
        return 14 if is_bfloat16(self.dtype) else dtype_code(self.dtype)

    def is_compatible_with(self, other):
        return self == other

    def __repr__(self):
        return f"tf.{self.name}"

    def __str__(self):
        return f"<dtype: {self.name!r}>"


def dtype_of(dtype) -> DType:
    """The one `DType` of a NumPy dtype."""
    return DType.of(dtype)


def as_tf_dtype(dtype) -> DType:
    """`graph.as_dtype` (tf.as_dtype): the `DType` of a dtype, type or name."""
    return dtype_of(as_dtype(dtype))


# -- TF1's input types per op ------------------------------------------------------------------
# NOTE: TF1 ops take only the dtypes their op definition lists (tf.exp of an int32 tensor is a
# TypeError at build time); eager follows PyTorch (int -> float32). The table is what real
# tf.compat.v1 accepts on the CPU, measured by tests/graph/test_tf_oracle.py: keyed by the
# registry op a graph node is built with (checked in graph/core.py `_build`) or by a graph
# function's name (checked by `check_tf1_types`). Unlisted ops take every dtype; ops in
# ops.core.FLOATING (exp, log, sin, …) take floating dtypes only, unless listed.
FLOATS = frozenset({float16, float32, float64})
SIGNED = FLOATS | {int8, int16, int32, int64}
NUMBERS = SIGNED | {uint8}
TF1_TYPES = {
    **dict.fromkeys(("add", "sub", "mul", "div", "floordiv", "floormod", "maximum", "minimum",
                     "gt", "ge", "lt", "le", "relu", "sum", "prod", "max", "min", "cumsum",
                     "cumprod", "max_pool", "reduce_mean", "round", "sort", "top_k",
                     "segment_sum", "resize", "scatter", "assign_add", "square",
                     "tensor_scatter_add", "unsorted_segment_max"), NUMBERS),
    **dict.fromkeys(("abs", "neg", "sign", "pow"), SIGNED),
    **dict.fromkeys(("floor", "ceil", "softmax", "log_softmax", "dropout", "avg_pool", "elu",
                     "selu", "softsign", "depthwise_conv2d"), FLOATS),
    **dict.fromkeys(("matmul", "matmul_nt", "einsum", "squared_difference", "diag"),
                    FLOATS | {int32, int64}),
    **dict.fromkeys(("conv2d", "conv2d_transpose"), FLOATS | {int32}),
    "in_top_k": frozenset({float32}),
    # NOTE: keyed by TF's op name, checked by graph.truncatemod only (not the registry op, which
    # ONNX's Mod(fmod=1) also builds, for float16 too); TF has no float16 CPU kernel for it
    "TruncateMod": frozenset({float32, float64, int32, int64}),
    "inv": FLOATS,
    # NOTE: floating ops whose CPU kernel TF registers without float16 (TF fails at run time)
    **dict.fromkeys(("erfinv", "ndtri", "erfcinv"), frozenset({float32, float64})),
}


def tf1_refused(name, dtypes, floating=False):
    """(the first of `dtypes` TF1's op `name` is not defined for, the dtypes it is), or None.
    `floating`: the op is one of ops.core.FLOATING (exp, log, …): floating dtypes only."""
    allowed = TF1_TYPES.get(name, FLOATS if floating else None)
    bad = None if allowed is None else \
        next((np.dtype(d) for d in dtypes if np.dtype(d) not in allowed), None)
    return None if bad is None else (bad, allowed)


def tf1_types_message(name, dtype, allowed) -> str:
    want = "float32" if float32 in allowed else sorted(allowed, key=str)[0]
    return (f"{name}: TF1 defines this op for {', '.join(sorted(d.name for d in allowed))}, "
            f"not {dtype}: cast the input first, e.g. graph.cast(x, graph.{want})")
