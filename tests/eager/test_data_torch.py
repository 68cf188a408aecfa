"""torch.utils.data's everyday calls, run on torch and on dualgrad.eager: the batches the two
loaders yield (structure, container types, tensor shapes, dtypes and values), lengths,
splits, samplers and collation, compared case by case. Random draws (random_split,
WeightedRandomSampler) compare lengths only.
"""
import collections

import numpy as np
import pytest
import torch

from dualgrad import eager

Point = collections.namedtuple("Point", "x y")


def _desc(v):
    """A value as plain data: tensors by shape, dtype and values; containers by type."""
    if hasattr(v, "shape") and hasattr(v, "dtype") and hasattr(v, "tolist"):
        return ("tensor", tuple(v.shape), str(v.dtype).replace("torch.", ""),
                np.round(np.asarray(v.tolist(), dtype=float), 6).tolist())
    if isinstance(v, dict):
        return {k: _desc(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [_desc(x) for x in v])
    return (type(v).__name__, v)


def _first(lib, data, **kw):
    return next(iter(lib.utils.data.DataLoader(data, **kw)))


def _iterable(lib, n):
    cls = type("Numbers", (lib.utils.data.IterableDataset,), {"__iter__": lambda s: iter(range(n))})
    return cls()


CASES = {
    "tuples of numbers": lambda L: _first(L, [(1, 2.0), (3, 4.0)], batch_size=2),
    "dicts of arrays": lambda L: _first(L, [{"a": np.ones(2, np.float32), "b": 1},
                                            {"a": np.zeros(2, np.float32), "b": 2}], batch_size=2),
    "strings in tuples": lambda L: _first(L, [("x", 1), ("y", 2)], batch_size=2),
    "strings alone": lambda L: _first(L, ["x", "y"], batch_size=2),
    "numpy float64 scalars": lambda L: _first(L, [np.float64(1.5), np.float64(2)], batch_size=2),
    "numpy int32 arrays": lambda L: _first(L, [np.array([1, 2], np.int32)] * 2, batch_size=2),
    "bools": lambda L: _first(L, [True, False], batch_size=2),
    "batch_size None": lambda L: _first(L, [np.ones(2)], batch_size=None),
    "lists of ints": lambda L: _first(L, [[1, 2], [3, 4]], batch_size=2),
    "lists of floats": lambda L: _first(L, [[1.5], [2.5]], batch_size=2),
    "namedtuples": lambda L: _first(L, [Point(1, 2.0)] * 2, batch_size=2),
    "TensorDataset": lambda L: _first(L, L.utils.data.TensorDataset(
        L.arange(6).reshape(3, 2), L.tensor([0, 1, 0])), batch_size=2),
    "IterableDataset": lambda L: list(L.utils.data.DataLoader(_iterable(L, 5), batch_size=2)),
    "last batch kept": lambda L: [len(b) for b in L.utils.data.DataLoader(list(range(10)),
                                                                          batch_size=3)],
    "len": lambda L: len(L.utils.data.DataLoader(list(range(10)), batch_size=3)),
    "len drop_last": lambda L: len(L.utils.data.DataLoader(list(range(10)), batch_size=3,
                                                           drop_last=True)),
    "random_split fractions": lambda L: [len(s) for s in L.utils.data.random_split(
        list(range(10)), [0.3, 0.7])],
    "random_split lengths": lambda L: [len(s) for s in L.utils.data.random_split(
        list(range(10)), [3, 7])],
    "random_split bad lengths": lambda L: L.utils.data.random_split(list(range(10)), [3, 8]),
    "Subset": lambda L: list(L.utils.data.Subset(list(range(10)), [1, 3])),
    "ConcatDataset": lambda L: [len(L.utils.data.ConcatDataset([list(range(3)), list(range(4))])),
                                L.utils.data.ConcatDataset([list(range(3)),
                                                            list(range(4))])[4]],
    "BatchSampler": lambda L: list(L.utils.data.BatchSampler(
        L.utils.data.SequentialSampler(range(10)), 4, False)),
    "BatchSampler drop_last": lambda L: list(L.utils.data.BatchSampler(
        L.utils.data.SequentialSampler(range(10)), 4, True)),
    "WeightedRandomSampler": lambda L: len(list(L.utils.data.WeightedRandomSampler([0.1, 0.9],
                                                                                   5))),
    "default_collate arrays": lambda L: L.utils.data.default_collate([np.array([1., 2.]),
                                                                      np.array([3., 4.])]),
    "default_collate ragged": lambda L: L.utils.data.default_collate([L.ones(2), L.ones(3)]),
    "default_collate uneven lists": lambda L: L.utils.data.default_collate([[1, 2], [3]]),
}


def _run(lib, case):
    try:
        return _desc(CASES[case](lib))
    except Exception as e:     # noqa: BLE001 - compared with the other library's below
        return ("raises", type(e).__name__)


@pytest.mark.parametrize("case", sorted(CASES))
def test_data_as_torch(case):
    assert _run(eager, case) == _run(torch, case)
