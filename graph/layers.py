"""`graph.layers`: TF1's `tf.layers` helpers that create their own Variables.

Images are NHWC (`data_format='channels_last'`) with kernels (kh, kw, in_channels,
filters), as in TF; `data_format='channels_first'` takes NCHW.

>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 8, 8, 1))
>>> h = graph.layers.conv2d(x, 4, 3, padding="same", activation=graph.nn.relu)
>>> graph.layers.flatten(graph.layers.max_pooling2d(h, 2, 2)).shape
TensorShape([None, 64])
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import fmt_shape, located
from dualgrad.ops.rules import norm_axis

from .control_flow import cond
from dualgrad.ops.updates import running_average

from .core import GraphKeys, Tensor, _graph_of, convert_to_tensor, scoped_call
from .init_ops import glorot_uniform_initializer, ones_initializer, zeros_initializer
from .math_ops import matmul
from .nn import (_no_constraints, avg_pool2d, dropout as nn_dropout, bias_add,
                 conv2d as _conv2d, conv2d_transpose as _conv2d_transpose, dense, max_pool2d)
from .variables import assign
from .variable_scope import layer_scope, layer_variable, regularize_output

__all__ = ["Dense", "dense", "dropout", "flatten", "conv2d", "conv2d_transpose", "max_pooling2d",
           "average_pooling2d", "batch_normalization"]


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout: drop with probability `rate` only when `training` (a Python bool
    or a scalar bool tensor) is true. An array comes back as a tensor, as in TF."""
    inputs = convert_to_tensor(inputs)

    def drop():
        return nn_dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
    if isinstance(training, Tensor):
        return cond(training, drop, lambda: inputs, name=name or "dropout")
    return drop() if training else inputs


def flatten(inputs, name=None):
    inputs = convert_to_tensor(inputs)
    rest = inputs.shape[1:]
    if None in rest:
        raise located(f"flatten: all dims but the first must be known, got "
                         f"{fmt_shape(inputs.shape)}")
    g = _graph_of([inputs])   # NOTE: TF's Flatten layer: 'flatten/Reshape', 'flatten_1/...'
    return scoped_call(g, name or "flatten", ops.reshape, inputs,
                       (-1, int(np.prod(rest, dtype=np.int64))), leaf="Reshape")


def _channels(data_format, what):
    df = str(data_format).lower()
    if df not in ("channels_last", "channels_first"):
        raise ValueError(f"{what}: data_format must be 'channels_last' (NHWC, the default) or "
                         f"'channels_first' (NCHW), got {data_format!r}")
    return "NHWC" if df == "channels_last" else "NCHW"


def _pair(v):
    return (int(v), int(v)) if np.ndim(v) == 0 else tuple(int(a) for a in v)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.conv2d: variables `name/kernel` (kh, kw, in_channels, filters) and
    `name/bias` in the variable scope `name` (default `conv2d`, `conv2d_1`, …; shared with
    `reuse`, as `dense`); NHWC input unless data_format='channels_first'."""
    df = _channels(data_format, "conv2d")
    c = inputs.shape[-1] if df == "NHWC" else inputs.shape[1]
    if len(inputs.shape) != 4 or c is None:
        raise located(f"conv2d: expects a 4-d input with a known channel dim "
                         f"({'channels_last' if df == 'NHWC' else 'channels_first'}), got "
                         f"{fmt_shape(inputs.shape)}")
    _no_constraints("conv2d", kernel_constraint, bias_constraint)
    shape = _pair(kernel_size) + (c, int(filters))
    g = _graph_of([inputs])
    with g.as_default(), layer_scope("conv2d", name, reuse, inputs):
        kernel = _kernel(shape, inputs.dtype, kernel_initializer, kernel_regularizer, trainable)
        y = _conv2d(inputs, kernel, strides=_pair(strides), padding=padding,
                    data_format=df, dilations=_pair(dilation_rate))
        y = _finish(y, filters, df, use_bias, bias_initializer, bias_regularizer, activation,
                    trainable)
        return regularize_output(y, activity_regularizer)


def _kernel(shape, dt, kernel_initializer, regularizer, trainable):
    """The `kernel` variable; by default Glorot uniform over TF's fans (the receptive field
    times the last two dims)."""
    return layer_variable("kernel", shape, dt, kernel_initializer,
                          glorot_uniform_initializer(), regularizer, trainable)


def _finish(y, filters, df, use_bias, bias_initializer, regularizer, activation, trainable):
    if use_bias:
        bias = layer_variable("bias", (int(filters),), y.dtype, bias_initializer,
                              zeros_initializer(), regularizer, trainable)
        y = bias_add(y, bias, data_format=df)
    return activation(y) if activation is not None else y


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """tf.layers.conv2d_transpose: variables `name/kernel` (kh, kw, filters, in_channels)
    and `name/bias`; the output is in * stride ('same') or in * stride + max(k - stride, 0)
    ('valid') along height and width, as TF."""
    df = _channels(data_format, "conv2d_transpose")
    nhwc = df == "NHWC"
    if len(inputs.shape) != 4:
        raise located(f"conv2d_transpose: expects a 4-d input, got {fmt_shape(inputs.shape)}")
    c = inputs.shape[-1] if nhwc else inputs.shape[1]
    hw = inputs.shape[1:3] if nhwc else inputs.shape[2:4]
    if c is None or None in hw:
        raise located(f"conv2d_transpose: the channel, height and width dims of "
                      f"{fmt_shape(inputs.shape)} must be known")
    _no_constraints("conv2d_transpose", kernel_constraint, bias_constraint)
    k, s = _pair(kernel_size), _pair(strides)
    same = str(padding).lower() == "same"
    out_hw = [n * st if same else n * st + max(kk - st, 0) for n, kk, st in zip(hw, k, s)]
    g = _graph_of([inputs])
    with g.as_default(), layer_scope("conv2d_transpose", name, reuse, inputs):
        kernel = _kernel(k + (int(filters), c), inputs.dtype, kernel_initializer,
                         kernel_regularizer, trainable)
        out = [0, *out_hw, int(filters)] if nhwc else [0, int(filters), *out_hw]
        y = _conv2d_transpose(inputs, kernel, out, [1, *s, 1] if nhwc else [1, 1, *s],
                              "SAME" if same else "VALID", data_format=df)
        y = _finish(y, filters, df, use_bias, bias_initializer, bias_regularizer, activation,
                    trainable)
        return regularize_output(y, activity_regularizer)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    return max_pool2d(inputs, _pair(pool_size), _pair(strides), padding=padding,
                      data_format=_channels(data_format, "max_pooling2d"), name=name)


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    return avg_pool2d(inputs, _pair(pool_size), _pair(strides), padding=padding,
                      data_format=_channels(data_format, "average_pooling2d"), name=name)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """Batch norm over every dim but `axis` (the channels: -1, TF's default, for NHWC; 1
    for NCHW), as tf.layers.batch_normalization, with variables `name/gamma`, `name/beta`
    and the non-trainable `name/moving_mean`, `name/moving_variance` (get_variable in the
    variable scope `name`, default `batch_normalization`, `batch_normalization_1`, …; shared
    with `reuse`). `fused` changes nothing (the same arithmetic); renorm,
    virtual_batch_size, adjustment and constraints raise NotImplementedError.

    `training` (a Python bool or a scalar bool tensor) picks batch statistics or the moving
    ones. When it can be true, the moving-average assigns (moving = momentum * moving +
    (1 - momentum) * batch, with the biased batch variance as TF) go to the collection
    `graph.GraphKeys.UPDATE_OPS`; run them with the train op, as in TF1:

    >>> from dualgrad import graph
    >>> x = graph.placeholder(graph.float32, (None, 3))
    >>> y = graph.layers.batch_normalization(x, training=True)
    >>> len(graph.get_collection(graph.GraphKeys.UPDATE_OPS))
    2
    """
    for what, v in (("renorm", renorm or None), ("renorm_clipping", renorm_clipping),
                    ("virtual_batch_size", virtual_batch_size), ("adjustment", adjustment),
                    ("beta_constraint", beta_constraint), ("gamma_constraint", gamma_constraint)):
        if v is not None:
            raise NotImplementedError(f"batch_normalization: {what}= is not supported")
    nd = len(inputs.shape)
    ax = norm_axis("batch_normalization", axis, nd, inputs.shape, frontend=True)
    c = inputs.shape[ax]
    if c is None:
        raise located(f"batch_normalization: the channel dim {axis} of "
                         f"{fmt_shape(inputs.shape)} must be known to create the variables")
    axes = tuple(i for i in range(nd) if i != ax)
    on_axis = tuple(c if i == ax else 1 for i in range(nd))
    g, dt = _graph_of([inputs]), np.dtype(inputs.dtype)
    with g.as_default(), layer_scope("batch_normalization", name, reuse, inputs):
        gamma = layer_variable("gamma", (c,), dt, gamma_initializer, ones_initializer(),
                               gamma_regularizer, trainable) if scale else None
        beta = layer_variable("beta", (c,), dt, beta_initializer, zeros_initializer(),
                              beta_regularizer, trainable) if center else None
        moving = (layer_variable("moving_mean", (c,), dt, moving_mean_initializer,
                                 zeros_initializer(), trainable=False),
                  layer_variable("moving_variance", (c,), dt, moving_variance_initializer,
                                 ones_initializer(), trainable=False))

        def normalize(mean, var):
            put = [None if t is None else ops.reshape(t, on_axis) for t in (gamma, beta)]
            return ops.batch_norm(inputs, ops.reshape(mean, on_axis),
                                  ops.reshape(var, on_axis), *put, eps=epsilon)

        if not isinstance(training, Tensor):
            if not training:
                return normalize(*moving)
            stats = ops.moments(inputs, axes)
            for v, s in zip(moving, stats):
                g.add_to_collection(GraphKeys.UPDATE_OPS,
                                    assign(v, running_average(v, s, 1.0 - momentum)))
            return normalize(*stats)
        for k, v in enumerate(moving):
            new = cond(training,
                       lambda v=v, k=k: running_average(v, ops.moments(inputs, axes)[k],
                                                        1.0 - momentum),
                       lambda v=v: ops.reshape(v, (c,)))
            g.add_to_collection(GraphKeys.UPDATE_OPS, assign(v, new))
        return cond(training, lambda: normalize(*ops.moments(inputs, axes)),
                    lambda: normalize(*moving))


class Dense:
    """tf.layers.Dense: the object form of `dense`. The first call makes the variables (in
    the scope `name`, default `dense`, `dense_1`, …) as `dense` does; every later call uses
    the same `kernel` and `bias`, wherever it is made."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        self.units, self.activation, self.use_bias, self.name = units, activation, use_bias, name
        self._kw = dict(kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                        kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer,
                        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                        trainable=trainable)
        self.kernel = self.bias = None
        self.built = False

    def __call__(self, inputs):
        if not self.built:
            g = _graph_of([inputs])
            before = {id(v) for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES)}
            y = dense(inputs, self.units, self.activation, self.use_bias, name=self.name,
                      **self._kw)
            new = [v for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES)
                   if id(v) not in before]
            self.kernel = next(v for v in new if v.name.endswith("kernel:0"))
            self.bias = next((v for v in new if v.name.endswith("bias:0")), None)
            self.built = True
            return y
        y = matmul(inputs, self.kernel)
        if self.bias is not None:
            y = bias_add(y, self.bias)
        y = self.activation(y) if self.activation is not None else y
        return regularize_output(y, self._kw["activity_regularizer"])

    apply = __call__

    @property
    def trainable_variables(self):
        return [v for v in (self.kernel, self.bias) if v is not None]

    weights = variables = trainable_weights = trainable_variables
