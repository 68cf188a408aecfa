"""`graph.metrics`: TF1's streaming metrics, `(value, update_op)` over local variables.

Each metric keeps two float32 local variables, `total` and `count` (in LOCAL_VARIABLES and
METRIC_VARIABLES; `local_variables_initializer()` zeroes them). Running `update_op` adds a
batch to both and gives total / count after it; `value` reads total / count (0 while count
is 0) without changing them, so its value accumulates over every update run since the last
initialisation.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> labels = tf.placeholder(tf.int64, [None])
>>> predictions = tf.placeholder(tf.int64, [None])
>>> acc, acc_op = tf.metrics.accuracy(labels, predictions)
>>> with tf.Session() as sess:
...     sess.run(tf.local_variables_initializer())
...     _ = sess.run(acc_op, {labels: [1, 0, 0, 0], predictions: [1, 0, 0, 1]})
...     _ = sess.run(acc_op, {labels: [1, 1, 0, 0], predictions: [0, 0, 0, 0]})
...     float(sess.run(acc))
0.625
"""
from __future__ import annotations

import numpy as np

from .core import GraphKeys, add_to_collection, convert_to_tensor
from .dtypes import float32
from .math_ops import cast, equal, ones_like, reduce_sum, squeeze, where
from .array_ops import size
from .variable_scope import variable_scope
from .variables import Variable, assign_add

__all__ = ["accuracy", "mean"]


def _metric_variable(name):
    return Variable(np.zeros((), np.float32), trainable=False, name=name,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _safe_div(num, den, name):
    """num / den, 0 where den is 0 (TF1's metrics' _safe_div)."""
    ok = den > 0.0
    return where(ok, num / where(ok, den, 1.0), 0.0, name=name)


def _squeezable(a, b):
    """Drop a last dim of size 1 from whichever of a, b has one more dim than the other
    (TF1's remove_squeezable_dimensions), when the ranks are known."""
    ra, rb = a.ndim, b.ndim
    if ra is not None and rb is not None:
        if ra == rb + 1 and a.shape[-1] == 1:
            a = squeeze(a, [-1])
        elif rb == ra + 1 and b.shape[-1] == 1:
            b = squeeze(b, [-1])
    return a, b


def _collect(value, keys):
    for key in keys or ():
        add_to_collection(key, value)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of `values` over every update run: (mean, update_op)."""
    with variable_scope(name, "mean", [values, weights]):
        value, update_op = _mean(values, weights)
    _collect(value, metrics_collections)
    _collect(update_op, updates_collections)
    return value, update_op


def _mean(values, weights):
    values = cast(convert_to_tensor(values), float32)
    total, count = _metric_variable("total"), _metric_variable("count")
    if weights is None:
        num = cast(size(values), float32)
    else:
        weights = cast(convert_to_tensor(weights), float32)
        values, weights = _squeezable(values, weights)
        weights = weights * ones_like(values)   # NOTE: broadcast to values' shape
        values = values * weights
        num = reduce_sum(weights)
    update_total = assign_add(total, reduce_sum(values))
    update_count = assign_add(count, num)
    return _safe_div(total, count, "value"), _safe_div(update_total, update_count, "update_op")


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """How often predictions equal labels, over every update run: (accuracy, update_op).
    predictions are cast to the labels' dtype first, as TF1 does."""
    with variable_scope(name, "accuracy", [labels, predictions, weights]):
        labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
        predictions, labels = _squeezable(predictions, labels)
        if predictions.dtype != labels.dtype:
            predictions = cast(predictions, labels.dtype)
        is_correct = cast(equal(predictions, labels), float32)
        value, update_op = _mean(is_correct, weights)
    _collect(value, metrics_collections)
    _collect(update_op, updates_collections)
    return value, update_op
