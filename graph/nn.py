"""`graph.nn`: activations, losses, convolution and a `dense` layer, with TF's names.

Layout: as TF, convolution and pooling take NHWC images and conv filters of shape
(kh, kw, in_channels, out_channels) by default, and `data_format="NCHW"` too. The op
library computes in NCHW / OIHW: the transposes are added here (`_windowed`), in one place.
`padding="SAME"` splits the padding as TF does (the odd extra row/column at the end).

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 64), name="x")
>>> h = graph.nn.dense(x, 128, activation=graph.nn.relu, name="hidden")
>>> [v.name for v in graph.trainable_variables()][-2:]
['hidden/kernel:0', 'hidden/bias:0']
"""
from __future__ import annotations

import functools
import math

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import fmt_shape, located
from dualgrad.ops.rules import norm_axis

from .core import Tensor, _graph_of, check_tf1_types, convert_to_tensor
from .nn_dropout import dropout
from . import rnn_cell
from .init_ops import glorot_uniform_initializer, zeros_initializer
from .select_ops import in_top_k, top_k
from .rnn import bidirectional_dynamic_rnn, dynamic_rnn, static_bidirectional_rnn, static_rnn
from .math_ops import (clip_by_norm, l2_normalize, matmul, named, old_names, reduce_mean, reduce_sum,
                       squared_difference)
from .sampled import log_uniform_candidate_sampler, nce_loss, sampled_softmax_loss
from .variable_scope import layer_scope, layer_variable, regularize_output

__all__ = ["relu", "gelu", "softmax", "log_softmax", "sigmoid", "tanh", "silu", "swish",
           "softplus", "top_k", "in_top_k", "xw_plus_b", "relu_layer", "zero_fraction",
           "weighted_cross_entropy_with_logits", "leaky_relu", "elu", "relu6", "selu", "softsign", "l2_normalize",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "conv2d", "depthwise_conv2d", "separable_conv2d", "conv2d_transpose", "conv1d", "max_pool2d", "max_pool", "avg_pool2d", "avg_pool", "moments",
           "batch_normalization",
           "embedding_lookup", "dropout", "layer_norm", "bias_add", "l2_loss", "dense",
           "rnn_cell", "static_rnn", "dynamic_rnn", "bidirectional_dynamic_rnn",
           "static_bidirectional_rnn",
           "glorot_uniform_initializer", "nce_loss", "sampled_softmax_loss",
           "log_uniform_candidate_sampler", "batch_norm_with_global_normalization", "deconv2d"]

relu, sigmoid, tanh = named(ops.relu), named(ops.sigmoid), named(ops.tanh)
silu = swish = named(ops.silu)
softplus = named(ops.softplus)


def _features(x):
    x = convert_to_tensor(x)
    return ops.cast(x, np.float32) if x.dtype.kind in "iu" else x   # NOTE: as TF's leaky_relu


@named
def leaky_relu(features, alpha=0.2):
    """features where > 0, else alpha * features (TF's default alpha is 0.2, torch's 0.01);
    the gradient at 0 is alpha, as TF's LeakyReluGrad. alpha is rounded to float32 first:
    TF's LeakyRelu holds it as a float32 attribute (a float64 input is scaled by
    float32(0.2) = 0.20000000298…)."""
    return ops.leaky_relu(_features(features), float(np.float32(alpha)))


# NOTE: elu'(0) is 1 and relu6' is 0 at 0 and 6, as TF's EluGrad and Relu6Grad
relu6 = named(ops.relu6)


def _floating_only(fn, what):
    """`fn(features, ...)` that TF1 defines for floating features only."""
    @functools.wraps(fn)
    def typed(features, *args, **kw):
        check_tf1_types(what, features)
        return fn(features, *args, **kw)
    return named(typed)


elu, selu, softsign = (_floating_only(f, n) for f, n in ((ops.elu, "elu"), (ops.selu, "selu"),
                                                        (ops.softsign, "softsign")))


@named
def gelu(features, approximate=False):
    return ops.gelu(features, approximate="tanh" if approximate else "none")


@named
@old_names(dim="axis")
def softmax(logits, axis=None):
    check_tf1_types("softmax", logits)
    axis = -1 if axis is None else axis
    return ops.softmax(logits, axis=axis)


@named
@old_names(dim="axis")
def log_softmax(logits, axis=None):
    check_tf1_types("log_softmax", logits)
    axis = -1 if axis is None else axis
    return ops.log_softmax(logits, axis=axis)


@named
@old_names(dim="axis")
def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1):
    """Per-example loss from class probabilities `labels` (same shape as logits); as TF1's
    (deprecated) v1, backpropagation happens only into logits: labels get no gradient."""
    return _probability_xent("softmax_cross_entropy_with_logits", labels, logits, axis,
                             into_labels=False)


@named
@old_names(dim="axis")
def softmax_cross_entropy_with_logits_v2(labels=None, logits=None, axis=-1):
    """As softmax_cross_entropy_with_logits, with gradients into labels too (TF's v2)."""
    return _probability_xent("softmax_cross_entropy_with_logits_v2", labels, logits, axis,
                             into_labels=True)


def _probability_xent(name, labels, logits, axis, into_labels):
    _need_both(name, labels, logits)
    if axis not in (-1, len(logits.shape) - 1):
        raise NotImplementedError(f"{name}: only the last axis")
    return _cross_entropy(logits, labels if into_labels else ops.stop_gradient(labels))


@named
def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None):
    """Per-example loss from integer class `labels` of shape logits.shape[:-1]."""
    _need_both("sparse_softmax_cross_entropy_with_logits", labels, logits)
    check_tf1_types("softmax", logits)
    return _cross_entropy(logits, labels)


def _cross_entropy(logits, labels):
    return ops.cross_entropy(logits, labels, reduction="none")


@named
@old_names(targets="labels")
def sigmoid_cross_entropy_with_logits(labels=None, logits=None):
    """Per-element sigmoid cross-entropy (labels and logits of one shape), as TF
    (`targets=` is the pre-1.0 name of labels)."""
    _need_both("sigmoid_cross_entropy_with_logits", labels, logits)
    return ops.binary_cross_entropy_with_logits(logits, labels, reduction="none")


@named
def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, targets=None):
    """Sigmoid cross-entropy with the positive term weighted by pos_weight, in TF's stable
    form (1 - z) x + (1 + (q - 1) z) (log(1 + exp(-|x|)) + max(-x, 0))."""
    labels = targets if labels is None else labels
    _need_both("weighted_cross_entropy_with_logits", labels, logits)
    if pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits: pos_weight is required")
    lw = (pos_weight - 1.0) * labels + 1.0
    return (1.0 - labels) * logits + lw * (ops.softplus(-ops.abs(logits)) +
                                           ops.relu(-logits))


def _need_both(what, labels, logits):
    if labels is None or logits is None:
        raise ValueError(f"{what}: pass both labels= and logits= (by keyword, as TF requires)")


# -- layout: TF's NHWC / HWIO over the op library's NCHW / OIHW, in this one place -------------
_TO_NCHW, _TO_NHWC, _HWIO_TO_OIHW = (0, 3, 1, 2), (0, 2, 3, 1), (3, 2, 0, 1)


def _layout(data_format, what):
    df = "NHWC" if data_format is None else str(data_format).upper()
    if df not in ("NHWC", "NCHW"):
        raise ValueError(f"{what}: data_format must be 'NHWC' (TF's default) or 'NCHW', got "
                         f"{data_format!r}")
    return df


def _hw(value, arg, df, what):
    """(h, w) from an int or a list of 1, 2 or 4 ints, as TF reads `strides` and `ksize`."""
    if value is None:
        raise ValueError(f"{what}: {arg} is required")
    if np.ndim(value) == 0:
        return int(value), int(value)
    v = [int(a) for a in value]
    if len(v) in (1, 2):
        return v[0], v[-1]
    if len(v) == 4:
        n, c, h, w = (0, 3, 1, 2) if df == "NHWC" else (0, 1, 2, 3)
        if v[n] != 1 or v[c] != 1:
            raise ValueError(f"{what}: {arg} {list(value)} must be 1 along the batch and "
                             f"channel dims for data_format='{df}' ({'[1, h, w, 1]' if df == 'NHWC' else '[1, 1, h, w]'})")
        return v[h], v[w]
    raise ValueError(f"{what}: {arg} must be an int or a list of 1, 2 or 4 ints, got {value!r}")


def _same_pad(size, k, s, axis, shape, what):
    """TF's SAME: out = ceil(size / s); the padding total splits with the extra row/column
    at the end (bottom / right)."""
    if size is None:
        if s != 1:
            raise located(f"{what}: padding='SAME' with stride {s} needs the {axis} of "
                             f"input {fmt_shape(shape)} to be known")
        total = k - 1
    else:
        total = max((-(-size // s) - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def _pads(padding, hw, k, s, shape, what):
    """((top, bottom), (left, right)) for 'VALID', 'SAME', an int, or TF's explicit list."""
    if isinstance(padding, (int, np.integer)):
        return ((int(padding),) * 2,) * 2
    if isinstance(padding, (list, tuple)):
        pairs = [tuple(int(a) for a in p) for p in padding]
        if len(pairs) == 2:
            return tuple(pairs)
        raise ValueError(f"{what}: explicit padding must be 2 (h, w) pairs, got {padding!r}")
    p = str(padding).upper()
    if p == "VALID":
        return (0, 0), (0, 0)
    if p == "SAME":
        return tuple(_same_pad(hw[i], k[i], s[i], ("height", "width")[i], shape, what)
                     for i in range(2))
    raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")


def _spatial(x, df, what):
    if len(x.shape) != 4:
        raise located(f"{what}: expects a 4-d input in data_format='{df}' "
                         f"({'(N, H, W, C)' if df == 'NHWC' else '(N, C, H, W)'}), got "
                         f"{fmt_shape(x.shape)}")
    return tuple(x.shape[1:3]) if df == "NHWC" else tuple(x.shape[2:4])


def _windowed(x, df, k, s, pads, fill, apply):
    """Run `apply(x_nchw, stride, symmetric_pad)` with the layout, the padding split and the
    strides handled here: asymmetric padding becomes an explicit `pad` (with `fill`), unequal
    strides a stride-1 window followed by a strided slice."""
    x = ops.transpose(x, axes=_TO_NCHW) if df == "NHWC" else x
    (t, b), (l_, r) = pads
    sym = t == b == l_ == r
    if not sym and (t or b or l_ or r):
        x = ops.pad(x, ((0, 0), (0, 0), (t, b), (l_, r)), value=fill)
    stride = s[0] if s[0] == s[1] else 1
    y = apply(x, stride, t if sym else 0)
    if s[0] != s[1]:
        y = ops.slice_(y, index=(slice(None), slice(None), slice(None, None, s[0]),
                                 slice(None, None, s[1])))
    return ops.transpose(y, axes=_TO_NHWC) if df == "NHWC" else y


@named
def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), filters=None):
    """2-d convolution as tf.nn.conv2d: input (N, H, W, C) (or (N, C, H, W) with
    data_format='NCHW') and a filter (kh, kw, in_channels, out_channels) in either layout.
    padding 'SAME' pads as TF does (the odd extra row/column at the bottom/right)."""
    f = filters if filter is None else filter
    check_tf1_types("conv2d", input, f)
    df = _layout(data_format, "conv2d")
    if f is None or padding is None:
        raise ValueError("conv2d: pass filter (HWIO) and padding ('SAME' or 'VALID')")
    if any(int(d) != 1 for d in np.ravel(dilations)):
        raise NotImplementedError(f"conv2d: dilations {dilations} are not supported (only 1)")
    hw = _spatial(input, df, "conv2d")
    fs = tuple(f.shape) if hasattr(f, "shape") else np.shape(f)
    c = input.shape[3] if df == "NHWC" else input.shape[1]
    if len(fs) != 4:
        raise located(f"conv2d: filter must be 4-d (height, width, in_channels, "
                         f"out_channels), got {fmt_shape(fs)}")
    if c is not None and fs[2] is not None and c != fs[2]:
        raise located(f"conv2d: input {fmt_shape(input.shape)} ({df}) has {c} channels but "
                         f"filter {fmt_shape(fs)} (height, width, in_channels, out_channels) "
                         f"expects {fs[2]}")
    k = (fs[0], fs[1])
    s = _hw(1 if strides is None else strides, "strides", df, "conv2d")
    pads = _pads(padding, hw, k, s, input.shape, "conv2d")
    w = ops.transpose(f, axes=_HWIO_TO_OIHW)
    return _windowed(input, df, k, s, pads, 0.0,
                     lambda x, st, p: ops.conv2d(x, w, stride=st, padding=p))


@named
def depthwise_conv2d(input, filter=None, strides=None, padding=None, rate=None,  # noqa: A002
                     data_format=None, dilations=None, filters=None):
    """tf.nn.depthwise_conv2d: each input channel k convolved with its own
    `channel_multiplier` filters; filter (kh, kw, in_channels, channel_multiplier), output
    channel k * channel_multiplier + m. Layout, strides and padding as conv2d; `rate` /
    `dilations` other than 1 raise NotImplementedError."""
    f = filters if filter is None else filter
    check_tf1_types("depthwise_conv2d", input, f)
    df = _layout(data_format or "NHWC", "depthwise_conv2d")
    for what, v in (("rate", rate), ("dilations", dilations)):
        if v is not None and any(int(d) != 1 for d in np.ravel(v)):
            raise NotImplementedError(f"depthwise_conv2d: {what} {v} is not supported (only 1)")
    if f is None or padding is None:
        raise ValueError("depthwise_conv2d: pass filter and padding ('SAME' or 'VALID')")
    f = convert_to_tensor(f, dtype=input.dtype) if not isinstance(f, Tensor) else f
    hw = _spatial(input, df, "depthwise_conv2d")
    c = input.shape[3] if df == "NHWC" else input.shape[1]
    fs = tuple(f.shape)
    if len(fs) != 4 or None in fs or (c is not None and c != fs[2]):
        raise located(f"depthwise_conv2d: input {fmt_shape(input.shape)} ({df}) needs a "
                      f"filter (height, width, {c}, channel_multiplier) of known shape, got "
                      f"{fmt_shape(fs)}")
    k, groups = (fs[0], fs[1]), fs[2]
    s = _hw(1 if strides is None else strides, "strides", df, "depthwise_conv2d")
    pads = _pads(padding, hw, k, s, input.shape, "depthwise_conv2d")
    w = ops.transpose(ops.reshape(f, (fs[0], fs[1], 1, fs[2] * fs[3])), axes=_HWIO_TO_OIHW)
    return _windowed(input, df, k, s, pads, 0.0,
                     lambda x, st, p: ops.conv2d(x, w, stride=st, padding=p, groups=groups))


@named
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, data_format=None, dilations=None):
    """tf.nn.separable_conv2d: depthwise_conv2d, then a 1x1 conv2d with
    `pointwise_filter` (1, 1, in_channels * channel_multiplier, out_channels)."""
    y = depthwise_conv2d(input, depthwise_filter, strides, padding, rate=rate,
                         data_format=data_format, dilations=dilations)
    return conv2d(y, pointwise_filter, strides=1, padding="VALID",
                  data_format=data_format or "NHWC")


@named
def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", input=None, filters=None,
                     dilations=None):
    """The adjoint of conv2d in its input, as tf.nn.conv2d_transpose: value (N, H, W, C_in)
    (or NCHW), filter (kh, kw, C_out, C_in), output_shape the 4 dims of the result (as a
    list of ints), padding 'SAME' or 'VALID' as conv2d pads an input of output_shape."""
    x = input if value is None else value
    f = filters if filter is None else filter
    check_tf1_types("conv2d_transpose", value, f)
    df = _layout(data_format, "conv2d_transpose")
    if x is None or f is None or output_shape is None:
        raise ValueError("conv2d_transpose: pass value, filter and output_shape")
    if dilations is not None and any(int(d) != 1 for d in np.ravel(dilations)):
        raise NotImplementedError("conv2d_transpose: dilations other than 1")
    if isinstance(output_shape, Tensor):
        raise NotImplementedError("conv2d_transpose: output_shape must be a list (its batch "
                                  "entry may be a tensor, e.g. tf.shape(x)[0]), not a tensor")
    # NOTE: the batch entry is not needed (value's batch is the result's): it may be a tensor
    out = [None] + [int(d) for d in list(output_shape)[1:]]
    fs = tuple(f.shape) if hasattr(f, "shape") else np.shape(f)
    hw, c_in = _spatial(x, df, "conv2d_transpose"), x.shape[3 if df == "NHWC" else 1]
    c_out = out[3] if df == "NHWC" else out[1]
    if len(out) != 4 or len(fs) != 4 or None in hw or fs[2] != c_out or \
            (c_in is not None and fs[3] != c_in):
        raise located(f"conv2d_transpose: value {fmt_shape(x.shape)} ({df}), filter "
                      f"{fmt_shape(fs)} (height, width, out_channels, in_channels) and "
                      f"output_shape {out} do not fit (known height and width needed)")
    s = _hw(1 if strides is None else strides, "strides", df, "conv2d_transpose")
    out_hw = (out[1], out[2]) if df == "NHWC" else (out[2], out[3])
    pads = _pads(padding, out_hw, fs[:2], s, out, "conv2d_transpose")
    for i, axis in enumerate(("height", "width")):
        if _conv_out(out_hw[i], fs[i], s[i], pads[i]) != hw[i]:
            raise located(f"conv2d_transpose: a conv2d over output_shape {out} gives {axis} "
                          f"{_conv_out(out_hw[i], fs[i], s[i], pads[i])}, not value's {hw[i]}")
    xc = ops.transpose(x, axes=_TO_NCHW) if df == "NHWC" else x
    full = ops.conv_transpose2d(xc, ops.transpose(f, axes=(3, 2, 0, 1)), stride=s)
    index = [slice(None), slice(None)]
    for i in range(2):   # NOTE: crop TF's (top, left) padding; rows no window reaches are 0
        size = (hw[i] - 1) * s[i] + fs[i]
        extra = pads[i][0] + out_hw[i] - size
        if extra > 0:
            widths = [(0, 0)] * 4
            widths[2 + i] = (0, extra)
            full = ops.pad(full, tuple(widths))
        index.append(slice(pads[i][0], pads[i][0] + out_hw[i]))
    y = ops.slice_(full, index=tuple(index))
    return ops.transpose(y, axes=_TO_NHWC) if df == "NHWC" else y


def _conv_out(size, k, s, pad):
    return (size + pad[0] + pad[1] - k) // s + 1


@named
def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format="NWC", input=None, dilations=None):  # noqa: A002
    """1-d convolution as tf.nn.conv1d: value (N, W, C_in) (or NCW), filters (k, C_in,
    C_out); conv2d over a height of 1."""
    x = input if value is None else value
    ncw = str(data_format or "NWC").upper() == "NCW"
    if str(data_format or "NWC").upper() not in ("NWC", "NCW"):
        raise ValueError(f"conv1d: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    if x is None or filters is None or stride is None or padding is None:
        raise ValueError("conv1d: pass value, filters, stride and padding")
    sv = [int(v) for v in np.ravel(stride)]
    if len(sv) not in (1, 3):
        raise ValueError(f"conv1d: stride must be an int or a list of 1 or 3, got {stride!r}")
    st = sv[0] if len(sv) == 1 else sv[2 if ncw else 1]
    if dilations is not None and any(int(d) != 1 for d in np.ravel(dilations)):
        raise NotImplementedError("conv1d: dilations other than 1")
    x4 = ops.expand_dims(x, axis=2 if ncw else 1)
    f4 = ops.expand_dims(filters, axis=0)
    y = conv2d(x4, f4, strides=[1, 1, st, 1] if not ncw else [1, 1, 1, st], padding=padding,
               data_format="NCHW" if ncw else "NHWC")
    return ops.squeeze(y, axis=2 if ncw else 1)


def _pool_args(value, ksize, strides, padding, df, what):
    hw = _spatial(value, df, what)
    k = _hw(ksize, "ksize", df, what)
    if k[0] != k[1]:
        raise NotImplementedError(f"{what}: only square windows are supported, got ksize "
                                  f"{ksize}")
    s = _hw(k[0] if strides is None else strides, "strides", df, what)
    return k, s, _pads(padding, hw, k, s, value.shape, what)


@named
def max_pool(value, ksize, strides=None, padding="VALID", data_format="NHWC",
             input=None):  # noqa: A002
    """Max over ksize windows, as tf.nn.max_pool (NHWC by default); padding 'SAME' ignores
    the padded cells (they count as -inf)."""
    value = input if value is None else value
    df = _layout(data_format, "max_pool")
    k, s, pads = _pool_args(value, ksize, strides, padding, df, "max_pool")
    dt = np.dtype(value.dtype)
    low = -np.inf if dt.kind == "f" else np.iinfo(dt).min   # NOTE: padding never wins
    return _windowed(value, df, k, s, pads, low,
                     lambda x, st, p: ops.max_pool2d(x, k[0], stride=st, padding=p))


@named
def avg_pool(value, ksize, strides=None, padding="VALID", data_format="NHWC",
             input=None):  # noqa: A002
    """Mean over ksize windows, as tf.nn.avg_pool (NHWC by default); with padding 'SAME' a
    window at the border averages only its cells inside the input, as TF does."""
    value = input if value is None else value
    check_tf1_types("avg_pool", value)
    df = _layout(data_format, "avg_pool")
    k, s, pads = _pool_args(value, ksize, strides, padding, df, "avg_pool")

    def pool(x, st, p):
        if p:
            x = ops.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        return ops.avg_pool2d(x, k[0], stride=st)
    y = _windowed(value, df, k, s, pads, 0.0, pool)
    if pads == ((0, 0), (0, 0)):
        return y
    hw = _spatial(value, df, "avg_pool")
    if None in hw:
        raise located(f"avg_pool: padding='SAME' needs the height and width of input "
                         f"{fmt_shape(value.shape)} to be known")
    shape = (1, 1) + hw if df == "NCHW" else (1,) + hw + (1,)
    inside = _windowed(np.ones(shape, np.dtype(value.dtype)), df, k, s, pads, 0.0, pool)
    return y / inside   # NOTE: a constant (folded by the optimiser), or an array


max_pool2d, avg_pool2d = max_pool, avg_pool


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over `axes`, as tf.nn.moments (the variance is biased); of
    integers TF's: both truncated reduce_means in x's dtype. TF1's signature: `shift` is
    unused (as in TF), `keep_dims` is keepdims' old name."""
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    g = _graph_of([x]) if isinstance(x, Tensor) else None
    if g is None or name is None:
        return _moments(x, axes, keepdims)
    with g.name_scope(name):
        return _moments(x, axes, keepdims)


def _moments(x, axes, keepdims):
    if np.dtype(getattr(x, "dtype", np.float32)).kind not in "iu":
        return ops.moments(x, axes, keepdims=keepdims)
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
    mean = reduce_mean(x, axis=axes, keepdims=True)
    var = reduce_mean(squared_difference(x, ops.stop_gradient(mean)), axis=axes,
                      keepdims=bool(keepdims))
    return (mean if keepdims else ops.squeeze(mean, axis=axes)), var


@named
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon):
    """(x - mean) / sqrt(variance + eps) * scale + offset, TF's argument order.

    The statistics broadcast against x as NumPy (and TF) do: a 1-d statistic of length C
    belongs to the last dim (NHWC channels), or pass them with keepdims=True from
    `moments`. offset and scale may be None.
    """
    nd = len(x.shape)

    def full(t):
        if t is None or nd < 2:
            return t
        ts = tuple(t.shape) if hasattr(t, "shape") else np.shape(t)
        return ops.reshape(t, (1,) * (nd - len(ts)) + ts) if len(ts) < nd else t
    return ops.batch_norm(x, full(mean), full(variance), full(scale), full(offset),
                          eps=variance_epsilon)


@named
def embedding_lookup(params, ids, partition_strategy="mod", validate_indices=True,
                     max_norm=None):
    """The rows of params at ids, as TF's: params one tensor, or a list of shards (Python
    lists are shards too, as in TF): with partition_strategy 'mod' row r lies in shard r % n
    at r // n, with 'div' the shards hold consecutive rows. max_norm clips each looked-up
    embedding to that L2 norm. (validate_indices is ignored, as in TF.)"""
    if not isinstance(ids, Tensor):
        ids = np.asarray(ids, dtype=np.int64)
    if isinstance(params, (list, tuple)):
        params, ids = _sharded([convert_to_tensor(p) for p in params], ids, partition_strategy)
    out = ops.embedding(ids, params)
    if max_norm is not None:
        axes = tuple(range(len(out.shape) - len(params.shape) + 1, len(out.shape)))
        out = clip_by_norm(out, max_norm, axes=axes)
    return out


def _sharded(shards, ids, strategy):
    """(one table of the shards one after another, where each id's row lies in it)."""
    if strategy not in ("mod", "div"):
        raise ValueError(f"embedding_lookup: partition_strategy must be 'mod' or 'div', got "
                         f"{strategy!r}")
    if len(shards) == 1 or strategy == "div":
        return (shards[0] if len(shards) == 1 else ops.concat(*shards, axis=0)), ids
    sizes = [s.shape[0] for s in shards]
    if None in sizes:
        raise ValueError("embedding_lookup: partition_strategy='mod' needs each shard's number "
                         "of rows known when the graph is built")
    n, offsets = len(shards), np.cumsum([0] + sizes[:-1])
    ids = ops.cast(ids, np.int64)
    at = ops.take(offsets, ops.floormod(ids, n)) + ops.floordiv(ids, n)
    return ops.concat(*shards, axis=0), at


@named
def layer_norm(x, gamma=None, beta=None, epsilon=1e-5, begin_norm_axis=-1):
    n = len(x.shape) - norm_axis("layer_norm", begin_norm_axis, len(x.shape), x.shape,
                                 frontend=True)
    return ops.layer_norm(x, gamma, beta, eps=epsilon, normalized_ndim=n)


@named
def bias_add(value, bias, data_format=None):
    """value + bias along the channel dim: the last one, or dim 1 for data_format='NCHW'."""
    bs = tuple(bias.shape) if hasattr(bias, "shape") else np.shape(bias)
    if len(bs) != 1:
        raise located(f"bias_add: bias must be 1-d, got {fmt_shape(bs)}")
    nchw = data_format is not None and str(data_format).upper().startswith("NC")
    if len(value.shape) < (3 if nchw else 2):
        raise located(f"bias_add: value {fmt_shape(value.shape)} must have at least "
                         f"{3 if nchw else 2} dims for data_format={data_format!r}")
    c = value.shape[1] if nchw else value.shape[-1]
    if c is not None and bs[0] is not None and c != bs[0]:
        raise located(f"bias_add: bias {fmt_shape(bs)} does not match the "
                         f"{'channel dim 1' if nchw else 'last dim'} ({c}) of value "
                         f"{fmt_shape(value.shape)}")
    if nchw:
        bias = ops.reshape(bias, (-1,) + (1,) * (len(value.shape) - 2))
    return value + bias


@named
def l2_loss(t):
    return reduce_sum(t * t) * 0.5


@named
def xw_plus_b(x, weights, biases):
    """matmul(x, weights) + biases."""
    return ops.matmul(x, weights) + biases


@named
def relu_layer(x, weights, biases):
    return ops.relu(ops.matmul(x, weights) + biases)


@named
def zero_fraction(value):
    """The fraction of the elements of `value` that are 0, as a float32 scalar."""
    v = convert_to_tensor(value)
    return ops.mean(ops.cast(ops.eq(v, np.zeros((), v.dtype)), np.float32))


# -- dense ---------------------------------------------------------------------------------------
def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """tf.layers.dense: `activation(inputs @ kernel + bias)` over the last dim, with
    variables `name/kernel` (in, units) and `name/bias` (units,) made by `get_variable` in
    the variable scope `name` (default `dense`, `dense_1`, …), so `reuse=True` or an
    enclosing reusing scope shares them. Initialisers: None (Glorot uniform / zeros), an
    initializer or callable `init(shape, dtype)`, or an array; regularizers add to
    `GraphKeys.REGULARIZATION_LOSSES`."""
    _no_constraints("dense", kernel_constraint, bias_constraint)
    d_in = inputs.shape[-1]
    if d_in is None:
        raise located(f"dense: the last dimension of the input {fmt_shape(inputs.shape)} "
                         f"must be known to create the kernel")
    g, dt = _graph_of([inputs]), inputs.dtype
    with g.as_default(), layer_scope("dense", name, reuse, inputs):
        kernel = layer_variable("kernel", (d_in, units), dt, kernel_initializer,
                                glorot_uniform_initializer(), kernel_regularizer, trainable)
        y = matmul(inputs, kernel)   # NOTE: TF's node names: dense/MatMul, dense/BiasAdd
        if use_bias:
            y = bias_add(y, layer_variable("bias", (units,), dt, bias_initializer,
                                           zeros_initializer(), bias_regularizer, trainable))
        y = activation(y) if activation is not None else y
        return regularize_output(y, activity_regularizer)


def _no_constraints(what, *constraints):
    if any(c is not None for c in constraints):
        raise NotImplementedError(f"{what}: kernel/bias constraints are not supported")


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None, scale_after_normalization=None,
                                         name=None, input=None, mean=None,  # noqa: A002
                                         variance=None):
    """TF 0.x's batch norm: `batch_normalization` with gamma applied only when
    scale_after_normalization."""
    t, m, v = (a if a is not None else b for a, b in ((t, input), (m, mean), (v, variance)))
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon)


deconv2d = conv2d_transpose   # TF 0.x's name
