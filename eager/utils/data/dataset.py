"""Datasets: anything with __getitem__ and __len__, plus the usual wrappers.

>>> from dualgrad import eager
>>> from dualgrad.eager.utils.data import TensorDataset, random_split
>>> ds = TensorDataset(eager.arange(10), eager.arange(10) * 2)
>>> ds[3]
(tensor(3), tensor(6))
>>> [len(s) for s in random_split(ds, [0.8, 0.2], generator=eager.Generator().manual_seed(0))]
[8, 2]
"""
from __future__ import annotations

import bisect
import math

from ...generator import rng_of


class Dataset:
    """A map-style dataset: subclasses define __getitem__(index) (and usually __len__)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define __iter__ (no indices, no sampler)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are tuples of the tensors' rows: dataset[i] == (t0[i], t1[i], ...)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            sizes = [tuple(t.shape) for t in tensors]
            raise ValueError(f"TensorDataset: size mismatch between tensors: every tensor "
                             f"needs the same first dimension, got {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes, total = [], 0
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[k][idx - (self.cumulative_sizes[k - 1] if k else 0)]


def _lengths(lengths, n):
    """Absolute lengths from counts or from fractions summing to 1 (remainders round-robin)."""
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal "
                         f"the length of the input dataset ({n})")
    return lengths


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping random Subsets of the given lengths (or fractions)."""
    lengths = _lengths(lengths, len(dataset))
    perm = rng_of(generator).permutation(sum(lengths)).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out
