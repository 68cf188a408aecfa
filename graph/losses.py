"""`graph.losses`, as tf.compat.v1.losses: scalar losses built from the op library.

`mean_squared_error` goes through `ops.mse_loss`, so a labels/predictions shape mismatch
that would broadcast silently ((N,) against (N, 1) -> (N, N)) is warned about when the node
is built, before any data exists.

>>> import warnings
>>> from dualgrad import graph
>>> y = graph.placeholder(graph.float32, (None,))
>>> p = graph.placeholder(graph.float32, (None, 1))
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     loss = graph.losses.mean_squared_error(y, p)
>>> "likely a bug" in str(w[0].message)
True
"""
from __future__ import annotations

from dualgrad import ops

from .math_ops import named


@named
def mean_squared_error(labels, predictions, weights=1.0):
    """mean((labels - predictions)**2), times `weights` (a scalar)."""
    loss = ops.mse_loss(predictions, labels)
    return loss if weights == 1.0 else loss * weights


@named
def softmax_cross_entropy(onehot_labels, logits):
    """Mean softmax cross-entropy from one-hot (or probability) labels."""
    return ops.cross_entropy(logits, onehot_labels)


@named
def sparse_softmax_cross_entropy(labels, logits):
    """Mean softmax cross-entropy from integer class labels."""
    return ops.cross_entropy(logits, labels)


@named
def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0):
    """Mean sigmoid cross-entropy from logits and labels in [0, 1] of the same shape."""
    loss = ops.binary_cross_entropy_with_logits(logits, multi_class_labels)
    return loss if weights == 1.0 else loss * weights
