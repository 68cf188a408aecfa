"""`graph.layers`: TF1's `tf.layers` helpers that create their own Variables.

Convolutions are NCHW with kernels (filters, in_channels, kh, kw), like the op library.

>>> import graph
>>> x = graph.placeholder(graph.float32, (None, 1, 8, 8))
>>> h = graph.layers.conv2d(x, 4, 3, padding="same", activation=graph.nn.relu)
>>> graph.layers.flatten(graph.layers.max_pooling2d(h, 2, 2)).shape
(None, 64)
"""
from __future__ import annotations

import math

import numpy as np

import ops
from ops.core import ShapeError, fmt_shape

from .control_flow import cond
from .core import Tensor, _graph_of
from .math_ops import random_uniform
from .nn import _init, _padding, conv2d as _conv2d, dense, max_pool2d
from .variables import Variable

__all__ = ["dense", "dropout", "flatten", "conv2d", "max_pooling2d"]


def dropout(inputs, rate=0.5, training=False, seed=None, name=None):
    """Dropout only when `training` (a Python bool or a scalar bool tensor) is true."""
    if isinstance(training, Tensor):
        return cond(training, lambda: ops.dropout(inputs, p=rate, training=True),
                    lambda: inputs, name=name or "dropout")
    return ops.dropout(inputs, p=rate, training=bool(training))


def flatten(inputs, name=None):
    rest = inputs.shape[1:]
    if None in rest:
        raise ShapeError(f"flatten: all dims but the first must be known, got "
                         f"{fmt_shape(inputs.shape)}")
    return ops.reshape(inputs, (-1, int(np.prod(rest, dtype=np.int64))))


def conv2d(inputs, filters, kernel_size, strides=1, padding="valid", activation=None,
           use_bias=True, name=None, kernel_initializer=None):
    """NCHW convolution with Variables `name/kernel` (filters, C, k, k) and `name/bias`."""
    c = inputs.shape[1]
    if c is None:
        raise ShapeError(f"conv2d: the channel dim of {fmt_shape(inputs.shape)} must be known")
    k = int(kernel_size) if np.ndim(kernel_size) == 0 else int(kernel_size[0])
    shape, dt = (int(filters), c, k, k), inputs.dtype
    g = _graph_of([inputs])
    with g.as_default(), g.name_scope(name or "conv2d"):
        lim = math.sqrt(6.0 / ((c + filters) * k * k))
        init = kernel_initializer if kernel_initializer is not None else \
            (lambda s, d: random_uniform(s, -lim, lim, dtype=d))
        kernel = Variable(_init(init, shape, dt), name="kernel")
        y = _conv2d(inputs, kernel, strides=strides,
                    padding=_padding(padding, k, int(np.ravel(strides)[0]), "conv2d"))
        if use_bias:
            bias = Variable(np.zeros(filters, dt), name="bias")
            y = y + ops.reshape(bias, (1, int(filters), 1, 1))
        return activation(y) if activation is not None else y


def max_pooling2d(inputs, pool_size, strides, padding="valid", name=None):
    return max_pool2d(inputs, pool_size, strides, padding=padding, name=name)

