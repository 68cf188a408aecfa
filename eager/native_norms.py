"""torch.native_layer_norm, native_batch_norm and native_group_norm: the normalised output
with the statistics torch's kernels save (mean and 1 / sqrt(var + eps)), as compositions of
ops, so each output is differentiable.

>>> from dualgrad import eager as torch
>>> out, mean, rstd = torch.native_layer_norm(torch.tensor([[1.0, 3.0]]), [2], None, None, 0.0)
>>> out.tolist(), mean.tolist(), rstd.tolist()
([[-1.0, 1.0]], [[2.0]], [[1.0]])
"""
from __future__ import annotations

import numpy as np
from dualgrad.ops.rules import HALF

from dualgrad import ops

from .functions import _no_grad_tensor, _t

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm"]


def _wide(x):
    """float16 computed in float32, as torch's CPU kernels do."""
    return ops.cast(x, np.float32) if x.dtype in HALF else x


def _back(y, dt):
    return y if y.dtype == dt else ops.cast(y, dt)


def _stats(v, axes, eps):
    """(mean, rstd) over axes, kept as size-1 dims."""
    mean = ops.mean(v, axis=axes, keepdims=True)
    dev = v - mean
    var = ops.mean(dev * dev, axis=axes, keepdims=True)
    return mean, ops.rsqrt(var + eps)


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * ops.reshape(weight, shape)
    if bias is not None:
        y = y + ops.reshape(bias, shape)
    return y


def native_layer_norm(input, normalized_shape, weight, bias, eps):  # noqa: A002
    x = _t(input)
    v, k = _wide(x), len(normalized_shape)
    mean, rstd = _stats(v, tuple(range(x.ndim - k, x.ndim)), eps)
    y = _affine((v - mean) * rstd, weight, bias, tuple(normalized_shape))
    return _back(y, x.dtype), _back(mean, x.dtype), _back(rstd, x.dtype)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,  # noqa: A002
                      eps):
    """Training: batch statistics (saved, and folded into the running buffers in place);
    evaluation: the running statistics, and empty saved ones."""
    x = _t(input)
    v = _wide(x)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    axes = tuple(d for d in range(x.ndim) if d != 1)
    # NOTE: torch saves the statistics in the running buffers' dtype (float32 buffers of a
    # float16 model), else in the input's
    saved_dt = np.dtype(x.dtype if running_mean is None else running_mean.dtype)
    if training or running_mean is None:
        mean, rstd = _stats(v, axes, eps)
        if training and running_mean is not None:
            n = x.numel() / x.shape[1]
            unbiased = ops.reshape(1.0 / (rstd * rstd) - eps, (-1,)) * (n / max(n - 1, 1))
            running_mean.copy_(running_mean * (1 - momentum) +
                               ops.reshape(mean, (-1,)).detach() * momentum)
            running_var.copy_(running_var * (1 - momentum) + unbiased.detach() * momentum)
        saved = tuple(ops.cast(ops.reshape(s, (-1,)), saved_dt) for s in (mean, rstd))
    else:
        mean = ops.reshape(running_mean, shape)
        rstd = ops.rsqrt(ops.reshape(running_var, shape) + eps)
        saved = (_no_grad_tensor(np.zeros(0, saved_dt)), _no_grad_tensor(np.zeros(0, saved_dt)))
    return (_back(_affine((v - mean) * rstd, weight, bias, shape), x.dtype),) + saved


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: A002, N803
    x = _t(input)
    # NOTE: the group's size spelt out: -1 is ambiguous when N is 0
    g = ops.reshape(_wide(x), (N, group, C // group * HxW))
    mean, rstd = _stats(g, (2,), eps)
    y = ops.reshape((g - mean) * rstd, tuple(x.shape))
    y = _back(_affine(y, weight, bias, (1, C) + (1,) * (x.ndim - 2)), x.dtype)
    return y, _back(ops.reshape(mean, (N, group)), x.dtype), \
        _back(ops.reshape(rstd, (N, group)), x.dtype)
