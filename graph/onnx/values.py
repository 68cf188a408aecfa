"""What the ONNX reader knows about a value while reading: a NumPy array (known), an object
array of dims with None for the unknown ones (a shape known in part), or a graph tensor."""
from __future__ import annotations

import numpy as np

__all__ = ["NeedsValue", "dims", "partial", "static"]


class NeedsValue(Exception):
    """A rule needs the value of graph input `name` while reading (the reader then reads the
    model per fed value of it)."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


def static(v):
    return isinstance(v, np.ndarray)


def partial(v):
    return static(v) and v.dtype == object


def dims(v):
    """A static shape vector as a list with None for unknown dims."""
    return [None if d is None else int(d) for d in np.asarray(v).reshape(-1).tolist()]


