"""eager.nn.functional: the functional forms, as torch.nn.functional names them.

Every function here is the op library's own composite; nothing is reimplemented.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.updates import running_average

relu, sigmoid, tanh = ops.relu, ops.sigmoid, ops.tanh


def gelu(x, approximate="none"):
    return ops.gelu(x, approximate=approximate)


def silu(x):
    return ops.silu(x)


def softmax(x, dim=-1):
    return ops.softmax(x, axis=dim)


def log_softmax(x, dim=-1):
    return ops.log_softmax(x, axis=dim)


def linear(x, weight, bias=None):
    return ops.linear(x, weight, bias)


def conv2d(x, weight, bias=None, stride=1, padding=0):
    return ops.conv2d(x, weight, bias, stride=stride, padding=padding)


def max_pool2d(x, kernel_size, stride=None, padding=0):
    return ops.max_pool2d(x, kernel_size, stride=stride, padding=padding)


def avg_pool2d(x, kernel_size, stride=None):
    return ops.avg_pool2d(x, kernel_size, stride=stride)


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm: statistics per channel (dim 1) of (N, C, ...) input.

    training=True normalises with the batch's mean and biased variance and, when running
    buffers are given, updates them in place: running = (1 - momentum) * running + momentum *
    batch, with the UNBIASED batch variance for running_var (as torch). Otherwise it
    normalises with running_mean and running_var.
    """
    if not training:
        return ops.batch_norm(input, running_mean, running_var, weight, bias, eps=eps)
    shape = tuple(input.shape)
    axes = (0,) + tuple(range(2, len(shape)))
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if len(shape) >= 2 else 0
    if n <= 1:
        raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                         f"got input of size {shape}")
    mean, var = ops.moments(input, axes)
    out = ops.batch_norm(input, mean, var, weight, bias, eps=eps)   # checks shapes first
    # NOTE: plain arrays, nothing recorded: the buffers are not part of the autograd graph
    if running_mean is not None:
        _update_running(running_mean, mean.data, momentum)
    if running_var is not None:
        _update_running(running_var, var.data * (n / (n - 1)), momentum)
    return out


def _update_running(buf, batch, momentum):
    np.copyto(buf.data, running_average(buf.data, batch, momentum), casting="same_kind")


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    return ops.layer_norm(x, weight, bias, eps=eps, normalized_ndim=n)


def embedding(idx, weight):
    return ops.embedding(idx, weight)


def dropout(x, p=0.5, training=True):
    return ops.dropout(x, p, training)


def one_hot(idx, num_classes):
    return ops.one_hot(idx, num_classes, dtype="int64")


def cross_entropy(logits, target, reduction="mean"):
    """Softmax cross-entropy: logits (N, C) and class indices (N,) (or probabilities (N, C))."""
    return ops.cross_entropy(logits, target, reduction=reduction)


def mse_loss(input, target, reduction="mean"):  # noqa: A002 - torch's argument name
    return ops.mse_loss(input, target, reduction=reduction)


def nll_loss(input, target, reduction="mean"):  # noqa: A002 - torch's argument name
    """Negative log-likelihood: log-probabilities (N, C) and class indices (N,)."""
    return ops.nll_loss(input, target, reduction=reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):  # noqa: A002
    return ops.binary_cross_entropy_with_logits(input, target, reduction=reduction)


def binary_cross_entropy(input, target, reduction="mean"):  # noqa: A002
    return ops.binary_cross_entropy(input, target, reduction=reduction)
