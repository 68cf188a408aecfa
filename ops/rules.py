"""Shape and dtype rules shared by many ops. Dims may be None (unknown until run time)."""
from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

from .symbolic import fixing
from .core import (FLOATING, ComplexError, DtypeError, ShapeError, Spec, fmt_shape, located,
                   quiet_broadcast, QUIET_BROADCAST)


class AxisError(ShapeError, IndexError):
    """An axis out of range for the input's rank: a ShapeError, and an IndexError as
    PyTorch raises for a bad dim (NumPy's AxisError is also both)."""


def shapes_str(*specs) -> str:
    return ", ".join(fmt_shape(s) for s in specs)


class DtypeMismatch(TypeError):
    """Inputs an op combines have different dtypes under strict promotion; `specs` are the
    inputs concerned (the caller names them)."""

    def __init__(self, message, specs):
        super().__init__(message)
        self.specs = specs


class _Promotion(threading.local):
    strict = False


_PROMOTION = _Promotion()


@contextlib.contextmanager
def strict_dtypes(on=True):
    """Within the block, `result_dtype` promotes nothing (TF1's rule, JAX's 'strict' dtype
    promotion): the non-scalar inputs must share one dtype and Python scalars must fit it,
    else `DtypeMismatch`. The graph engine builds TF1 graphs under it."""
    old, _PROMOTION.strict = _PROMOTION.strict, on
    try:
        yield
    finally:
        _PROMOTION.strict = old


def result_dtype(*specs) -> np.dtype:
    """NumPy 2 promotion; Python scalars are weak (float32 * 2.0 stays float32). Under
    `strict_dtypes()`, no promotion at all."""
    if _PROMOTION.strict:
        return _strict_dtype(specs)
    return np.result_type(*[s.weak if s.weak is not None else s.dtype for s in specs])


def _strict_dtype(specs):
    dts = list(dict.fromkeys(s.dtype for s in specs if s.weak is None))
    if len(dts) > 1:
        raise DtypeMismatch(f"input dtypes {' and '.join(map(str, dts))} do not match", specs)
    if not dts:
        return np.result_type(*[s.weak for s in specs])
    for s in specs:
        if s.weak is not None and not _fits(s.weak, dts[0]):
            raise DtypeMismatch(f"expected {dts[0]}, got {s.weak!r} of type "
                                f"'{type(s.weak).__name__}' instead", specs)
    return dts[0]


def _fits(x, dt) -> bool:
    """A Python scalar TF1 would convert to dtype dt (2.0 is no int32, True is a number)."""
    kind = np.dtype(dt).kind
    if isinstance(x, complex):
        return kind == "c"
    if isinstance(x, float):
        return kind in "fc"
    return kind != "b" or isinstance(x, bool)


def broadcast(opname, *specs) -> tuple:
    """Broadcast shapes as NumPy does; a None dim matches anything and stays None unless fixed."""
    nd = max(len(s.shape) for s in specs)
    out = []
    for i in range(1, nd + 1):
        dims = [s.shape[-i] for s in specs if len(s.shape) >= i]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            ds = sorted(known, key=str)
            fix = fixing(*ds) if len(ds) == 2 else ""
            raise ShapeError(
                f"{opname}: cannot broadcast {shapes_str(*specs)}: "
                f"dimension {-i} is {' vs '.join(str(d) for d in ds)}{fix}")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(reversed(out))


def _same_dim(a, b) -> bool:
    return a == b and a != 1 or a is None and b is None


def warn_outer(opname, a, b):
    """Warn at the user's line when an elementwise op turns (N, 1) against (N,) into (N, N):
    the size-1 last dim of one input meets the other's last dim, which equals the dim before
    it (the same number, the same symbol, or both unknown). Nothing raises in any framework;
    torch warns only inside mse_loss, TF1 never. `a`, `b`: shapes or Specs."""
    a, b = getattr(a, "shape", a), getattr(b, "shape", b)
    if QUIET_BROADCAST.depth or a is None or b is None or len(a) == len(b):
        return
    hi, lo = (a, b) if len(a) > len(b) else (b, a)
    if len(hi) < 2 or not lo or hi[-1] != 1 or lo[-1] == 1 or not _same_dim(hi[-2], lo[-1]):
        return
    import warnings
    from .core import user_frame, user_stacklevel, where_str
    out = tuple(hi[:-1]) + (lo[-1],)
    warnings.warn(f"{opname}: {fmt_shape(a)} and {fmt_shape(b)} broadcast to {fmt_shape(out)}: "
                  f"the size-1 last dim of {fmt_shape(hi)} is stretched to {fmt_shape(lo)}'s "
                  f"{_dim(lo[-1])}, which is likely a bug (squeeze the 1, or unsqueeze the "
                  f"other; at {where_str(user_frame())})", UserWarning,
                  stacklevel=user_stacklevel())


def _dim(d):
    return "?" if d is None else str(d)


def norm_axis(opname, axis, ndim, spec=None, frontend=False) -> int:
    """`axis` as a non-negative index for an `ndim`-d input (0 for a 0-d one), or AxisError.

    The one place axes are normalised: ops' shape rules call it, and so do frontend
    functions (`frontend=True`: the error names the user's line, as a rule's error does
    when an engine raises it).
    """
    if not -ndim <= axis < max(ndim, 1):
        where = f" of {fmt_shape(spec)}" if spec is not None else ""
        msg = f"{opname}: axis {axis} is out of range for {ndim}-d input{where}"
        raise located(msg, AxisError) if frontend else AxisError(msg)
    return axis % ndim if ndim else 0


def norm_axes(opname, axis, ndim, spec=None, frontend=False) -> tuple:
    """None -> all axes; int or tuple -> sorted non-negative tuple."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    axes = tuple(sorted(norm_axis(opname, a, ndim, spec, frontend) for a in axis))
    if len(set(axes)) != len(axes):
        msg = f"{opname}: repeated axis in {axis}"
        raise located(msg) if frontend else ShapeError(msg)
    return axes


def reduced_shape(shape, axes, keepdims) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def dims_match(a, b) -> bool:
    """Two shapes of one rank whose dims agree wherever both are known (None = unknown)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def numel(shape):
    """Product of dims, or None when any is unknown."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n


def same(spec: Spec, shape=None, dtype=None) -> Spec:
    return Spec(spec.shape if shape is None else tuple(shape),
                spec.dtype if dtype is None else np.dtype(dtype))


# NOTE: NumPy has no bfloat16; ml_dtypes' is a NumPy dtype whose kind is "V", so a test of
# `dtype.kind in "fc"` misses it: ask `floating` / `inexact`. ml_dtypes is imported on first
# use (`bfloat16()`; its import takes 0.1 to 0.7 s of CPU): an array can only be bfloat16
# once it is, so `is_bfloat16` asks the dtype's name and imports nothing.
_BF16 = []


def bfloat16() -> np.dtype:
    """ml_dtypes' bfloat16 NumPy dtype (importing ml_dtypes the first time)."""
    if not _BF16:
        import ml_dtypes
        _BF16.append(np.dtype(ml_dtypes.bfloat16))
    return _BF16[0]


def is_bfloat16(dtype) -> bool:
    """dtype (a NumPy dtype, or None) is ml_dtypes' bfloat16."""
    return getattr(dtype, "kind", None) == "V" and dtype.name == "bfloat16"


def finfo(dtype):
    """np.finfo of a floating dtype; ml_dtypes' for bfloat16, which NumPy's does not know."""
    if is_bfloat16(dtype):
        import ml_dtypes
        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def __getattr__(name):
    if name == "BFLOAT16":   # NOTE: the dtype itself, for code that needs it (imports ml_dtypes)
        return bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def floating(dtype) -> bool:
    """A real floating dtype: float16/32/64 or bfloat16."""
    return dtype.kind == "f" or is_bfloat16(dtype)


def inexact(dtype) -> bool:
    """A floating or complex dtype (what a gradient can flow through)."""
    return dtype.kind in "fc" or is_bfloat16(dtype)


class _Half:
    """`dtype in HALF`: float16 or bfloat16, the half-width floats torch's CPU kernels
    compute in float32 (`torch_opmath_dtype`); None is not."""
    __slots__ = ()

    def __contains__(self, dtype):
        kind = getattr(dtype, "kind", None)
        return kind == "f" and dtype.itemsize == 2 or kind == "V" and dtype.name == "bfloat16"


_FLOAT32 = np.dtype(np.float32)
HALF = _Half()


def _category(dt) -> int:
    dt = np.dtype(dt)
    return 2 if is_bfloat16(dt) else {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}.get(dt.kind, 1)


def _promote(a, b):
    """PyTorch's promotion table: across categories the higher category's dtype wins
    (int64 with float32 is float32); within one, as NumPy (int8 with uint8 is int16)."""
    ka, kb = _category(a), _category(b)
    if ka == kb:
        return np.promote_types(a, b)
    if ka == 3 or kb == 3:   # NOTE: complex64 with int64 is complex64, with float64 complex128
        z, other = (a, b) if ka == 3 else (b, a)
        if _category(other) < 2:
            return z
        part = np.dtype(np.float32 if np.dtype(z) == np.complex64 else np.float64)
        return complex_of(part if is_bfloat16(other) else np.promote_types(part, other))
    return a if ka > kb else b


def _promote_all(dtypes):
    out = None
    for d in dtypes:
        out = d if out is None else _promote(out, d)
    return out


def _combine(higher, lower):
    """PyTorch's combine_categories: a lower-priority group only wins a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    hk, lk = _category(higher), _category(lower)
    if hk == 3:
        return higher
    if lk == 3:
        return complex_of(higher) if hk == 2 else lower
    if hk == 2:
        return higher
    if hk == 0 or lk == 2:
        return _promote(higher, lower)
    return higher


_COMPLEX64 = np.dtype(np.complex64)


def complex_of(dt) -> np.dtype:
    """The complex dtype of a floating one's precision, as torch's category raise keeps it:
    float32 and bfloat16 give complex64, float64 complex128; float16 would give torch's
    complex32 (ComplexHalf), which dualgrad does not have."""
    dt = np.dtype(dt)
    if is_bfloat16(dt):
        return _COMPLEX64
    if dt.itemsize == 2:
        raise ComplexError("complex32 (torch.chalf, ComplexHalf): dualgrad has no such dtype; "
                           "a float16 tensor with a complex number gives it in torch, cast to "
                           "float32 first")
    return np.result_type(dt, 1j)


def torch_result_dtype(operands, default_float=np.dtype(np.float32)) -> np.dtype:
    """PyTorch's type promotion over arrays and Python scalars (torch.result_type).

    Tensors with dims decide within their category; 0-d tensors and then Python scalars only
    raise the category (a Python float makes an int tensor the default float dtype, a float64
    0-d tensor leaves a float32 tensor float32). NumPy instead lets any float64 or int64 win:
    `float32 ** int64` is float64 there and float32 here.
    """
    return _torch_promote([_operand(x) for x in operands], default_float)


def _operand(x):
    """(dtype, ndim, Python scalar or None) of an array, an engine tensor, a Spec or a number."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return None, 0, x
    if isinstance(x, Spec):
        return np.dtype(x.dtype), (1 if x.shape is None else len(x.shape)), x.weak
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype), np.ndim(x) if isinstance(x, (np.ndarray, np.generic)) \
            else len(x.shape), None
    x = np.asarray(x)
    return x.dtype, x.ndim, None


def _torch_promote(operands, default_float):
    dims, zeros, wrapped = [], [], []
    for dt, nd, weak in operands:
        if weak is not None:
            wrapped.append(np.dtype(np.bool_) if isinstance(weak, bool) else
                           np.dtype(np.int64) if isinstance(weak, int) else
                           default_float if isinstance(weak, float) else
                           complex_of(default_float))
        else:
            (dims if nd else zeros).append(dt)
    return _combine(_promote_all(dims), _combine(_promote_all(zeros), _promote_all(wrapped)))


# -- PyTorch's front end (eager and compile()): the dtype an op computes in ----------------------
# An op that combines operands of several dtypes declares how (`Op.promote`): "common" (add,
# mul, comparisons, ...: torch.result_type of the operands), "divide" (true division: integer
# operands give the default float) and "where" (the two value operands; the condition is
# bool). Both interpreters of PyTorch code ask `torch_compute_dtype` BEFORE the kernel runs
# and cast the tensor operands to it: eager casts the arrays, compile() records cast nodes,
# so the kernel, the graph's shape rule, the optimiser and the fused loops all see operands
# of one dtype and never re-derive it. TF1's graph front end promotes nothing
# (`strict_dtypes`), so it never needs this.
def torch_scalar_argument(value, operands, name=None, default_float=np.dtype(np.float32)):
    """A Scalar argument (add's `alpha`, addcmul's `value`) as torch reads it: cast to the
    dtype the operands give, never promoting it (add(int, int, alpha=2) stays int64 and
    add(bool, bool, alpha=2) bool). Where that dtype is an integer or bool, `alpha` (`name`
    given) refuses a float, and a bool unless the result is bool; `value` truncates a float
    toward zero and refuses one outside the dtype's range."""
    dt = torch_result_dtype(operands, default_float)
    if name and isinstance(value, bool) and dt.kind != "b":
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if dt.kind not in "biu":
        return value
    if isinstance(value, float):
        if name:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               f"floating point number.")
        info = np.iinfo(dt) if dt.kind != "b" else None
        if info is not None and not info.min <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {_C_TYPES[dt.name]} "
                               f"without overflow")
    return bool(value) if dt.kind == "b" else int(value)


def torch_int_scalar(value, dtype):
    """A Python int Scalar argument (clamp's bounds) read into an integer dtype as torch's
    c10 checks it: inside the signed range, or for an unsigned dtype within -max..max, a
    negative value wrapping around (clamp(uint8, min=-2) is min=254); else torch's error."""
    dt = np.dtype(dtype)
    if dt.kind not in "iu" or type(value) is not int:
        return value
    info = np.iinfo(dt)
    low = info.min if dt.kind == "i" else -int(info.max)
    if not low <= value <= info.max:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPES[dt.name]} without "
                           f"overflow")
    return value if value >= 0 else int(np.asarray(value).astype(dt))


def torch_scalar_into(value, dtype):
    """A Python number written into a tensor of `dtype` (x[i] = value), checked as torch's
    c10 checks it: an int as torch_int_scalar, a float into an integer dtype inside its range
    (then truncated: 2.7 into uint8 is 2; -2.7, 300.0, nan and inf raise)."""
    dt = np.dtype(dtype)
    if type(value) is float and dt.kind in "iu":
        info = np.iinfo(dt)
        if not (math.isfinite(value) and info.min <= value <= info.max):
            raise RuntimeError(f"value cannot be converted to type {_C_TYPES[dt.name]} without "
                               f"overflow")
        return value
    return torch_int_scalar(value, dt)


_C_TYPES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t"}


def torch_can_cast(src, dst) -> bool:
    """torch.can_cast: may an in-place result of dtype src be written into a tensor of dtype
    dst? Not complex into real, floating into integer or bool, nor anything but bool into
    bool; any integer into any other (uint8 += int64 wraps, as torch's)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind == "c" and dst.kind != "c":
        return False
    if (src.kind == "f" or is_bfloat16(src)) and dst.kind in "biu":
        return False
    return src.kind == "b" or dst.kind != "b"


SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


# NOTE: the C++ type names torch's dtype checks print ("expected m1 and m2 to have the same
# dtype, but got: double != float")
TORCH_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
                 "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
                 "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                 "bool": "bool"}


# NOTE: c10's ScalarType names, in torch's "... not implemented for 'Long'" messages
TORCH_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                      "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                      "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def torch_floating_only(kernel, dtype):
    """torch's NotImplementedError for a random kernel that draws floats (rand, randn and
    their in-place forms) asked for an integer or bool dtype: it computes, truncated, in
    NumPy."""
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{TORCH_SCALAR_NAMES.get(dt.name, dt.name)}'")


def _integers_to_default(op, operands, default_float):
    """A FLOATING op (exp, sqrt, sigmoid, ...) of integer or bool tensors computes in the
    default float dtype, as torch's: float32 unless set_default_dtype changed it."""
    if op.name not in FLOATING:
        return None
    dts = [dt for dt, _, w in map(_operand, operands) if w is None and dt is not None]
    return np.dtype(default_float) if dts and all(d.kind in "biu" for d in dts) else None


def torch_compute_dtype(op, operands, default_float=np.dtype(np.float32)):
    """The dtype the tensor operands of `op` are cast to under PyTorch's rules (operands:
    arrays, Specs, engine tensors or Python numbers), or None when `op` declares no promotion.
    "same" (matmul): torch promotes nothing and refuses tensors of two dtypes.
    """
    how = op.promote
    if how is None:
        return None if np.dtype(default_float) == _FLOAT32 else \
            _integers_to_default(op, operands, default_float)
    ops_ = [_operand(x) for x in (operands[1:] if how == "where" else operands)]
    if how == "same":
        dts = [dt for dt, _, w in ops_ if w is None]
        if len(set(dts)) > 1:
            raise DtypeError(f"expected m1 and m2 to have the same dtype, but got: "
                             f"{TORCH_C_NAMES.get(str(dts[0]), dts[0])} != "
                             f"{TORCH_C_NAMES.get(str(dts[1]), dts[1])}")
        return dts[0] if dts else None
    if op.name == "sub" and any(dt is not None and dt.kind == "b" or type(w) is bool
                                for dt, _, w in ops_):
        raise DtypeError(SUB_BOOL)   # NOTE: before a cast to int64 could hide the bool
    want = _torch_promote(ops_, default_float)
    if how == "divide" and want.kind in "biu":
        want = np.dtype(default_float)
    return want


def torch_needs_cast(op, operands, default_float=np.dtype(np.float32)):
    """`torch_compute_dtype`, or None when every tensor operand already has it and the kernel
    gives it as is (no cast needed): the cheap question eager asks on every call."""
    want = torch_compute_dtype(op, operands, default_float)
    if want is None:
        return None
    vals = operands[1:] if op.promote == "where" else operands
    if op.scalar_opmath and want in HALF and torch_scalar_opmath(op, vals) == _FLOAT32:
        return None   # NOTE: the kernel reads the number in float32 itself
    if is_bfloat16(want) and any(isinstance(v, (int, float)) for v in vals):
        return want   # NOTE: NumPy lifts bfloat16 with a Python number to float32 (where, clip)
    if want.kind in "iu" and op.promote != "where" and not ints_fit(vals, want):
        return want   # NOTE: NumPy 2 refuses uint8 + 300; torch wraps it (as_operand does)
    for dt, _, weak in map(_operand, vals):
        if weak is None and dt != want:
            return want
    if any(isinstance(v, float) for v in vals) or op.promote == "divide":
        return want   # NOTE: NumPy's int * 2.5 and int / int give float64: cast first
    return None


def torch_scalar_opmath(op, operands):
    """float32 when torch's CPU kernel computes `op(a, b)` in float32 with the scalar b read
    at its own value, else None: `op` declares it (`Op.scalar_opmath`: mul, and division
    true, floor and trunc), the result is float16 or bfloat16, and b, the SECOND operand, is
    a Python number or a 0-d tensor of any dtype. The result is rounded to the half dtype
    once: `t * 6.2832` of a float16 t is float16(float32(t) * 6.2832f), not
    float16(t * float16(6.2832)), and `t * torch.tensor(0.7)` reads 0.7f. A scalar FIRST
    operand (`torch.mul(0.7, t)`, `torch.tensor(0.7) * t`) is rounded to the half dtype, as
    every other op rounds its scalars (`0.7 * t` is `t.mul(0.7)`: second). operands: arrays,
    Specs, engine tensors or numbers."""
    if not op.scalar_opmath or len(operands) != 2:
        return None
    a, b = operands
    tb = type(b)
    if tb is float or tb is int:   # NOTE: the common case, without the promotion walk
        return _FLOAT32 if type(a) not in (int, float, bool) and _operand(a)[0] in HALF \
            else None
    if isinstance(b, (bool, int, float, complex)):
        return None
    dt, nd, weak = _operand(b)
    if nd or weak is not None:
        return None
    return _FLOAT32 if torch_result_dtype(operands) in HALF else None


def as_operand(x, want):
    """An operand of a cast-to-`want` op call as the kernel takes it: arrays in `want`, and
    Python numbers too when `want` is bfloat16 (NumPy would compute those in float32), or a
    Python int outside the integer dtype `want` (wrapped modulo 2**bits, as torch does:
    uint8 tensor - 1 adds 255)."""
    if isinstance(x, (np.ndarray, np.generic)) or is_bfloat16(want) and \
            isinstance(x, (int, float)) and not isinstance(x, bool):
        return np.asarray(x, want)
    if type(x) is int and want.kind in "iu" and not ints_fit((x,), want):
        return np.asarray(x).astype(want)
    return x


def mirrored(i, n, edge=False):
    """Indices i (some outside [0, n)) mirrored back into range at the edges: without the edge
    element (torch's reflect, TF's REFLECT) or repeating it (edge=True: TF's SYMMETRIC)."""
    back = 1 if edge else 0
    return np.where(i < 0, -i - back, np.where(i >= n, 2 * n - 2 + back - i, i))


def ints_fit(operands, dtype) -> bool:
    """Every Python int among operands lies in the integer dtype's range."""
    info = np.iinfo(dtype)
    return all(info.min <= v <= info.max for v in operands if type(v) is int)


def torch_sum_dtype(dtype, requested=None) -> np.dtype:
    """The dtype PyTorch's sum, prod, cumsum and cumprod accumulate and return: `requested`
    when given, else int64 for every integer and bool input, else the input's."""
    if requested is not None:
        return np.dtype(requested)
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if dtype.kind in "biu" else dtype


def torch_opmath_dtype(dtype) -> np.dtype:
    """The dtype torch's CPU kernels compute a reduction (sum, mean, cumsum, softmax's sum,
    matmul's dot products) in: float32 for float16 and bfloat16, the dtype itself otherwise; the result is
    rounded back to the input's dtype once, at the end.

    >>> torch_opmath_dtype(np.dtype("float16")), torch_opmath_dtype(np.dtype("int64"))
    (dtype('float32'), dtype('int64'))
    """
    dtype = np.dtype(dtype)   # NOTE: torch's CPU kernels compute half in float32 ("opmath")
    return _FLOAT32 if dtype in HALF else dtype
