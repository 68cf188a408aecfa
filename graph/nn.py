"""`graph.nn`: activations, losses, convolution and a `dense` layer, with TF's names.

Layout: convolution and pooling keep the op library's NCHW layout, with conv filters of
shape (out_channels, in_channels, kh, kw) as in PyTorch, not TF's NHWC / HWIO. Passing
`data_format="NHWC"` is refused with a message rather than silently transposed.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 64), name="x")
>>> h = graph.nn.dense(x, 128, activation=graph.nn.relu, name="hidden")
>>> [v.name for v in graph.trainable_variables()][-2:]
['hidden/kernel:0', 'hidden/bias:0']
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, fmt_shape

from .core import Tensor, _graph_of
from .dtypes import as_dtype
from .math_ops import named, random_uniform, reduce_sum
from .variables import Variable

__all__ = ["relu", "gelu", "softmax", "log_softmax", "sigmoid", "tanh", "silu", "swish",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "conv2d", "max_pool2d", "max_pool", "avg_pool2d", "avg_pool", "moments",
           "batch_normalization",
           "embedding_lookup", "dropout", "layer_norm", "bias_add", "l2_loss", "dense",
           "glorot_uniform_initializer"]

relu, sigmoid, tanh = named(ops.relu), named(ops.sigmoid), named(ops.tanh)
silu = swish = named(ops.silu)


@named
def gelu(features, approximate=False):
    return ops.gelu(features, approximate="tanh" if approximate else "none")


@named
def softmax(logits, axis=-1):
    return ops.softmax(logits, axis=axis)


@named
def log_softmax(logits, axis=-1):
    return ops.log_softmax(logits, axis=axis)


@named
def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1):
    """Per-example loss from class probabilities `labels` (same shape as logits)."""
    _need_both("softmax_cross_entropy_with_logits", labels, logits)
    if axis not in (-1, len(logits.shape) - 1):
        raise NotImplementedError("softmax_cross_entropy_with_logits: only the last axis")
    return _cross_entropy(logits, labels)


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


@named
def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None):
    """Per-example loss from integer class `labels` of shape logits.shape[:-1]."""
    _need_both("sparse_softmax_cross_entropy_with_logits", labels, logits)
    return _cross_entropy(logits, labels)


def _cross_entropy(logits, labels):
    return ops.cross_entropy(logits, labels, reduction="none")


@named
def sigmoid_cross_entropy_with_logits(labels=None, logits=None):
    """Per-element sigmoid cross-entropy (labels and logits of one shape), as TF."""
    _need_both("sigmoid_cross_entropy_with_logits", labels, logits)
    return ops.binary_cross_entropy_with_logits(logits, labels, reduction="none")


def _need_both(what, labels, logits):
    if labels is None or logits is None:
        raise ValueError(f"{what}: pass both labels= and logits= (by keyword, as TF requires)")


def _nchw(data_format, what):
    if data_format not in ("NCHW", None):
        raise ValueError(f"{what}: only data_format='NCHW' is supported (the op library's "
                         f"layout); transpose NHWC input with graph.transpose(x, (0, 3, 1, 2))")


def _stride(strides, what):
    if isinstance(strides, int):
        return strides
    s = [int(v) for v in strides]
    if len(s) == 4:   # TF's [1, sh, sw, 1] / NCHW [1, 1, sh, sw]
        s = s[2:] if s[1] == 1 and s[0] == 1 and len(set(s[2:])) == 1 else s[1:3]
    if len(set(s)) != 1:
        raise NotImplementedError(f"{what}: only equal strides along height and width, got "
                                  f"{strides}")
    return s[0]


def _padding(padding, k, stride, what):
    if isinstance(padding, int):
        return padding
    p = str(padding).upper()
    if p == "VALID":
        return 0
    if p == "SAME" and stride == 1 and k % 2 == 1:
        return k // 2
    raise NotImplementedError(f"{what}: padding {padding!r} is supported as 'VALID', an int, "
                              f"or 'SAME' with stride 1 and an odd kernel")


@named
def conv2d(input, filters, strides=1, padding="VALID", data_format="NCHW"):  # noqa: A002
    """2-d convolution: input (N, C, H, W), filters (O, C, kh, kw) — NCHW, see module doc."""
    _nchw(data_format, "conv2d")
    s = _stride(strides, "conv2d")
    kh = filters.shape[2] if len(filters.shape) == 4 else 1
    return ops.conv2d(input, filters, stride=s, padding=_padding(padding, kh, s, "conv2d"))


@named
def max_pool2d(input, ksize, strides=None, padding="VALID", data_format="NCHW"):  # noqa: A002
    _nchw(data_format, "max_pool2d")
    k = _stride(ksize, "max_pool2d")
    s = k if strides is None else _stride(strides, "max_pool2d")
    return ops.max_pool2d(input, k, stride=s, padding=_padding(padding, k, s, "max_pool2d"))


max_pool = max_pool2d


@named
def avg_pool2d(input, ksize, strides=None, padding="VALID", data_format="NCHW"):  # noqa: A002
    """Mean over ksize windows of an (N, C, H, W) input; only padding='VALID'."""
    _nchw(data_format, "avg_pool2d")
    k = _stride(ksize, "avg_pool2d")
    s = k if strides is None else _stride(strides, "avg_pool2d")
    if _padding(padding, k, s, "avg_pool2d") != 0:
        raise NotImplementedError("avg_pool2d: only padding='VALID'")
    return ops.avg_pool2d(input, k, stride=s)


avg_pool = avg_pool2d


def moments(x, axes, keepdims=False, name=None):
    """(mean, variance) of x over `axes`, as tf.nn.moments (the variance is biased)."""
    g = _graph_of([x]) if isinstance(x, Tensor) else None
    if g is None or name is None:
        return ops.moments(x, axes, keepdims=keepdims)
    with g.name_scope(name):
        return ops.moments(x, axes, keepdims=keepdims)


@named
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon):
    """(x - mean) / sqrt(variance + eps) * scale + offset, TF's argument order.

    The statistics broadcast against x as given (e.g. from `moments(x, axes,
    keepdims=True)`); a 1-d statistic of length C belongs to the channel dim 1 (NCHW), as
    in `ops.batch_norm`. offset and scale may be None.
    """
    return ops.batch_norm(x, mean, variance, scale, offset, eps=variance_epsilon)


@named
def embedding_lookup(params, ids):
    if not isinstance(ids, Tensor):
        ids = np.asarray(ids, dtype=np.int64)
    return ops.embedding(ids, params)


@named
def dropout(x, rate=None, keep_prob=None, seed=None):
    """Zero each element with probability `rate` (or 1 - keep_prob), scale the rest."""
    if (rate is None) == (keep_prob is None):
        raise ValueError("dropout: pass exactly one of rate= and keep_prob=")
    p = rate if rate is not None else 1.0 - keep_prob
    if isinstance(p, Tensor):
        raise NotImplementedError("dropout: the rate must be a Python float; to switch "
                                  "dropout off at evaluation build a second graph branch "
                                  "with graph.cond or use layers.dropout(training=...)")
    return ops.dropout(x, p=float(p), training=True)


@named
def layer_norm(x, gamma=None, beta=None, epsilon=1e-5, begin_norm_axis=-1):
    n = len(x.shape) - (begin_norm_axis % len(x.shape))
    return ops.layer_norm(x, gamma, beta, eps=epsilon, normalized_ndim=n)


@named
def bias_add(value, bias):
    if len(bias.shape) != 1:
        raise ShapeError(f"bias_add: bias must be 1-d, got {fmt_shape(bias.shape)}")
    return value + bias


@named
def l2_loss(t):
    return reduce_sum(t * t) * 0.5


# -- dense ---------------------------------------------------------------------------------------
def glorot_uniform_initializer(seed=None):
    """Returns init(shape, dtype): uniform in +-sqrt(6 / (fan_in + fan_out)), TF's default."""
    def init(shape, dtype="float32"):
        lim = math.sqrt(6.0 / (shape[0] + shape[-1]))
        return random_uniform(shape, -lim, lim, dtype=dtype, seed=seed)
    return init


def dense(inputs, units, activation=None, use_bias=True, name=None, kernel_initializer=None,
          bias_initializer=None, trainable=True):
    """`activation(inputs @ kernel + bias)` with Variables `name/kernel` (in, units) and
    `name/bias` (units,). Initialisers: None (Glorot uniform / zeros), an array, or a
    callable `init(shape, dtype)` returning a tensor or array."""
    d_in = inputs.shape[-1]
    if d_in is None:
        raise ShapeError(f"dense: the last dimension of the input {fmt_shape(inputs.shape)} "
                         f"must be known to create the kernel")
    g = _graph_of([inputs])
    dt = inputs.dtype
    with g.as_default(), g.name_scope(name or "dense"):
        k_init = glorot_uniform_initializer() if kernel_initializer is None else \
            kernel_initializer
        kernel = Variable(_init(k_init, (d_in, units), dt), name="kernel", trainable=trainable)
        y = ops.matmul(inputs, kernel)
        if use_bias:
            bias = Variable(_init(bias_initializer, (units,), dt), name="bias",
                            trainable=trainable)
            y = y + bias
        return activation(y) if activation is not None else y


def _init(init, shape, dtype):
    if init is None:
        return np.zeros(shape, as_dtype(dtype))
    if callable(init):
        return lambda: init(shape, dtype)
    arr = np.asarray(init, dtype=as_dtype(dtype))
    if arr.shape != tuple(shape):
        raise ShapeError(f"dense: initial value of shape {fmt_shape(arr.shape)} does not fit "
                         f"the variable's shape {fmt_shape(shape)}")
    return arr

