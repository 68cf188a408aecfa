"""Canned Estimators: `DNNClassifier`, `DNNRegressor`, `LinearClassifier`, `LinearRegressor`,
TF 1.15's networks and heads.

The DNN network (TF's names): `dnn/input_from_feature_columns/input_layer` (feature columns,
`feature_column.input_layer`), then for each of `hidden_units` a dense layer
`dnn/hiddenlayer_<i>` (kernel Glorot-uniform, bias zeros, `activation_fn`, default relu;
with `dropout`, dropped at that rate in training), and `dnn/logits`. The linear model:
`linear/linear_model/<column>/weights` per column and `linear/linear_model/bias_weights`,
zeros. The training loss is the SUM over the batch of the examples' losses (TF 1.15's
canned estimators' default loss_reduction): sigmoid cross-entropy for two classes, softmax
cross-entropy for more, squared error for the regressors. The optimizer is a name
('Adagrad', DNN's default, at learning rate 0.05; 'Ftrl', linear's default, at min(0.2,
1/sqrt(number of columns)); 'Adam', 'RMSProp', 'SGD'), an Optimizer, or a callable
returning one. Not provided: weight_column, label_vocabulary, batch_norm, sparse columns
(so sparse_combiner and partitioner change nothing), and the AUC metrics of the binary head
(its other metrics are).
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad.ops.core import located

from .spec import ModeKeys
from ..checks import assert_less, assert_non_negative
from ..control_flow import identity
from ..core import constant, control_dependencies
from ..feature_column import input_layer
from ..layers import dropout as layers_dropout
from ..losses import Reduction
from ..math_ops import (argmax, cast, concat, equal, expand_dims, gather, maximum, reduce_mean,
                        matmul, reduce_sum, reshape, square, zeros_like)
from ..metrics import accuracy, mean
from ..nn import (dense, relu, sigmoid, sigmoid_cross_entropy_with_logits, softmax,
                  sparse_softmax_cross_entropy_with_logits)
from ..init_ops import zeros_initializer
from ..train import (AdagradOptimizer, AdamOptimizer, FtrlOptimizer, GradientDescentOptimizer,
                     Optimizer, RMSPropOptimizer, get_global_step)
from ..variable_scope import get_variable, variable_scope
from .estimator import Estimator
from .spec import EstimatorSpec

__all__ = ["DNNClassifier", "DNNRegressor", "LinearClassifier", "LinearRegressor"]

_DNN_LEARNING_RATE, _LINEAR_LEARNING_RATE = 0.05, 0.2
_OPTIMIZERS = {"Adagrad": AdagradOptimizer, "Adam": AdamOptimizer, "Ftrl": FtrlOptimizer,
               "RMSProp": RMSPropOptimizer, "SGD": GradientDescentOptimizer}


def _optimizer(opt, learning_rate):
    if isinstance(opt, str):
        if opt not in _OPTIMIZERS:
            raise located(f"Unsupported optimizer name: {opt}. Supported names are: "
                          f"{sorted(_OPTIMIZERS)}", ValueError)
        return _OPTIMIZERS[opt](learning_rate)
    if callable(opt) and not isinstance(opt, Optimizer):
        opt = opt()
    if not isinstance(opt, Optimizer):
        raise located(f"The given object is not an Optimizer instance. Given: {opt}", ValueError)
    return opt


def _dnn_logits(features, columns, hidden_units, units, activation_fn, rate, mode):
    with variable_scope("dnn"):
        with variable_scope("input_from_feature_columns"):
            net = input_layer(features, columns)
        for i, n in enumerate(hidden_units):
            net = dense(net, n, activation=activation_fn, name=f"hiddenlayer_{i}")
            if rate is not None and mode == ModeKeys.TRAIN:
                net = layers_dropout(net, rate=rate, training=True)
        return dense(net, units, name="logits")


def _labels_2d(labels, what):
    """Labels as (batch, 1), from (batch,) or (batch, 1)."""
    if labels is None:
        raise located(f"{what}: labels must not be None in training and evaluation", ValueError)
    if labels.ndim == 1:
        return expand_dims(labels, -1)
    if labels.ndim != 2 or labels.shape[1] not in (1, None):
        raise located(f"{what}: labels shape must be [D0, 1] or [D0], given: "
                      f"{labels.shape}", ValueError)
    return labels


class _Head:
    """What a head adds to the network's logits: loss, predictions, metrics."""

    def spec(self, mode, logits, labels, optimizer):
        predictions = self.predictions(logits)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions)
        per_example = self.losses(logits, labels)
        loss = reduce_sum(per_example) if self.reduction == Reduction.SUM \
            else reduce_mean(per_example)
        if mode == ModeKeys.EVAL:
            metrics = self.metrics(labels, predictions)
            metrics["average_loss"] = mean(per_example)
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=metrics)
        train_op = optimizer.minimize(loss, global_step=get_global_step())
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


class _ClassifierHead(_Head):
    def __init__(self, n_classes, reduction):
        if n_classes < 2:
            raise located(f"n_classes must be > 1: {n_classes}", ValueError)
        self.n, self.reduction = n_classes, reduction
        self.units = 1 if n_classes == 2 else n_classes

    def predictions(self, logits):
        out = {"logits": logits}
        if self.n == 2:
            out["logistic"] = sigmoid(logits)
            out["probabilities"] = concat([1.0 - out["logistic"], out["logistic"]], 1)
        else:
            out["probabilities"] = softmax(logits)
        out["class_ids"] = expand_dims(argmax(out["probabilities"], 1), -1)
        names = constant(np.array([str(i).encode() for i in range(self.n)], dtype=object))
        out["classes"] = gather(names, out["class_ids"])
        ids = constant(np.arange(self.n, dtype=np.int32)[None, :])
        out["all_class_ids"] = zeros_like(cast(out["class_ids"], np.int32)) + ids   # (batch, n)
        out["all_classes"] = gather(names, out["all_class_ids"])
        return out

    def losses(self, logits, labels):
        labels = self._checked(labels)
        if self.n == 2:
            return sigmoid_cross_entropy_with_logits(labels=cast(labels, logits.dtype),
                                                     logits=logits)
        per = sparse_softmax_cross_entropy_with_logits(labels=reshape(labels, [-1]),
                                                       logits=logits)
        return expand_dims(per, -1)

    def _checked(self, labels):
        """(batch, 1) integer labels that raise InvalidArgumentError, at run time, outside
        [0, n_classes), as TF's head does."""
        labels = _labels_2d(labels, "DNNClassifier")
        if labels.dtype.kind not in "iu":
            raise located(f"Labels dtype should be integer. Instead got {labels.dtype.name}.",
                          ValueError)
        checks = [assert_less(labels, np.asarray(self.n, labels.dtype),
                              message="Labels must <= n_classes - 1"),
                  assert_non_negative(labels, message="Labels must >= 0")]
        with control_dependencies(checks):
            return identity(labels)

    def metrics(self, labels, predictions):
        labels = self._checked(labels)
        ids = predictions["class_ids"]
        out = {"accuracy": accuracy(labels, ids, name="accuracy")}
        if self.n == 2:
            positive = cast(labels, np.float32)
            out["label/mean"] = mean(positive, name="label/mean")
            out["prediction/mean"] = mean(predictions["logistic"], name="prediction/mean")
            label_mean, update = out["label/mean"]
            out["accuracy_baseline"] = (maximum(label_mean, 1.0 - label_mean),
                                        maximum(update, 1.0 - update))
            said = cast(equal(ids, 1), np.float32)
            out["precision"] = mean(positive, weights=said, name="precision")
            out["recall"] = mean(said, weights=positive, name="recall")
        return out


class _RegressionHead(_Head):
    def __init__(self, label_dimension, reduction):
        if label_dimension < 1:
            raise located(f"Invalid label_dimension {label_dimension}.", ValueError)
        self.units, self.reduction = label_dimension, reduction

    def predictions(self, logits):
        return {"predictions": logits}

    def losses(self, logits, labels):
        labels = cast(labels, logits.dtype) if labels.dtype != logits.dtype else labels
        if labels.ndim == 1:
            labels = expand_dims(labels, -1)
        return square(logits - labels)

    def metrics(self, labels, predictions):
        return {"prediction/mean": mean(predictions["predictions"], name="prediction/mean"),
                "label/mean": mean(cast(labels, np.float32), name="label/mean")}


def _linear_logits(features, columns, units):
    """TF's linear_model: per column (by name) `linear/linear_model/<name>/weights` (zeros),
    the products summed, plus `linear/linear_model/bias_weights` (zeros)."""
    with variable_scope("linear"), variable_scope("linear_model"):
        total = None
        for c in sorted(columns, key=lambda c: c.name):
            with variable_scope(c.name):
                x = c.dense(features)
                w = get_variable("weights", [x.shape[1], units], initializer=zeros_initializer())
                part = matmul(x, w)
            total = part if total is None else total + part
        bias = get_variable("bias_weights", [units], initializer=zeros_initializer())
        return total + bias


def _model_fn(head, logits_fn, optimizer, learning_rate):
    def model_fn(features, labels, mode, config):
        logits = logits_fn(features, mode)
        opt = _optimizer(optimizer, learning_rate) if mode == ModeKeys.TRAIN else None
        return head.spec(mode, logits, labels, opt)
    return model_fn


def _dnn_model_fn(head, hidden_units, feature_columns, activation_fn, dropout, optimizer):
    return _model_fn(head, lambda features, mode: _dnn_logits(
        features, feature_columns, hidden_units, head.units, activation_fn, dropout, mode),
        optimizer, _DNN_LEARNING_RATE)


def _linear_model_fn(head, feature_columns, optimizer):
    rate = min(_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(len(feature_columns)))
    return _model_fn(head, lambda features, mode: _linear_logits(features, feature_columns,
                                                                 head.units),
                     optimizer, rate)


def _check(hidden_units, feature_columns, weight_column, label_vocabulary, batch_norm,
           loss_reduction):
    if not feature_columns:
        raise located("feature_columns must be defined.", ValueError)
    if weight_column is not None:
        raise located("canned estimators: weight_column is not supported", NotImplementedError)
    if label_vocabulary is not None:
        raise located("canned estimators: label_vocabulary is not supported; give "
                      "integer class ids as labels", NotImplementedError)
    if batch_norm:
        raise located("DNN estimators: batch_norm=True is not supported", NotImplementedError)
    if loss_reduction not in (Reduction.SUM, Reduction.SUM_OVER_BATCH_SIZE, Reduction.MEAN):
        raise located(f"Invalid loss_reduction: {loss_reduction}", ValueError)
    return list(hidden_units), list(feature_columns)


class DNNClassifier(Estimator):
    """`DNNClassifier(hidden_units, feature_columns, model_dir=None, n_classes=2, ...)`:
    predictions `logits`, `probabilities`, `class_ids`, `classes` (bytes), `all_class_ids`,
    `all_classes` (and `logistic` for two classes); evaluate gives `accuracy`,
    `average_loss`, `loss`, `global_step` (and for two classes `accuracy_baseline`,
    `label/mean`, `prediction/mean`, `precision`, `recall`). Labels are integer class ids
    of shape (batch,) or (batch, 1)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=relu, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, batch_norm=False):
        hidden_units, feature_columns = _check(hidden_units, feature_columns,
                                                   weight_column, label_vocabulary,
                                                   batch_norm, loss_reduction)
        head = _ClassifierHead(int(n_classes), loss_reduction)
        super().__init__(_dnn_model_fn(head, hidden_units, feature_columns, activation_fn,
                                       dropout, optimizer),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """`DNNRegressor(hidden_units, feature_columns, model_dir=None, label_dimension=1, ...)`:
    predictions `predictions` (batch, label_dimension); evaluate gives `average_loss` (mean
    squared error), `loss`, `label/mean`, `prediction/mean`, `global_step`."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=relu, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM, batch_norm=False):
        hidden_units, feature_columns = _check(hidden_units, feature_columns,
                                                   weight_column, None, batch_norm,
                                                   loss_reduction)
        head = _RegressionHead(int(label_dimension), loss_reduction)
        super().__init__(_dnn_model_fn(head, hidden_units, feature_columns, activation_fn,
                                       dropout, optimizer),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)



class LinearClassifier(Estimator):
    """`LinearClassifier(feature_columns, model_dir=None, n_classes=2, optimizer='Ftrl', ...)`:
    logits from TF's linear_model (see `_linear_logits`), the classifier head of
    DNNClassifier (the same predictions and metrics); 'Ftrl' learns at min(0.2,
    1/sqrt(number of columns)), TF's default."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=Reduction.SUM, sparse_combiner="sum"):
        _, feature_columns = _check((), feature_columns, weight_column, label_vocabulary, False,
                                    loss_reduction)
        head = _ClassifierHead(int(n_classes), loss_reduction)
        super().__init__(_linear_model_fn(head, feature_columns, optimizer),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """`LinearRegressor(feature_columns, model_dir=None, label_dimension=1, optimizer='Ftrl',
    ...)`: TF's linear_model with DNNRegressor's head."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=Reduction.SUM, sparse_combiner="sum"):
        _, feature_columns = _check((), feature_columns, weight_column, None, False,
                                    loss_reduction)
        head = _RegressionHead(int(label_dimension), loss_reduction)
        super().__init__(_linear_model_fn(head, feature_columns, optimizer),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)
