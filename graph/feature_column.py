"""`tf.feature_column`: numeric columns and `input_layer`, the features a canned Estimator reads.

A column names a feature of the `features` dict an input_fn returns and says how it becomes
part of the network's input. `input_layer(features, columns)` takes the columns in the order
of their names (as TF sorts them, whatever order they are given in), turns each feature into
float32 of shape (batch, prod(shape)) and concatenates them along axis 1. Only numeric columns
are provided: categorical, bucketized, embedding and crossed columns are not.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> cols = [tf.feature_column.numeric_column("b", shape=(2,)),
...         tf.feature_column.numeric_column("a", normalizer_fn=lambda x: x * 10)]
>>> net = tf.feature_column.input_layer(
...     {"a": np.array([1, 2]), "b": np.array([[0.5, 0.25], [1.0, 2.0]])}, cols)
>>> with tf.Session() as sess:
...     sess.run(net).tolist()
[[10.0, 0.5, 0.25], [20.0, 1.0, 2.0]]
"""
from __future__ import annotations

import collections

import numpy as np

from dualgrad.ops.core import located
from .core import convert_to_tensor, get_default_graph
from .dtypes import as_dtype, float32
from .math_ops import cast, concat, expand_dims, reshape

__all__ = ["numeric_column", "input_layer", "NumericColumn"]


class NumericColumn(collections.namedtuple(
        "NumericColumn", "key shape default_value dtype normalizer_fn")):
    """A dense feature of fixed shape (the result of `numeric_column`)."""

    @property
    def name(self):
        return self.key

    def dense(self, features):
        """The feature as float32 of shape (batch, prod(shape))."""
        if self.key not in features:
            raise located(f"Feature {self.key} is not in features dictionary.", ValueError)
        x = convert_to_tensor(features[self.key])
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        x = cast(x, float32) if x.dtype != float32 else x
        if x.ndim == 1:   # NOTE: a batch of scalars is a batch of one-element features
            x = expand_dims(x, -1)
        width = int(np.prod(self.shape, dtype=np.int64))
        return reshape(x, (-1, width))


def numeric_column(key, shape=(1,), default_value=None, dtype=float32, normalizer_fn=None):
    """A column reading `features[key]`, of `shape` per example (an int or a tuple), cast to
    float32 after `normalizer_fn` (if given) is applied. default_value (a number, or values
    of `shape`) is kept for parsers of tf.Example; input_layer never needs it."""
    if not isinstance(key, str):
        raise located(f"key must be a string. Given: key: {key}", ValueError)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not shape or any(not isinstance(d, (int, np.integer)) or d < 1 for d in shape):
        raise located(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}",
                      ValueError)
    dtype = as_dtype(dtype)
    if dtype.kind not in "fiu":
        raise located(f"dtype must be convertible to float. dtype: {dtype}, key: {key}",
                      ValueError)
    if default_value is not None:
        default_value = np.broadcast_to(np.asarray(default_value, dtype),
                                        shape)
        default_value = tuple(default_value.ravel().tolist())
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise located(f"normalizer_fn must be a callable. Given: {normalizer_fn}", TypeError)
    return NumericColumn(key, tuple(int(d) for d in shape), default_value, dtype, normalizer_fn)


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """The columns' features side by side: float32 (batch, sum of their widths), the columns
    in the order of their names. Raises ValueError for no columns, for a column that is not
    a numeric column, and for a feature the dict lacks."""
    if isinstance(feature_columns, NumericColumn):
        feature_columns = [feature_columns]
    feature_columns = list(feature_columns)
    if not feature_columns:
        raise located("feature_columns must not be empty.", ValueError)
    for c in feature_columns:
        if not isinstance(c, NumericColumn):
            raise located(f"Items of feature_columns must be a _DenseColumn. You can wrap "
                          f"a categorical column with an embedding_column or "
                          f"indicator_column (dualgrad provides numeric_column only). "
                          f"Given: {c}", ValueError)
    if not isinstance(features, dict):
        raise located(f"input_layer: features must be a dict of tensors keyed by feature "
                      f"name, got {type(features).__name__}", ValueError)
    with get_default_graph().name_scope("input_layer"):
        parts = []
        for c in sorted(feature_columns, key=lambda c: c.name):
            parts.append(c.dense(features))
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[c] = parts[-1]
            if cols_to_vars is not None:
                cols_to_vars[c] = []
        return concat(parts, 1)
