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

from .checks import assert_greater_equal, assert_less_equal
from .core import GraphKeys, add_to_collection, control_dependencies, convert_to_tensor
from .control_flow import identity
from .dtypes import bool_, float32
from .math_ops import (cast, equal, greater, log, logical_and, logical_not, maximum, minimum,
                       ones_like, reduce_sum, reshape, squeeze, where, where_v2)
from .array_ops import size
from .variable_scope import variable_scope
from .variables import Variable, assign_add

__all__ = ["accuracy", "mean", "true_positives", "false_positives", "true_negatives",
           "false_negatives", "precision", "recall", "auc"]


def _metric_variable(name, shape=()):
    return Variable(np.zeros(shape, np.float32), trainable=False, name=name,
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


def _collected(value, update_op, metrics_collections, updates_collections):
    """(value, update_op), each added to the collections the caller named."""
    _collect(value, metrics_collections)
    _collect(update_op, updates_collections)
    return value, update_op


def _named(metric, what, doc):
    metric.__name__ = metric.__qualname__ = what
    metric.__doc__ = doc
    return metric


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of `values` over every update run: (mean, update_op)."""
    with variable_scope(name, "mean", [values, weights]):
        value, update_op = _mean(values, weights)
    return _collected(value, update_op, metrics_collections, updates_collections)


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
    return _collected(value, update_op, metrics_collections, updates_collections)


# -- counts of a confusion matrix, precision, recall, AUC --------------------------------------
def _as_bool(labels, predictions, weights):
    """labels and predictions cast to bool, the extra unit dim squeezed (TF1's order)."""
    predictions = cast(convert_to_tensor(predictions), bool_)
    labels = cast(convert_to_tensor(labels), bool_)
    predictions, labels = _squeezable(predictions, labels)
    return labels, predictions, weights


def _count(condition, weights):
    """A float32 local variable `count` adding up the (weighted) true entries of condition:
    (count, update_op)."""
    count = _metric_variable("count")
    values = cast(condition, float32)
    if weights is not None:
        values = values * cast(convert_to_tensor(weights), float32)
    return identity(count), assign_add(count, reduce_sum(values))


def _counter(what, label_is, prediction_is):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, what, [predictions, labels, weights]):
            labels, predictions, weights = _as_bool(labels, predictions, weights)
            hit = logical_and(label_is(labels), prediction_is(predictions))
            value, update_op = _count(hit, weights)
        return _collected(value, update_op, metrics_collections, updates_collections)
    return _named(metric, what, f"TF1's tf.metrics.{what}: the weighted count of entries whose "
                  f"label is {label_is.__name__} and prediction {prediction_is.__name__} (both "
                  f"cast to bool), summed over every update run: (count, update_op).")


def _is_true(x):
    return x


def _is_false(x):
    return logical_not(x)


_is_true.__name__, _is_false.__name__ = "true", "false"
true_positives = _counter("true_positives", _is_true, _is_true)
false_positives = _counter("false_positives", _is_false, _is_true)
true_negatives = _counter("true_negatives", _is_false, _is_false)
false_negatives = _counter("false_negatives", _is_true, _is_false)


def _ratio(what, other):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, what, [predictions, labels, weights]):
            labels, predictions, weights = _as_bool(labels, predictions, weights)
            tp, tp_op = true_positives(labels, predictions, weights)
            miss, miss_op = other(labels, predictions, weights)
            value = _part(tp, miss, "value")
            update_op = _part(tp_op, miss_op, "update_op")
        return _collected(value, update_op, metrics_collections, updates_collections)
    return _named(metric, what, f"TF1's tf.metrics.{what}: true positives / (true positives + "
                  f"{other.__name__.replace('_', ' ')}), 0 while both are 0, over every update "
                  f"run: ({what}, update_op).")


def _part(tp, other, name):
    ok = greater(tp + other, 0.0)
    return where_v2(ok, tp / where_v2(ok, tp + other, 1.0), 0.0, name=name)


precision = _ratio("precision", false_positives)
recall = _ratio("recall", false_negatives)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """TF1's tf.metrics.auc: the area under the ROC or precision-recall curve, from the
    confusion counts at `num_thresholds` thresholds spread over [0, 1] (or the given
    `thresholds`), accumulated over every update run: (auc, update_op). predictions must lie
    in [0, 1] (an assertion checks it when the update runs)."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    with variable_scope(name, "auc", [labels, predictions, weights]):
        cuts = _thresholds(num_thresholds, thresholds)
        counts = _confusion_at(labels, predictions, weights, cuts)
        method = ("interpolate" if curve == "PR" and summation_method == "careful_interpolation"
                  else "trapezoidal" if summation_method == "careful_interpolation"
                  else summation_method)
        value = _area([c for c, _ in counts], curve, method, len(cuts), "value")
        update_op = _area([u for _, u in counts], curve, method, len(cuts), "update_op")
    return _collected(value, update_op, metrics_collections, updates_collections)


def _thresholds(n, given):
    """TF1's thresholds: n evenly spaced in (0, 1), with the ends just outside [0, 1]."""
    if given is not None:
        return [-1e-7] + [float(t) for t in given] + [1.0 + 1e-7]
    return [-1e-7] + [(i + 1) * 1.0 / (n - 1) for i in range(n - 2)] + [1.0 + 1e-7]


def _confusion_at(labels, predictions, weights, cuts):
    """[(tp, tp_op), (fn, ..), (tn, ..), (fp, ..)] at each threshold: a prediction above the
    threshold is positive."""
    predictions = cast(convert_to_tensor(predictions), float32)
    labels = cast(convert_to_tensor(labels), bool_)
    predictions, labels = _squeezable(predictions, labels)
    checks = [assert_greater_equal(predictions, 0.0,
                                   message="predictions must be in [0, 1]"),
              assert_less_equal(predictions, 1.0, message="predictions must be in [0, 1]")]
    with control_dependencies(checks):
        above = greater(reshape(predictions, [1, -1]),
                        convert_to_tensor(np.array(cuts, np.float32).reshape(-1, 1)))
    positive = reshape(labels, [1, -1])
    w = None if weights is None else reshape(cast(convert_to_tensor(weights), float32)
                                             * ones_like(predictions), [1, -1])
    out = []
    for var, label_is, above_is in (("true_positives", _is_true, _is_true),
                                    ("false_negatives", _is_true, _is_false),
                                    ("true_negatives", _is_false, _is_false),
                                    ("false_positives", _is_false, _is_true)):
        count = _metric_variable(var, (len(cuts),))
        hit = cast(logical_and(label_is(positive), above_is(above)), float32)
        hit = hit if w is None else hit * w
        out.append((identity(count), assign_add(count, reduce_sum(hit, 1))))
    return out


def _area(counts, curve, method, n, name):
    tp, fn, tn, fp = counts
    eps = 1e-6
    if method == "interpolate":
        return _interpolated_pr_area(tp, fn, fp, n, name)
    rec = (tp + eps) / (tp + fn + eps)
    if curve == "ROC":
        x, y = fp / (fp + tn + eps), rec
    else:
        x, y = rec, (tp + eps) / (tp + fp + eps)
    height = {"trapezoidal": lambda a, b: (a + b) / 2.0, "minoring": minimum,
              "majoring": maximum}[method](y[:n - 1], y[1:])
    return reduce_sum((x[:n - 1] - x[1:]) * height, name=name)


def _safe_ratio(num, den):
    ok = greater(den, 0.0)
    return where_v2(ok, num / where_v2(ok, den, 1.0), 0.0)


def _interpolated_pr_area(tp, fn, fp, n, name):
    """The precision-recall area with precision interpolated between thresholds as the
    ratio of counts changes (Davis & Goadrich, 2006), as TF1's careful_interpolation."""
    p = tp + fp
    dtp = tp[:n - 1] - tp[1:]
    slope = _safe_ratio(dtp, maximum(p[:n - 1] - p[1:], 0.0))
    intercept = tp[1:] - slope * p[1:]
    both = logical_and(greater(p[:n - 1], 0.0), greater(p[1:], 0.0))
    p_ratio = where_v2(both, _safe_ratio(p[:n - 1], maximum(p[1:], 0.0)), 1.0)
    step = _safe_ratio(slope * (dtp + intercept * log(p_ratio)), maximum(tp[1:] + fn[1:], 0.0))
    return reduce_sum(step, name=name)
