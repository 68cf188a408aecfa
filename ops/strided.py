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
from .shape import reshape, take_grad


def strided_positions(size, stride, storage_offset=0):
    """The flat input position of every output element, in the output's shape."""
    pos = np.full(tuple(size), storage_offset, np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def _check(x, size, stride, storage_offset):
    numel = int(np.prod(x.shape)) if None not in x.shape else None
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: mismatch in length of strides and shape: size {size}, "
                         f"stride {stride}")
    if any(s < 0 for s in stride) or storage_offset < 0:
        raise ShapeError(f"as_strided: negative strides or offset are not supported: stride "
                         f"{stride}, storage_offset {storage_offset}")
    need = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 \
        if all(n > 0 for n in size) else 0
    if numel is not None and need > numel:
        raise ShapeError(f"as_strided: setStorage: sizes {list(size)}, strides {list(stride)},"
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
                      ref=None)
as_strided = primitive(AS_STRIDED)
__all__ = ["as_strided", "strided_positions"]
