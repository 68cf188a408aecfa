"""The MNIST loader of TF1's tutorials (`tf.examples.tutorials.mnist.input_data`), offline.

`read_data_sets(train_dir, one_hot=False, dtype=float32, reshape=True, validation_size=5000,
seed=None)` reads the four standard IDX files from `train_dir` (gzipped or not):

    train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz
    t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz

It never downloads: when a file is missing it raises FileNotFoundError naming the folder and
exactly the files to put there (the original fetched them from the network). The result
is TF's `Datasets(train, validation, test)`; each `DataSet` has `images` (float32 in [0, 1],
(N, 784) when `reshape`), `labels` (class numbers, or one-hot rows), `num_examples`,
`epochs_completed` and `next_batch(batch_size, shuffle=True)` with TF's epoch logic.
"""
from __future__ import annotations

import collections
import gzip
import os

import numpy as np

from .dtypes import as_dtype

__all__ = ["read_data_sets", "DataSet", "Datasets", "FILES"]

FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _find(train_dir, name):
    for candidate in (name, name[:-3]):
        path = os.path.join(train_dir, candidate)
        if os.path.exists(path):
            return path
    return None


def _read_idx(path, magic):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise ValueError(f"Invalid magic number {found} in MNIST file {path} (expected {magic})")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


class DataSet:
    def __init__(self, images, labels, one_hot=False, dtype=np.float32, reshape=True, seed=None):
        dtype = as_dtype(dtype)
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"images.shape: {images.shape} labels.shape: {labels.shape}")
        if reshape:
            images = images.reshape(images.shape[0], -1)
        images = images.astype(dtype) / 255.0 if dtype == np.float32 else images
        self._images = images
        self._labels = np.eye(10, dtype=np.float64)[labels] if one_hot else labels
        self._num_examples = images.shape[0]
        self._epochs_completed, self._index = 0, 0
        self._rng = np.random.RandomState(seed)

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def _shuffle(self):
        perm = self._rng.permutation(self._num_examples)
        self._images, self._labels = self._images[perm], self._labels[perm]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next `batch_size` examples; an epoch's end joins its rest with the start of the
        next (shuffled anew when `shuffle`), as TF's tutorial loader."""
        if fake_data:
            raise NotImplementedError("next_batch(fake_data=True) is not supported")
        start = self._index
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index += batch_size
            return self._images[start:self._index], self._labels[start:self._index]
        self._epochs_completed += 1
        rest_images, rest_labels = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index = batch_size - len(rest_images)
        return (np.concatenate([rest_images, self._images[:self._index]]),
                np.concatenate([rest_labels, self._labels[:self._index]]))


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=np.float32, reshape=True,
                   validation_size=5000, seed=None, source_url=None):
    if fake_data:
        raise NotImplementedError("read_data_sets(fake_data=True) is not supported")
    paths = [_find(train_dir, name) for name in FILES]
    missing = [name for name, p in zip(FILES, paths) if p is None]
    if missing:
        raise FileNotFoundError(
            f"read_data_sets: dualgrad does not download MNIST; put the standard files in "
            f"{os.path.abspath(train_dir)!r}: {', '.join(missing)} (gzipped or not; missing: "
            f"{len(missing)} of 4)")
    train_images, train_labels = _read_idx(paths[0], 2051), _read_idx(paths[1], 2049)
    test_images, test_labels = _read_idx(paths[2], 2051), _read_idx(paths[3], 2049)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"Validation size should be between 0 and {len(train_images)}. "
                         f"Received: {validation_size}.")
    kw = dict(one_hot=one_hot, dtype=dtype, reshape=reshape, seed=seed)
    return Datasets(
        train=DataSet(train_images[validation_size:], train_labels[validation_size:], **kw),
        validation=DataSet(train_images[:validation_size], train_labels[:validation_size], **kw),
        test=DataSet(test_images, test_labels, **kw))
