"""tf.keras as TF1 programs reach it for data only: `keras.datasets.mnist.load_data()`.

dualgrad has no Keras (no layers, models or fit()); `tf.keras.layers` and the rest are an
AttributeError, and docs/tf1-compat.md says so. `load_data(path="mnist.npz")` reads Keras's
cached file, `$KERAS_HOME/datasets/mnist.npz` (default `~/.keras/datasets/`; an absolute
`path` is used as it is), with NumPy (no pickle), and never downloads: when the file is
missing it raises FileNotFoundError naming where to put it and where Keras fetches it from.
"""
from __future__ import annotations

import os
import types

import numpy as np

__all__ = ["datasets"]

MNIST_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"


def _cache_dir():
    return os.path.join(os.environ.get("KERAS_HOME", os.path.expanduser("~/.keras")),
                        "datasets")


def _mnist_load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)) as uint8 arrays (60000/10000 images of 28x28)."""
    full = os.path.join(_cache_dir(), path)
    if not os.path.exists(full):
        raise FileNotFoundError(
            f"keras.datasets.mnist.load_data: {full} is missing. dualgrad never downloads: "
            f"put Keras's mnist.npz there (Keras fetches it from {MNIST_ORIGIN}), or pass "
            f"path= an absolute path to it")
    with np.load(full, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


mnist = types.ModuleType("dualgrad.graph.keras.datasets.mnist", "tf.keras.datasets.mnist")
mnist.load_data = _mnist_load_data
datasets = types.ModuleType("dualgrad.graph.keras.datasets", "tf.keras.datasets: mnist")
datasets.mnist = mnist
