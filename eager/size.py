"""torch.Size: the type of `x.shape` and `x.size()`, a tuple of ints.

>>> from dualgrad import eager as torch
>>> s = torch.ones(2, 3, 4).shape
>>> s, s[1:], s.numel(), s == (2, 3, 4)
(torch.Size([2, 3, 4]), torch.Size([3, 4]), 24, True)
"""
from __future__ import annotations

import math
import operator

_tuple_new = tuple.__new__


class Size(tuple):
    """A shape, as torch's: a tuple (equal to, and hashing as, the plain tuple of its ints)
    that prints as `torch.Size([2, 3])`, whose slices, sums and repeats are Sizes too."""
    __slots__ = ()

    def __new__(cls, sizes=()):
        dims = []
        for i, d in enumerate(sizes):
            try:
                dims.append(operator.index(d))
            except TypeError:
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(d).__name__}')") from None
        return _tuple_new(cls, dims)

    def numel(self):
        return math.prod(self)

    def __getitem__(self, index):
        got = tuple.__getitem__(self, index)
        return _tuple_new(Size, got) if type(index) is slice else got

    def __add__(self, other):
        return _tuple_new(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _tuple_new(Size, tuple.__add__(other, self))

    def __mul__(self, n):
        return _tuple_new(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def __reduce__(self):
        return Size, (tuple(self),)


def as_size(shape) -> Size:
    """shape (a tuple of ints, or of a trace's dims) as a Size, unchecked: the fast way in."""
    return _tuple_new(Size, shape)


__all__ = ["Size"]
