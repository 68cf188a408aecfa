"""`as_strided`: the elements of a contiguous input at offset + sum(i_k * stride_k), laid out
in `size` (a NumPy view of the input's buffer, so writes through it reach the input, as
torch's); its gradient adds each output element's gradient back at its position.

>>> import numpy as np
>>> from dualgrad import ops
>>> ops.as_strided(np.arange(6.0), size=(2, 2), stride=(3, 1)).tolist()
[[0.0, 1.0], [3.0, 4.0]]
"""
from __future__ import annotations

import numpy as np

from .core import Sample, ShapeError, Spec, fmt_shape, primitive, register
from .elementwise import mul
from .shape import reshape, reshape_like, take, take_grad, transpose


def strided_positions(size, stride, storage_offset=0):
    """The flat input position of every output element, in the output's shape."""
    pos = np.full(tuple(size), storage_offset, np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def _check(x, size, stride, storage_offset, name="as_strided"):
    numel = int(np.prod(x.shape)) if None not in x.shape else None
    if len(size) != len(stride):
        raise ShapeError(f"{name}: mismatch in length of strides and shape: size {size}, "
                         f"stride {stride}")
    if any(s < 0 for s in stride) or storage_offset < 0:
        raise ShapeError(f"{name}: negative strides or offset are not supported: stride "
                         f"{stride}, storage_offset {storage_offset}")
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 \
        if all(n is not None and n > 0 for n in size) else 0
    if numel is not None and need > numel:
        raise ShapeError(f"{name}: setStorage: sizes {list(size)}, strides {list(stride)},"
                         f" storage offset {storage_offset} need {need} elements, the input "
                         f"{fmt_shape(x)} has {numel}")


def _infer(x, size, stride, storage_offset=0):
    _check(x, tuple(size), tuple(stride), storage_offset)
    return Spec(tuple(size), x.dtype)


def _kernel(x, size, stride, storage_offset=0):
    x = np.asarray(x)
    _check(x, tuple(size), tuple(stride), storage_offset)
    flat = np.ascontiguousarray(x).reshape(-1)   # NOTE: a view of x when x is contiguous
    if not flat.size or not all(size):
        return np.zeros(tuple(size), x.dtype)
    return np.lib.stride_tricks.as_strided(flat[storage_offset:], shape=tuple(size),
                                           strides=tuple(s * x.itemsize for s in stride))


def _vjp(g, x, size, stride, storage_offset=0, **kw):
    pos = strided_positions(size, stride, storage_offset).reshape(-1)
    flat_x = reshape(x, (-1,))
    return (reshape(take_grad(reshape(g, (-1,)), pos, flat_x, axis=0), tuple(x.shape)),)


AS_STRIDED = register("as_strided", _infer, _kernel, _vjp, category="shape", view=True,
                      samples=(Sample(((3, 4),), {"size": (2, 2), "stride": (4, 1)}),
                               Sample(((6,),), {"size": (3, 2), "stride": (1, 1),
                                                "storage_offset": 1}),
                               Sample(((2, 3),), {"size": (4, 4), "stride": (1, 1)},
                                      match="need")),
                      ref=None, alias_layout="strided", complex=True)
as_strided = primitive(AS_STRIDED)


# -- as_strided of a view: torch's storage beneath it ------------------------------------------
def _within_check(x, storage, x_stride, x_offset):
    if len(storage.shape) != 1 or x.dtype != storage.dtype or len(x_stride) != len(x.shape):
        raise ShapeError(f"as_strided_within: a 1-d storage of x's dtype and one stride per dim "
                         f"of x, got x {fmt_shape(x)} {x.dtype}, storage {fmt_shape(storage)} "
                         f"{storage.dtype}, x_stride {x_stride}")
    _check(storage, tuple(x.shape), tuple(x_stride), x_offset, "as_strided_within")


def _within_infer(x, storage, size, stride, storage_offset, x_stride, x_offset):
    _within_check(x, storage, x_stride, x_offset)
    _check(storage, tuple(size), tuple(stride), storage_offset, "as_strided_within")
    return Spec(tuple(size), x.dtype)


def _within_kernel(x, storage, size, stride, storage_offset, x_stride, x_offset):
    x, flat = np.asarray(x), np.asarray(storage)
    _within_check(x, flat, x_stride, x_offset)
    if not np.may_share_memory(x, flat):    # NOTE: in eager x lies in storage already
        flat = flat.copy()
        flat[strided_positions(x.shape, x_stride, x_offset)] = x
    return _kernel(flat, size, stride, storage_offset)


def _within_vjp(g, x, storage, size, stride, storage_offset, x_stride, x_offset, **kw):
    pos = strided_positions(size, stride, storage_offset).reshape(-1)
    whole = take_grad(reshape(g, (-1,)), pos, storage, axis=0)
    xpos = strided_positions(tuple(x.shape), x_stride, x_offset)
    mask = np.ones(storage.shape, bool)
    mask[xpos] = False
    return take(whole, xpos, axis=0), mul(whole, mask.astype(storage.dtype))


def _within_ref(xp, x, storage, size, stride, storage_offset, x_stride, x_offset):
    xpos = strided_positions(x.shape, x_stride, x_offset).reshape(-1)
    which = np.full(storage.shape, -1)
    which[xpos] = np.arange(xpos.size)
    flat = xp.where(which >= 0, xp.reshape(x, (-1,))[np.maximum(which, 0)], storage)
    return flat[strided_positions(size, stride, storage_offset)]


AS_STRIDED_WITHIN = register(
    "as_strided_within", _within_infer, _within_kernel, _within_vjp, category="shape",
    view=True, alias_layout="strided", ref=_within_ref,
    samples=(Sample(((2, 5), (20,)), {"size": (2, 2), "stride": (1, 2), "storage_offset": 0,
                                      "x_stride": (5, 1), "x_offset": 5}),
             Sample(((3, 2), (12,)), {"size": (4,), "stride": (3,), "storage_offset": 1,
                                      "x_stride": (1, 6), "x_offset": 2}),
             Sample(((10,), (20,)), {"size": (2, 2), "stride": (1, 2), "storage_offset": 19,
                                     "x_stride": (1,), "x_offset": 5}, match="need")), complex=True)
as_strided_within = primitive(AS_STRIDED_WITHIN)
"""as_strided(storage, size, stride, storage_offset) after x is written into the 1-d storage at
x_offset + sum(i * x_stride): torch's as_strided of a view x, which reads the storage of the
tensor x is a view of. In eager x lies in that storage already and the result is a view of it;
its gradient reaches x at x's own positions."""


# -- diagonal: a view of any input, by its own strides ------------------------------------------
def _diag_len(n1, n2, offset):
    if n1 is None or n2 is None:
        return None
    return max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))


def _diag_infer(x, offset=0, axis1=0, axis2=1):
    if x.ndim < 2 or axis1 == axis2:
        raise ShapeError(f"diagonal: needs two different dims of a tensor with at least 2, got "
                         f"dims {axis1}, {axis2} of {fmt_shape(x)}")
    rest = [n for k, n in enumerate(x.shape) if k not in (axis1, axis2)]
    return Spec(tuple(rest) + (_diag_len(x.shape[axis1], x.shape[axis2], offset),), x.dtype)


def _diag_kernel(x, offset=0, axis1=0, axis2=1):
    x = np.asarray(x)
    d = np.diagonal(x, offset, axis1, axis2)
    if x.flags.writeable:      # NOTE: NumPy's diagonal is a read-only view; torch's is writable
        d.flags.writeable = True
    return d


def _diag_vjp(g, x, offset=0, axis1=0, axis2=1, **kw):
    nd = len(x.shape)
    perm = [k for k in range(nd) if k not in (axis1, axis2)] + [axis1, axis2]
    xt = transpose(x, axes=tuple(perm))
    n1, n2 = x.shape[axis1], x.shape[axis2]
    rows = np.arange(max(0, -offset), min(n1, n2 - offset))
    flat = reshape(xt, tuple(xt.shape[:-2]) + (n1 * n2,))
    gt = reshape_like(take_grad(g, rows * n2 + rows + offset, flat, axis=nd - 2), xt)
    return (transpose(gt, axes=tuple(int(i) for i in np.argsort(perm))),)


DIAGONAL = register("diagonal", _diag_infer, _diag_kernel, _diag_vjp, category="shape",
                    view=True,
                    samples=(Sample(((3, 4),)), Sample(((2, 3, 4),), {"offset": 1, "axis1": 2,
                                                                       "axis2": 0}),
                             Sample(((4, 3),), {"offset": -2}),
                             Sample(((3,),), match="needs two different dims")),
                    ref=lambda np, x, offset=0, axis1=0, axis2=1: np.diagonal(
                        x, offset, axis1, axis2), alias_layout="strided", complex=True)
diagonal = primitive(DIAGONAL)
# -- sliding windows: torch's Tensor.unfold, a view of any input ---------------------------------
def _win_count(n, size, step):
    return None if n is None else (n - size) // step + 1


def _win_infer(x, axis=0, size=1, step=1):
    n = x.shape[axis]
    if size < 1 or step < 1 or (n is not None and size > n):
        raise ShapeError(f"sliding_windows: size {size} and step {step} must be >= 1 and size "
                         f"at most dim {axis} of {fmt_shape(x)}")
    shape = list(x.shape)
    shape[axis] = _win_count(n, size, step)
    return Spec(tuple(shape) + (size,), x.dtype)


def _win_kernel(x, axis=0, size=1, step=1):
    x = np.asarray(x)
    v = np.lib.stride_tricks.sliding_window_view(x, size, axis=axis,
                                                 writeable=x.flags.writeable)
    return v[(slice(None),) * axis + (slice(None, None, step),)]


def _win_vjp(g, x, axis=0, size=1, step=1, **kw):
    nd = len(x.shape)
    idx = (np.arange(_win_count(x.shape[axis], size, step)) * step)[:, None] + np.arange(size)
    perm = list(range(axis + 1)) + [nd] + list(range(axis + 1, nd))   # windows' dim after axis
    return (take_grad(transpose(g, axes=tuple(perm)), idx, x, axis=axis),)


SLIDING_WINDOWS = register(
    "sliding_windows", _win_infer, _win_kernel, _win_vjp, category="shape", view=True,
    alias_layout="strided",
    samples=(Sample(((7,),), {"size": 3, "step": 2}),
             Sample(((2, 6, 3),), {"axis": 1, "size": 2, "step": 1}),
             Sample(((2, 3),), {"axis": 1, "size": 4}, match="at most")),
    ref=lambda np, x, axis=0, size=1, step=1: np.moveaxis(np.take(
        x, (np.arange(0, x.shape[axis] - size + 1, step)[:, None] + np.arange(size)),
        axis=axis), axis + 1, -1), complex=True)
sliding_windows = primitive(SLIDING_WINDOWS)
__all__ = ["as_strided", "as_strided_within", "diagonal", "sliding_windows", "strided_positions"]
