"""Shape and dtype rules shared by many ops. Dims may be None (unknown until run time)."""
from __future__ import annotations

import numpy as np

from .core import ShapeError, Spec, fmt_shape


def shapes_str(*specs) -> str:
    return ", ".join(fmt_shape(s) for s in specs)


def result_dtype(*specs) -> np.dtype:
    """NumPy 2 promotion; Python scalars are weak (float32 * 2.0 stays float32)."""
    return np.result_type(*[s.weak if s.weak is not None else s.dtype for s in specs])


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


def norm_axis(opname, axis, ndim, spec=None) -> int:
    if not -ndim <= axis < max(ndim, 1):
        where = f" of {fmt_shape(spec)}" if spec is not None else ""
        raise ShapeError(f"{opname}: axis {axis} is out of range for {ndim}-d input{where}")
    return axis % ndim if ndim else 0


def norm_axes(opname, axis, ndim, spec=None) -> tuple:
    """None -> all axes; int or tuple -> sorted non-negative tuple."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    axes = tuple(sorted(norm_axis(opname, a, ndim, spec) for a in axis))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{opname}: repeated axis in {axis}")
    return axes


def reduced_shape(shape, axes, keepdims) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def numel(shape):
    """Product of dims, or None when any is unknown."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n


def require_float(opname, *specs):
    for s in specs:
        if s.weak is None and s.dtype.kind not in "fc":
            raise ShapeError(f"{opname}: expects floating-point input, got {s.dtype} "
                             f"for {fmt_shape(s)}")


def same(spec: Spec, shape=None, dtype=None) -> Spec:
    return Spec(spec.shape if shape is None else tuple(shape),
                spec.dtype if dtype is None else np.dtype(dtype))
