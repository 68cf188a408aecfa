"""torch's memory formats: the order in which a tensor's elements lie in memory. A dualgrad
tensor's elements lie in a NumPy array, whose strides can be in any order, so a format is an
order of dims, and changes `stride()` and `is_contiguous()`, never a value.

>>> import numpy as np
>>> from dualgrad.eager.formats import channels_last, laid_out
>>> a = laid_out(np.zeros((2, 3, 4, 5), np.float32), channels_last.order)
>>> [s // 4 for s in a.strides]
[60, 1, 15, 3]
"""
from __future__ import annotations

import numpy as np


class memory_format:  # noqa: N801 - torch's name
    """torch's memory formats, as arguments. A dualgrad tensor's elements lie in a NumPy array,
    whose strides can be in any order: `contiguous_format` is row-major, `channels_last`
    (rank 4) and `channels_last_3d` (rank 5) keep the channel dim innermost (N, H, W, C in
    memory for an N, C, H, W tensor), `preserve_format` keeps the input's order. A format
    changes `stride()` and `is_contiguous()`, never a value (docs/pytorch-compat.md)."""

    def __init__(self, name, order=None):
        self.name, self.order = name, order     # order: the dims, outermost first

    def __repr__(self):
        return f"torch.{self.name}"


contiguous_format, preserve_format = memory_format("contiguous_format"), \
    memory_format("preserve_format")
channels_last = memory_format("channels_last", (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", (0, 2, 3, 4, 1))


def format_order(name, fmt, ndim):
    """The order of dims, outermost first, that `fmt` lays a rank-`ndim` tensor out in: None
    for preserve_format (or no format), the identity for contiguous_format."""
    if fmt is None or fmt is preserve_format:
        return None
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{name}(): memory_format must be a torch.memory_format, not "
                        f"{type(fmt).__name__}")
    if fmt.order is None:
        return tuple(range(ndim))
    if ndim != len(fmt.order):
        raise RuntimeError(f"{name}(): required rank {len(fmt.order)} tensor to use "
                           f"{fmt.name} format, got rank {ndim}")
    return fmt.order


def array_order(arr):
    """The order of arr's dims, outermost first, when its elements are dense and do not
    overlap (what torch's preserve_format keeps), else the identity (row-major)."""
    if arr.flags.c_contiguous:
        return tuple(range(arr.ndim))
    step = [abs(s) for s in arr.strides]
    order = tuple(sorted(range(arr.ndim), key=lambda d: (-step[d], d)))
    return order if in_order(arr, order) else tuple(range(arr.ndim))


def in_order(arr, order):
    """Whether arr's elements lie densely in `order` (a dim of size 1 may have any stride,
    as in torch's is_contiguous)."""
    return bool(arr.transpose(order).flags.c_contiguous)


def laid_out(arr, order):
    """arr's values in a new array whose memory is row-major in `order`."""
    back = tuple(int(i) for i in np.argsort(order))
    return np.ascontiguousarray(arr.transpose(order)).transpose(back)
