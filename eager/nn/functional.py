"""eager.nn.functional: the functional forms, as torch.nn.functional names them.

Every function here is the op library's own composite; nothing is reimplemented.
"""
from __future__ import annotations

import ops

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
