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


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (torch's)."""
    bx = x if beta == 1 else x * beta
    out = ops.softplus(bx) if beta == 1 else ops.softplus(bx) / beta
    return ops.where(bx > threshold, x, out)


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
        _update_running(running_mean, mean._array, momentum)
    if running_var is not None:
        _update_running(running_var, var._array * (n / (n - 1)), momentum)
    return out


def _update_running(buf, batch, momentum):
    np.copyto(buf._array, running_average(buf._array, batch, momentum), casting="same_kind")


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    return ops.layer_norm(x, weight, bias, eps=eps, normalized_ndim=n)


def embedding(idx, weight):
    return ops.embedding(idx, weight)


def dropout(x, p=0.5, training=True):
    return ops.dropout(x, p, training)


def one_hot(idx, num_classes):
    return ops.one_hot(idx, num_classes, dtype="int64")


def _classes_last(x):
    """torch puts the classes in dim 1 of (N, C, d1, ...); the op library puts them last."""
    return x.permute(0, *range(2, x.ndim), 1) if x.ndim > 2 else x


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy: logits (N, C) or (N, C, d1, ...) and class indices
    (N, ...) or class probabilities shaped like the logits; weight, ignore_index and
    label_smoothing as torch."""
    if size_average is not None or reduce is not None:
        raise TypeError("cross_entropy: size_average and reduce are deprecated in PyTorch and "
                        "not supported by dualgrad; use reduction=")
    prob = np.dtype(target.dtype).kind == "f" if hasattr(target, "dtype") else False
    return ops.cross_entropy(_classes_last(input), _classes_last(target) if prob else target,
                             reduction=reduction, weight=weight, ignore_index=ignore_index,
                             label_smoothing=label_smoothing)


def mse_loss(input, target, reduction="mean"):  # noqa: A002 - torch's argument name
    return ops.mse_loss(input, target, reduction=reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
             reduce=None, reduction="mean"):
    """Negative log-likelihood: log-probabilities (N, C) and class indices (N,)."""
    if weight is None and ignore_index == -100 and input.ndim == 2:
        return ops.nll_loss(input, target, reduction=reduction)
    # NOTE: cross_entropy of log-probabilities is the NLL: log_softmax leaves them unchanged
    return cross_entropy(input, target, weight, size_average, ignore_index, reduce, reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):  # noqa: A002
    return ops.binary_cross_entropy_with_logits(input, target, reduction=reduction)


def binary_cross_entropy(input, target, reduction="mean"):  # noqa: A002
    return ops.binary_cross_entropy(input, target, reduction=reduction)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v over the last two dims, as torch's.

    A bool attn_mask marks the positions that take part (True = attend); a float one is
    added to the scores. is_causal masks the upper triangle (query i sees keys <= i).
    """
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention: explicit attn_mask should not be set "
                           "when is_causal=True")
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / float(np.sqrt(query.shape[-1])) if scale is None else scale
    scores = ops.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        attn_mask = np.tril(np.ones((L, S), np.bool_))
    if attn_mask is not None:
        m = getattr(attn_mask, "_array", attn_mask)
        if np.asarray(m).dtype == np.bool_:
            scores = ops.masked_fill(scores, ~np.asarray(m), -np.inf)
        else:
            scores = scores + attn_mask
    weights = ops.softmax(scores, axis=-1)
    if dropout_p:
        weights = ops.dropout(weights, dropout_p, True)
    return ops.matmul(weights, value)


def pad(input, pad, mode="constant", value=0.0):  # noqa: A002 - torch's names
    """torch.nn.functional.pad: `pad` lists (left, right) pairs from the last dim backwards."""
    if mode != "constant":
        raise NotImplementedError(f"F.pad(mode={mode!r}) is not supported by dualgrad; only "
                                  f"mode='constant'")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"F.pad: padding length {len(pad)} must be even and at most "
                         f"2 * {input.ndim}")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return ops.pad(input, tuple(pairs), value=value)
