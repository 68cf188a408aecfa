"""Static shapes as TF1 shows them: `TensorShape` (a tuple whose dims may be None) and
`Dimension` (a known dim: an int with TF1's `.value`).

>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 28, 28, 1))
>>> x.get_shape()[1].value, x.shape.as_list(), x.shape[0] is None
(28, [None, 28, 28, 1], True)
>>> x.shape, str(x.shape)
(TensorShape([None, 28, 28, 1]), '(None, 28, 28, 1)')
"""
from __future__ import annotations

__all__ = ["TensorShape", "Dimension", "dimension_value"]


class Dimension(int):
    """A known dim of a `TensorShape` (what `shape[i]` gives): an int, with TF1's `.value`.
    Arithmetic between dims stays a Dimension (`(s[1] * s[2]).value`). An unknown dim is
    None (TF2's convention; TF1's `Dimension(None).value` has no counterpart)."""

    def __new__(cls, value):
        if value is None:
            raise ValueError("Dimension(None): dualgrad writes an unknown dim as None itself "
                             "(`shape[i] is None`), not as a Dimension")
        return super().__new__(cls, value)

    @property
    def value(self):
        return int(self)

    # NOTE: printed as the plain int: a dim read off a shape may end up in generated code
    __repr__ = __str__ = int.__repr__

    def __format__(self, spec):
        return format(int(self), spec)

    def _wrap(op):
        def f(self, other):
            out = getattr(int, op)(self, other)
            return Dimension(out) if isinstance(out, int) and out is not NotImplemented else out
        return f

    __add__, __radd__ = _wrap("__add__"), _wrap("__radd__")
    __sub__, __rsub__ = _wrap("__sub__"), _wrap("__rsub__")
    __mul__, __rmul__ = _wrap("__mul__"), _wrap("__rmul__")
    __floordiv__, __rfloordiv__ = _wrap("__floordiv__"), _wrap("__rfloordiv__")
    __mod__ = _wrap("__mod__")
    del _wrap


def dimension_value(dim):
    """TF1's `tf.dimension_value`: the int of a dim (None when unknown)."""
    return None if dim is None else int(dim)


class TensorShape(tuple):
    """A static shape: a tuple whose dims may be None; `as_list()` as in TF. Indexing gives a
    `Dimension` for a known dim (`shape[1].value`), None for an unknown one; a slice gives a
    TensorShape. `TensorShape(None)` is the shape of unknown rank."""

    def __new__(cls, dims=()):
        if dims is None:
            return _UNKNOWN_RANK
        return super().__new__(cls, (None if d is None else int(d) for d in dims))

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        if isinstance(index, slice):
            return TensorShape(out)
        return None if out is None else Dimension(out)

    def as_list(self):
        return list(self)

    @property
    def dims(self):
        return [self[i] for i in range(len(self))]

    @property
    def ndims(self):
        return len(self)

    rank = ndims

    def is_fully_defined(self):
        return None not in self

    def num_elements(self):
        """The number of elements, None unless every dim is known (TF1)."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if other.ndims is None:
            return True
        return len(self) == len(other) and all(
            a is None or b is None or a == b for a, b in zip(self, other))

    def merge_with(self, other):
        """The more specific of two compatible shapes (ValueError when they are not)."""
        other = as_shape(other)
        if other.ndims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape(a if a is not None else b for a, b in zip(self, other))

    def concatenate(self, other):
        other = as_shape(other)
        return other if other.ndims is None else TensorShape(tuple(self) + tuple(other))

    # NOTE: TF 2's forms (what tf.compat.v1 prints): str (None, 3), repr TensorShape([None, 3]);
    # dualgrad's error messages keep TF1's (?, 3) (ops.core.fmt_shape)
    def __str__(self):
        return tuple.__repr__(tuple(self))

    def __repr__(self):
        return f"TensorShape({list(self)!r})"


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


class _UnknownRankShape(TensorShape):
    """The shape of a tensor whose rank is unknown (TF's `TensorShape(None)`): `ndims` is
    None; asking for its length, dims or list raises, as in TF."""

    def __new__(cls):
        return tuple.__new__(cls)

    def _refuse(self, *_):
        raise ValueError("the shape of this tensor has unknown rank (a placeholder declared "
                         "without a shape?): its dims are not known until run time; use "
                         "graph.shape(x) for them")

    __len__ = __iter__ = __getitem__ = as_list = _refuse
    dims = property(_refuse)

    @property
    def ndims(self):
        return None

    rank = ndims

    def is_fully_defined(self):
        return False

    def num_elements(self):
        return None

    def is_compatible_with(self, other):
        return True

    def merge_with(self, other):
        return as_shape(other)

    def concatenate(self, other):
        return self

    def __eq__(self, other):   # NOTE: never known to equal anything, itself included
        return False

    def __ne__(self, other):
        return True

    def __contains__(self, item):   # `None in shape`: some dim is unknown
        return item is None

    __hash__ = tuple.__hash__

    def __str__(self):
        return "<unknown>"

    def __repr__(self):
        return "TensorShape(None)"


_UNKNOWN_RANK = _UnknownRankShape()
