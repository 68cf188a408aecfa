"""Shape and dtype rules shared by many ops. Dims may be None (unknown until run time)."""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from .core import ShapeError, Spec, fmt_shape, located


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
            raise ShapeError(
                f"{opname}: cannot broadcast {shapes_str(*specs)}: "
                f"dimension {-i} is {' vs '.join(str(d) for d in sorted(known))}")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(reversed(out))


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


def _category(dt) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}.get(np.dtype(dt).kind, 1)


def _promote(a, b):
    """PyTorch's promotion table: across categories the higher category's dtype wins
    (int64 with float32 is float32); within one, as NumPy (int8 with uint8 is int16)."""
    ka, kb = _category(a), _category(b)
    if ka == kb or ka == 3 or kb == 3:
        return np.promote_types(a, b)
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
        return np.result_type(higher, 1j) if hk == 2 else lower
    if hk == 2:
        return higher
    if hk == 0 or lk == 2:
        return _promote(higher, lower)
    return higher


def torch_result_dtype(operands, default_float=np.dtype(np.float32)) -> np.dtype:
    """PyTorch's type promotion over arrays and Python scalars (torch.result_type).

    Tensors with dims decide within their category; 0-d tensors and then Python scalars only
    raise the category (a Python float makes an int tensor the default float dtype, a float64
    0-d tensor leaves a float32 tensor float32). NumPy instead lets any float64 or int64 win:
    `float32 ** int64` is float64 there and float32 here.
    """
    dims, zeros, wrapped = [], [], []
    for x in operands:
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            wrapped.append(np.dtype(np.bool_) if isinstance(x, bool) else
                           np.dtype(np.int64) if isinstance(x, int) else
                           default_float if isinstance(x, float) else
                           np.result_type(default_float, 1j))
        else:
            dt, nd = np.asarray(x).dtype if not hasattr(x, "dtype") else x.dtype, np.ndim(x)
            (dims if nd else zeros).append(np.dtype(dt))
    return _combine(_promote_all(dims), _combine(_promote_all(zeros), _promote_all(wrapped)))


# -- PyTorch's front end: the dtypes its reductions accumulate and compute in -------------------
# eager's functions and everything compile() traces through them read these; the primitives'
# own shape rules stay NumPy's (the graph front end keeps TF1's strict rule on top of them).
_INT64 = np.dtype(np.int64)
_OPMATH = {np.dtype(np.float16): np.dtype(np.float32)}


def torch_accumulate_dtype(dtype, requested=None) -> np.dtype:
    """The result dtype of torch's sum, prod, cumsum and cumprod: `requested` (their dtype=)
    when given, else int64 for bool and every integer dtype, else the input's.

    >>> torch_accumulate_dtype(np.dtype("uint8")), torch_accumulate_dtype(np.dtype("float16"))
    (dtype('int64'), dtype('float16'))
    """
    if requested is not None:
        return np.dtype(requested)
    dtype = np.dtype(dtype)
    return _INT64 if dtype.kind in "biu" else dtype


def torch_opmath_dtype(dtype) -> np.dtype:
    """The dtype torch's CPU kernels compute a reduction (sum, mean, cumsum, softmax's sum,
    matmul's dot products) in: float32 for float16, the dtype itself otherwise; the result is
    rounded back to the input's dtype once, at the end.

    >>> torch_opmath_dtype(np.dtype("float16")), torch_opmath_dtype(np.dtype("int64"))
    (dtype('float32'), dtype('int64'))
    """
    dtype = np.dtype(dtype)
    return _OPMATH.get(dtype, dtype)
