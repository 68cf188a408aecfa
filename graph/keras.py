"""tf.keras as TF1 programs reach it for data and initialisers only:
`keras.datasets.mnist.load_data()`, and `keras.initializers.glorot_uniform()` and its kin
passed to `tf.layers` (in tf.compat.v1 they are TF1's initializers, the same objects as
`tf.glorot_uniform_initializer` and the rest).

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

from . import init_ops as _init

__all__ = ["datasets", "initializers"]

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

# NOTE: TF 1.x's tf.keras.initializers: TF1's initializer classes under Keras's names, where
# their defaults are the same (Keras's RandomNormal, RandomUniform and TruncatedNormal draw
# with a scale of 0.05, TF1's with 1: not provided rather than different)
initializers = types.ModuleType("dualgrad.graph.keras.initializers", "tf.keras.initializers")
for _name, _init_cls in {
        "zeros": _init.zeros_initializer, "ones": _init.ones_initializer,
        "constant": _init.constant_initializer, "variance_scaling": _init.variance_scaling_initializer,
        "glorot_uniform": _init.glorot_uniform_initializer,
        "glorot_normal": _init.glorot_normal_initializer, "he_normal": _init.he_normal,
        "he_uniform": _init.he_uniform, "lecun_normal": _init.lecun_normal,
        "lecun_uniform": _init.lecun_uniform}.items():
    setattr(initializers, _name, _init_cls)
for _name, _alias in (("Zeros", "zeros"), ("Ones", "ones"), ("Constant", "constant"),
                      ("VarianceScaling", "variance_scaling"),
                      ("GlorotUniform", "glorot_uniform"), ("GlorotNormal", "glorot_normal")):
    setattr(initializers, _name, getattr(initializers, _alias))
