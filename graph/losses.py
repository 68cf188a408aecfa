"""`graph.losses`, as tf.compat.v1.losses: each loss is computed per element, weighted by
`weights` (a scalar, or a tensor of the losses' rank whose dims are 1 or the losses'),
reduced by `reduction` (TF1's default `Reduction.SUM_BY_NONZERO_WEIGHTS`: the weighted sum
over the number of nonzero weights, 0 when there is none) and added to the collection
`loss_collection` (`GraphKeys.LOSSES`), where `get_total_loss()` finds it.

As TF1, labels and predictions of incompatible static shapes ((N,) against (N, 1), which
would broadcast to (N, N)) raise a ValueError when the loss is built, and losses are
computed in float32 and returned in the input's dtype.

>>> from dualgrad import graph
>>> y = graph.placeholder(graph.float32, (None,))
>>> p = graph.placeholder(graph.float32, (None, 1))
>>> try:
...     graph.losses.mean_squared_error(y, p)
... except ValueError as e:
...     print(str(e).split(":")[0])
mean_squared_error
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import fmt_shape, located

from .core import (GraphKeys, Tensor, _graph_of, add_to_collection, check_tf1_types,
                   convert_to_tensor, get_collection)
from .math_ops import add_n

__all__ = ["Reduction", "compute_weighted_loss", "absolute_difference", "mean_squared_error",
           "huber_loss", "log_loss", "hinge_loss", "cosine_distance", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy", "add_loss", "get_losses",
           "get_regularization_losses", "get_regularization_loss", "get_total_loss"]


class Reduction:
    """How a weighted loss is reduced (tf.compat.v1.losses.Reduction)."""
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# -- weighting and reduction -------------------------------------------------------------------
def _shape_of(x):
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _check_weights(weights, losses, what):
    """TF's assert_broadcastable, where the dims are known: a scalar, or the losses' rank
    with each dim 1 or the losses'."""
    ws, ls = _shape_of(weights), losses.shape
    if isinstance(weights, Tensor) and weights.ndim is None or losses.ndim is None or not ws:
        return
    if len(ws) != len(ls) or any(w not in (1, d) and None not in (w, d) for w, d in zip(ws, ls)):
        raise located(f"{what}: weights {fmt_shape(ws)} must be a scalar or have the rank of "
                      f"the losses {fmt_shape(ls)} with each dim 1 or equal to theirs")


def _safe_div(total, count):
    """total / count, 0 where count is 0 (TF's div_no_nan)."""
    some = ops.gt(count, 0.0)
    return ops.where(some, total / ops.where(some, count, 1.0), 0.0)


def _num_present(losses, weights, number):
    if number and weights != 0.0:
        return ops.count(losses)   # NOTE: TF's shortcut for a nonzero Python number
    present = ops.where(ops.eq(weights, 0.0), ops.zeros_like(weights), ops.ones_like(weights))
    return ops.sum(ops.broadcast_like(present, losses * present))


def _weighted(losses, weights, reduction, what):
    Reduction.validate(reduction)
    losses = convert_to_tensor(losses)
    _check_weights(weights, losses, what)
    in_dtype = losses.dtype
    number = isinstance(weights, (int, float)) and not isinstance(weights, bool)
    losses = ops.cast(losses, np.float32) if in_dtype != np.float32 else losses
    if isinstance(weights, Tensor) and weights.dtype != np.float32:
        weights = ops.cast(weights, np.float32)
    elif not isinstance(weights, Tensor):
        weights = np.asarray(weights, np.float32)
    weighted = losses if weights.ndim == 0 and not isinstance(weights, Tensor) and \
        weights == 1.0 else losses * weights
    if reduction == Reduction.NONE:
        loss = weighted
    else:
        loss = ops.sum(weighted)
        if reduction == Reduction.MEAN:
            loss = _safe_div(loss, ops.sum(ops.broadcast_like(weights, weighted)))
        elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
            loss = _safe_div(loss, _num_present(losses, weights, number))
        elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
            loss = _safe_div(loss, ops.count(losses))
    return ops.cast(loss, in_dtype) if in_dtype != np.float32 else loss


def _loss(what, scope, values, loss_collection, body):
    """Build `body()` under the name scope `scope` (default `what`) and add the result to
    `loss_collection`."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    g = _graph_of(tensors)
    with g.as_default(), g.name_scope(scope or what):
        loss = body()
    if loss_collection is not None:
        g.add_to_collection(loss_collection, loss)
    return loss


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`losses` weighted and reduced as every loss here is (see the module docstring)."""
    return _loss("weighted_loss", scope, [losses, weights], loss_collection,
                 lambda: _weighted(losses, weights, reduction, "compute_weighted_loss"))


def _pair(what, labels, predictions, dtype=np.float32):
    """labels and predictions cast to `dtype`, their static shapes checked as TF1 does."""
    if labels is None or predictions is None:
        raise ValueError(f"{what}: labels and predictions must not be None")
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    a, b = predictions.shape, labels.shape
    if predictions.ndim is not None and labels.ndim is not None and (
            len(a) != len(b) or any(None not in (x, y) and x != y for x, y in zip(a, b))):
        raise located(f"{what}: predictions {fmt_shape(a)} and labels {fmt_shape(b)} have "
                      f"incompatible shapes (they would broadcast, as TF1 refuses); reshape "
                      f"one of them")
    cast = (lambda t: t if t.dtype == dtype else ops.cast(t, dtype))
    return cast(labels), cast(predictions)


def _elementwise_loss(what, per_element):
    def loss(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, **kw):
        def body():
            y, p = _pair(what, labels, predictions)
            return _weighted(per_element(y, p, **kw), weights, reduction, what)
        return _loss(what, scope, [labels, predictions, weights], loss_collection, body)
    loss.__name__ = loss.__qualname__ = what
    return loss


absolute_difference = _elementwise_loss("absolute_difference",
                                        lambda y, p: ops.abs(p - y))
absolute_difference.__doc__ = "|predictions - labels|, weighted and reduced."
mean_squared_error = _elementwise_loss("mean_squared_error",
                                       lambda y, p: ops.square(p - y))
mean_squared_error.__doc__ = "(predictions - labels) ** 2, weighted and reduced."


def _huber(y, p, delta=1.0):
    err = ops.abs(p - y)
    quadratic = ops.minimum(err, float(delta))
    return quadratic * quadratic * 0.5 + (err - quadratic) * float(delta)


def _log_loss(y, p, epsilon=1e-7):
    return -(y * ops.log(p + epsilon)) - (1.0 - y) * ops.log(1.0 - p + epsilon)


_huber_loss = _elementwise_loss("huber_loss", _huber)
_log_loss_fn = _elementwise_loss("log_loss", _log_loss)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 e**2 where |e| <= delta, else 0.5 delta**2 + delta (|e| - delta); weighted, reduced."""
    return _huber_loss(labels, predictions, weights, scope, loss_collection, reduction,
                       delta=delta)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels log(predictions + eps) - (1 - labels) log(1 - predictions + eps)."""
    return _log_loss_fn(labels, predictions, weights, scope, loss_collection, reduction,
                        epsilon=epsilon)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """relu(1 - (2 labels - 1) logits), labels in {0, 1}."""
    def body():
        y, x = _pair("hinge_loss", labels, logits)
        return _weighted(ops.relu(1.0 - (y * 2.0 - 1.0) * x), weights, reduction, "hinge_loss")
    return _loss("hinge_loss", scope, [labels, logits, weights], loss_collection, body)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """1 - sum(labels * predictions, axis) (both already unit-normalised), keeping the axis."""
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("cosine_distance: you must specify 'axis'")

    def body():
        y, p = _pair("cosine_distance", labels, predictions)
        per = 1.0 - ops.sum(y * p, axis=int(axis), keepdims=True)
        return _weighted(per, weights, reduction, "cosine_distance")
    return _loss("cosine_distance_loss", scope, [labels, predictions, weights],
                 loss_collection, body)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross-entropy per element; label_smoothing moves labels towards 1/2."""
    def body():
        y, x = _pair("sigmoid_cross_entropy", multi_class_labels, logits,
                     convert_to_tensor(logits).dtype)
        if label_smoothing > 0:
            y = y * (1.0 - label_smoothing) + 0.5 * label_smoothing
        per = ops.binary_cross_entropy_with_logits(x, y, reduction="none")
        return _weighted(per, weights, reduction, "sigmoid_cross_entropy")
    return _loss("sigmoid_cross_entropy_loss", scope, [multi_class_labels, logits, weights],
                 loss_collection, body)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy per example from one-hot (or probability) labels; with
    label_smoothing, labels * (1 - s) + s / num_classes (no gradient into the labels)."""
    def body():
        y, x = _pair("softmax_cross_entropy", onehot_labels, logits,
                     convert_to_tensor(logits).dtype)
        if label_smoothing > 0:
            n = y.shape[-1]
            if n is None:
                raise located("softmax_cross_entropy: label_smoothing needs the number of "
                              "classes (the labels' last dim) to be known")
            y = y * (1.0 - label_smoothing) + label_smoothing / n
        per = ops.cross_entropy(x, ops.stop_gradient(y), reduction="none")
        return _weighted(per, weights, reduction, "softmax_cross_entropy")
    return _loss("softmax_cross_entropy_loss", scope, [onehot_labels, logits, weights],
                 loss_collection, body)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy per example from integer class labels (a trailing size-1 dim of
    the labels is squeezed, as TF1)."""
    def body():
        y, x = convert_to_tensor(labels), convert_to_tensor(logits)
        check_tf1_types("softmax", x)
        if y.ndim is not None and x.ndim is not None and y.ndim == x.ndim and y.shape[-1] == 1:
            y = ops.squeeze(y, axis=-1)
        per = ops.cross_entropy(x, y, reduction="none")
        return _weighted(per, weights, reduction, "sparse_softmax_cross_entropy")
    return _loss("sparse_softmax_cross_entropy_loss", scope, [labels, logits, weights],
                 loss_collection, body)


# -- the collections ---------------------------------------------------------------------------
def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Add a loss you built yourself to `loss_collection`, for get_total_loss."""
    if loss_collection is not None:
        add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses, or a constant 0.0 when there is none."""
    losses = get_regularization_losses(scope)
    if losses:
        return add_n(losses, name=name)
    return convert_to_tensor(np.float32(0.0), name=name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """add_n of the losses in GraphKeys.LOSSES (and the regularization losses); raises
    ValueError when there is none, as TF1."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("get_total_loss: no losses found: build a tf.losses loss, or add "
                         "your own with tf.losses.add_loss(loss)")
    return add_n(losses, name=name)
