"""The base of both front ends' dtype objects (graph's `tf.DType`, eager's `torch.dtype`): a
wrapper over a NumPy dtype, kept in `.dtype`, which NumPy reads wherever it takes a dtype
(`np.zeros(3, d)`, `a.astype(d)`, `np.dtype(d)`).

A wrapper equals, and hashes as, the NumPy dtype it stands for, so a dict or set keyed by
either finds both and engine code that compares dtypes keeps working; NumPy's own attributes
(`kind`, `itemsize`, `name`, `type`) read through. There is one object per NumPy dtype and
front end (`of`), so `is` works between two of them, and copies and pickles give it back.

>>> import numpy as np
>>> from dualgrad.ops.dtypes import DTypeBase
>>> d = DTypeBase.of(np.float32)
>>> d == np.float32, d is DTypeBase.of("float32"), np.zeros(2, d).dtype
(True, True, dtype('float32'))
"""
from __future__ import annotations

import numpy as np


class _Table(dict):
    """One wrapper per NumPy dtype: `table[np_dtype]`, made on first use."""
    __slots__ = ("cls",)

    def __missing__(self, dt):
        d = object.__new__(self.cls)
        d.dtype, d.kind, d.itemsize = dt, dt.kind, dt.itemsize
        return self.setdefault(dt, d)   # NOTE: atomic: two threads get the same object


class DTypeBase:
    """A dtype object over a NumPy dtype; a front end subclasses it for its names and
    predicates (and `_coerce`, how it reads another dtype spelling)."""
    __slots__ = ("dtype", "kind", "itemsize")
    _table: _Table

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._table = _Table()
        cls._table.cls = cls

    @classmethod
    def of(cls, dtype):
        """The one object of this class for a dtype (NumPy's, a type, a name NumPy reads)."""
        return cls._table[dtype if type(dtype) is np.dtype else np.dtype(dtype)]

    @staticmethod
    def _coerce(other) -> np.dtype:
        """The NumPy dtype `other` names (TypeError if none): what `==` compares with."""
        return np.dtype(other)

    def __eq__(self, other):
        if isinstance(other, DTypeBase):
            return self.dtype == other.dtype
        if other is None:   # NOTE: np.dtype(None) is float64
            return False
        try:
            return self.dtype == self._coerce(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):   # NOTE: the NumPy dtype's, so sets and dicts of either find both
        return hash(self.dtype)

    def __reduce__(self):
        return type(self).of, (self.dtype,)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getattr__(self, attr):   # NOTE: NumPy's own attributes: name, char, type, str
        if attr.startswith("__") or attr in DTypeBase.__slots__:
            raise AttributeError(attr)
        return getattr(self.dtype, attr)


DTypeBase._table = _Table()
DTypeBase._table.cls = DTypeBase


def table_of(cls) -> dict:
    """`cls`'s objects by NumPy dtype (made on first use): `table_of(cls)[np_dtype]` is
    `cls.of(np_dtype)` in one dict lookup, for a hot path (eager's `Tensor.dtype`)."""
    return cls._table
