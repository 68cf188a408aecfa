"""The data every comparison model trains on: scikit-learn's handwritten digits, offline.

1797 grey 8x8 images of the digits 0-9 ship inside scikit-learn, so nothing is downloaded.
Pixels are scaled to [0, 1] (X / 16) as float32 and split once, with a fixed seed, into a
training and a held-out set. The same arrays are offered in the shapes each model wants:

- `flat`: (N, 64) rows, for the MLP;
- `images`: (N, 1, 8, 8) NCHW images, for the CNN;
- `row_sequences`: each image read row by row (8 steps of 8 pixels) with a random number
  of its last rows dropped, so sequences have 5 to 8 steps; padded to 8 with zeros plus
  the true `lengths`, for the recurrent model and the transformer.

Batches are lists of index arrays made from a seed, so the eager and the graph version of a
model see exactly the same batches in the same order.

>>> from dualgrad.comparisons import data
>>> d = data.digits()
>>> d.x_train.shape, d.x_train.dtype, d.x_test.shape
((1348, 64), dtype('float32'), (449, 64))
>>> seqs = data.row_sequences(d.x_train, seed=1)
>>> seqs.x.shape, int(seqs.lengths.min()), int(seqs.lengths.max())
((1348, 8, 8), 5, 8)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["Digits", "Sequences", "digits", "images", "row_sequences", "batches",
           "length_batches", "N_CLASSES"]

N_CLASSES = 10
ROWS = 8          # steps of a row sequence
MIN_ROWS = 5      # at most 3 rows are dropped


@dataclass(frozen=True)
class Digits:
    x_train: np.ndarray   # (N, 64) float32 in [0, 1]
    y_train: np.ndarray   # (N,) int64
    x_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class Sequences:
    x: np.ndarray         # (N, 8, 8) float32, rows past `lengths` are zero
    lengths: np.ndarray   # (N,) int64 in [MIN_ROWS, 8]

    @property
    def mask(self) -> np.ndarray:
        """(N, 8) float32: 1 where a step is real, 0 where it is padding."""
        return (np.arange(ROWS)[None, :] < self.lengths[:, None]).astype(np.float32)


@functools.lru_cache(maxsize=4)
def digits(seed: int = 0, test_fraction: float = 0.25) -> Digits:
    """The digits, scaled to [0, 1], split into train / held-out by a permutation of `seed`."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = perm[:n_test], perm[n_test:]
    out = Digits(x[train], y[train], x[test], y[test])
    for a in (out.x_train, out.y_train, out.x_test, out.y_test):
        a.setflags(write=False)   # NOTE: cached and shared: nobody may change it in place
    return out


def images(x: np.ndarray) -> np.ndarray:
    """(N, 64) rows as (N, 1, 8, 8) NCHW images."""
    return np.ascontiguousarray(x.reshape(-1, 1, 8, 8))


def row_sequences(x: np.ndarray, seed: int = 0) -> Sequences:
    """Each image as 8 rows of 8 pixels with 0-3 of its last rows dropped (zero padded)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(MIN_ROWS, ROWS + 1, size=len(x)).astype(np.int64)
    seq = x.reshape(-1, ROWS, 8).copy()
    seq[np.arange(ROWS)[None, :] >= lengths[:, None]] = 0.0
    return Sequences(seq, lengths)


def batches(n: int, batch_size: int, seed: int, epoch: int = 0) -> list[np.ndarray]:
    """Shuffled index batches of one epoch; the last partial batch is dropped (static shapes)."""
    perm = np.random.default_rng([seed, epoch]).permutation(n)
    return [perm[i:i + batch_size] for i in range(0, n - batch_size + 1, batch_size)]


def length_batches(lengths: np.ndarray, batch_size: int, seed: int,
                   epoch: int = 0) -> list[np.ndarray]:
    """Index batches in which every sequence has the same length (bucketing), shuffled.

    Eager code can then run its Python loop for exactly that many steps; the graph version
    is fed the same batches padded to 8 steps with a mask. A bucket's last partial batch is
    kept, so every sample is seen each epoch.
    """
    rng = np.random.default_rng([seed, epoch])
    out = []
    for length in np.unique(lengths):
        idx = rng.permutation(np.flatnonzero(lengths == length))
        out += [idx[i:i + batch_size] for i in range(0, len(idx), batch_size)]
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def accuracy(logits: np.ndarray, y: np.ndarray) -> float:
    return float((np.asarray(logits).argmax(-1) == y).mean())
