"""eager.nn.core_functional: the functional forms used most (activations, convolution,
pooling, normalisation, dropout, the common losses, pad); `eager.nn.functional` re-exports
them with the rest."""
from __future__ import annotations

import warnings

import numpy as np
from dualgrad.eager.amp import keeps_fp32, lowers
from dualgrad.ops.composite import in_opmath
from dualgrad.ops.rules import HALF, mirrored, torch_opmath_dtype

from dualgrad import ops
from dualgrad.ops.core import TRACING, user_stacklevel
from dualgrad.ops.updates import running_average
from . import half_conv
from ..refusals import scalar_type


def _inplace(x, inplace, name, fn, *args):
    """fn(x, *args), written into x itself when inplace=True (torch's `inplace=` flag)."""
    if not inplace:
        return fn(x, *args)
    from ..inplace import apply_inplace
    return apply_inplace(x, name + "_", lambda t: fn(t, *args))


def _legacy_reduction(size_average, reduce, reduction):
    """reduction, or what torch's deprecated size_average / reduce mean when either is given
    (both default True: mean; reduce alone: sum; reduce=False: none), with torch's warning."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    out = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{out}' instead.", UserWarning, stacklevel=3)
    return out


def _broadcast_pair(name, input, target):  # noqa: A002
    """A pointwise loss's input and target, of different shapes, broadcast to one shape with
    torch's warning (ops.composite.loss_broadcast)."""
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    shape = ops.composite.loss_broadcast(name, input, target)
    return input.expand(*shape), target.expand(*shape)


def _refuse(name, **options):
    """NotImplementedError for each option given a value dualgrad does not implement."""
    for key, (value, default) in options.items():
        if value is not default and value != default:
            raise NotImplementedError(f"{name}({key}={value!r}) is not supported by dualgrad")


# -- activations ------------------------------------------------------------------------------
def relu(input, inplace=False):  # noqa: A002 - torch's argument names
    return _inplace(input, inplace, "relu", ops.relu)


def relu6(input, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "relu6", ops.relu6)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "leaky_relu", ops.leaky_relu, negative_slope)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "elu", ops.elu, alpha)


def selu(input, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "selu", ops.selu)


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _inplace(input, inplace, "celu", ops.celu, alpha)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "hardtanh", ops.hardtanh, min_val, max_val)


def hardswish(input, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "hardswish", ops.hardswish)


def hardsigmoid(input, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "hardsigmoid", ops.hardsigmoid)


def silu(input, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "silu", ops.silu)


def mish(input, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "mish", ops.mish)


@lowers
def prelu(input, weight):  # noqa: A002
    return ops.prelu(input, weight)


def sigmoid(input):  # noqa: A002
    return ops.sigmoid(input)


def tanh(input):  # noqa: A002
    return ops.tanh(input)


def softsign(input):  # noqa: A002
    return ops.softsign(input)


def logsigmoid(input):  # noqa: A002
    return ops.logsigmoid(input)


def tanhshrink(input):  # noqa: A002
    return ops.tanhshrink(input)


def glu(input, dim=-1):  # noqa: A002
    return ops.glu(input, dim)


def gelu(input, approximate="none"):  # noqa: A002
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return ops.gelu(input, approximate=approximate)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (torch's)."""
    bx = input if beta == 1 else input * beta
    out = ops.softplus(bx) if beta == 1 else ops.softplus(bx) / beta
    return ops.where(bx > threshold, input, out)


def _softmax_dim(name, input, dim, dtype, stacklevel):
    if dtype is not None:
        input = ops.cast(input, np.dtype(dtype))
    if dim is None:   # NOTE: torch's legacy implicit dim, with its warning: 0 for 0-, 1-, 3-d
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                      f"call to include dim=X as an argument.", UserWarning,
                      stacklevel=user_stacklevel())   # NOTE: the user's line
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return input, dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    input, dim = _softmax_dim("softmax", input, dim, dtype, _stacklevel)
    return ops.softmax(input, axis=dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    input, dim = _softmax_dim("log_softmax", input, dim, dtype, _stacklevel)
    return ops.log_softmax(input, axis=dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    input, dim = _softmax_dim("softmin", -input, dim, dtype, _stacklevel)   # NOTE: negated first,
    return ops.softmax(input, axis=dim)                          # as torch's (uint8 wraps)


# -- layers -----------------------------------------------------------------------------------
@lowers
def linear(input, weight, bias=None):  # noqa: A002
    """input @ weight.T + bias; float16 and bfloat16 in float32, rounded once, where torch
    takes addmm: a 2-d input, or a contiguous one of another rank (its bias 1-d, or any
    for 3-d); else the product and the sum are rounded each, as torch's matmul and add_."""
    if torch_opmath_dtype(input.dtype) == input.dtype or bias is not None and \
            input.ndim != 2 and not TRACING[0] and not (
                input.is_contiguous() and (input.ndim == 3 or bias.ndim == 1)):
        return ops.linear(input, weight, bias)
    return _linear_once(input, weight, bias)


_linear_once = in_opmath(ops.linear)


def _unbatched(fn, input, spatial, *args):  # noqa: A002
    """fn on an input without its batch dim ((C, L) for 1-d, (C, H, W) for 2-d), as torch
    accepts: run with a batch of one, and drop it again."""
    if input.ndim == spatial + 1:
        out = fn(ops.expand_dims(input, axis=0), *args)
        return tuple(ops.squeeze(o, axis=0) for o in out) if isinstance(out, tuple) else \
            ops.squeeze(out, axis=0)     # NOTE: (values, indices) of return_indices=True
    return fn(input, *args)


@lowers
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _unbatched(ops.conv1d, input, 1, weight, bias, stride, padding, dilation, groups)


@lowers
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _unbatched(ops.conv2d, input, 2, weight, bias, stride, padding, dilation, groups)


@lowers
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):
    return _unbatched(_conv_transpose2d, input, 2, weight, bias, stride, padding,
                      output_padding, groups, dilation)


def _conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation):
    pair = ops.nn.pair
    if half_conv.takes_slow_path(x, weight, pair(stride), pair(output_padding), groups):
        return half_conv.slow_path(x, weight, bias, pair(stride), pair(padding),
                                   pair(output_padding), groups, pair(dilation))
    return ops.conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups,
                                dilation)


@lowers
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                     groups=1, dilation=1):
    """The 2-d form over a height of one."""
    return _unbatched(_conv_transpose1d, input, 1, weight, bias, stride, padding,
                      output_padding, groups, dilation)


def _conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation):  # noqa: A002
    stride, padding, output_padding, dilation = (
        v[0] if isinstance(v, (tuple, list)) else v
        for v in (stride, padding, output_padding, dilation))
    y = _conv_transpose2d(ops.expand_dims(input, axis=2), ops.expand_dims(weight, axis=2),
                          bias, (1, stride), (0, padding), (0, output_padding), groups,
                          (1, dilation))
    return ops.squeeze(y, axis=2)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """torch.nn.functional.unfold (im2col): (N, C, H, W) -> (N, C * kh * kw, L)."""
    return _unbatched(ops.unfold, input, 2, ops.nn.pair(kernel_size), stride, padding,
                      dilation)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """torch.nn.functional.fold (col2im), unfold's adjoint: (N, C * kh * kw, L) blocks summed
    into (N, C, H, W) of output_size, overlaps added; an unbatched (C * kh * kw, L) input
    gives (C, H, W). The block count L must be the one output_size gives, as torch checks."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    pair = ops.nn.pair
    (kh, kw), size = pair(kernel_size), pair(output_size)
    rows, blocks = input.shape[-2:]
    if rows % (kh * kw):
        raise RuntimeError(f"Expected size of input's dimension {input.ndim - 2} to be "
                           f"divisible by the product of kernel_size, but got "
                           f"input.size({input.ndim - 2})={rows} and kernel_size={(kh, kw)}.")
    outs = ops.nn.window_outs(size, (kh, kw), stride, padding, dilation)
    if outs[0] * outs[1] != blocks or min(outs) < 1:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={(kh, kw)}, dilation={pair(dilation)}, "
            f"padding={pair(padding)}, stride={pair(stride)}, expected size of input's "
            f"dimension {input.ndim - 1} to match the calculated number of sliding blocks "
            f"{outs[0]} * {outs[1]} = {outs[0] * outs[1]}, but got "
            f"input.size({input.ndim - 1})={blocks}.")
    batch = input.shape[:-2] or (1,)
    like = np.broadcast_to(np.zeros((), np.float32), batch + (rows // (kh * kw),) + size)
    cols = input if input.ndim == 3 else ops.expand_dims(input, axis=0)
    out = ops.fold(cols, like, (kh, kw), stride, padding, dilation)
    return out if input.ndim == 3 else ops.squeeze(out, axis=0)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """torch.nn.functional.gumbel_softmax: softmax((logits + g) / tau) along dim with Gumbel
    noise g = -log(E), E ~ Exponential(1) (new draws per call, from eager's generator); hard:
    the one-hot of each argmax in the forward pass, the soft sample's gradient in backward
    (y_hard - y_soft.detach() + y_soft). eps is unused, as in torch."""
    from dualgrad.eager.factories import empty_like
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim=dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim=dim, keepdim=True)
    y_hard = ops.zeros_like(y_soft).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    return _unbatched(ops.max_pool2d, input, 2, kernel_size, stride, padding, dilation,
                      ceil_mode, return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    return _unbatched(ops.max_pool1d, input, 1, kernel_size, stride, padding, dilation,
                      ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    return _unbatched(ops.avg_pool2d, input, 2, kernel_size, stride, padding, ceil_mode,
                      count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):
    return _unbatched(ops.avg_pool1d, input, 1, kernel_size, stride, padding, ceil_mode,
                      count_include_pad)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    return _unbatched(ops.adaptive_avg_pool2d, input, 2, output_size)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    return _unbatched(ops.adaptive_avg_pool1d, input, 1, output_size)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    return _unbatched(ops.adaptive_max_pool2d, input, 2, output_size, return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    return _unbatched(ops.adaptive_max_pool1d, input, 1, output_size, return_indices)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    return ops.interpolate(input, size, scale_factor, mode, align_corners,
                           recompute_scale_factor, antialias)


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    return _unbatched(ops.pixel_shuffle, input, 2, upscale_factor)


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    return _unbatched(ops.pixel_unshuffle, input, 2, downscale_factor)


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm: statistics per channel (dim 1) of (N, C, ...) input.

    training=True normalises with the batch's mean and biased variance and, when running
    buffers are given, updates them in place: running = (1 - momentum) * running + momentum *
    batch, with the UNBIASED batch variance for running_var (as torch). Otherwise it
    normalises with running_mean and running_var.
    """
    if input.numel() == 0:
        return input * 1     # NOTE: torch's result for an empty input: empty, not an error
    if not training:
        out = ops.batch_norm(input, running_mean, running_var, weight, bias, eps=eps)
        if _is_half(input):     # NOTE: ops.batch_norm has checked the shapes
            out = _half_batch_norm(input, weight, bias, eps, running_mean, running_var)
        return out
    shape = tuple(input.shape)
    axes = (0,) + tuple(range(2, len(shape)))
    n = int(np.prod([shape[a] for a in axes if a < len(shape)], dtype=np.int64))
    if n == 1:
        raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                         f"got input of size {shape}")
    mean, var = ops.moments(input, axes)
    out = ops.batch_norm(input, mean, var, weight, bias, eps=eps)   # checks shapes first
    if _is_half(input):
        out = _half_batch_norm(input, weight, bias, eps)
    if running_mean is not None:
        _update_running(running_mean, mean, momentum)
    if running_var is not None:
        _update_running(running_var, var * (n / (n - 1)), momentum)
    return out


def _is_half(x):
    return np.dtype(x.dtype) in HALF


def _half_batch_norm(x, weight, bias, eps, running_mean=None, running_var=None):
    """batch_norm of a float16 or bfloat16 input as torch's CPU kernel rounds it (torch 2.13,
    checked bit for bit on random inputs, tests/eager/test_half_kernels.py): float32 statistics
    of which the mean and 1/sqrt(var + eps) are rounded to x's dtype when computed from the
    batch (bfloat16 rounds the sum of squares and the variance too), then
    x * alpha + beta per channel in one fused multiply-add, alpha = invstd * weight and
    beta = bias - mean * alpha in float32. Without running statistics, the batch's."""
    f32, dt = np.dtype("float32"), np.dtype(x.dtype)
    c, rest = x.shape[1], (1,) * (x.ndim - 2)
    if running_mean is not None:
        mean = ops.cast(running_mean, f32)
        invstd = 1.0 / ops.sqrt(ops.cast(running_var, f32) + np.float32(eps))
    else:
        axes = (0,) + tuple(range(2, x.ndim))
        n = x.numel() // c
        xf = ops.cast(x, f32)
        mean32 = ops.sum(xf, axis=axes) / np.float32(n)
        var = ops.sum(ops.square(xf - ops.reshape(mean32, (1, c) + rest)), axis=axes)
        if dt != np.dtype("float16"):
            var = ops.cast(ops.cast(ops.cast(var, dt), f32) / np.float32(n), dt)
        else:
            var = var / np.float32(n)
        invstd = ops.cast(1.0 / ops.sqrt(ops.cast(var, "float64") + eps), f32)
        mean, invstd = ops.cast(ops.cast(mean32, dt), f32), ops.cast(ops.cast(invstd, dt), f32)
    alpha = invstd if weight is None else invstd * ops.cast(weight, f32)
    beta = -mean * alpha if bias is None else ops.cast(bias, f32) - mean * alpha
    # NOTE: float64 holds x * alpha exactly: the sum rounded to float32 is the fused multiply-add
    wide = [ops.reshape(ops.cast(v, "float64"), (1, c) + rest) for v in (alpha, beta)]
    y = ops.cast(x, "float64") * wide[0] + wide[1]
    return ops.cast(ops.cast(y, f32), dt)


def _half_instance_norm(x, weight, bias, eps, running_mean=None, running_var=None):
    """instance_norm of a float16 or bfloat16 input as torch computes it: batch_norm of x
    seen as (1, N * C, ...) with the per-channel tensors repeated N times."""
    n, c = x.shape[0], x.shape[1]
    per = [None if v is None else ops.tile(v, (n,))
           for v in (weight, bias, running_mean, running_var)]
    y = _half_batch_norm(ops.reshape(x, (1, n * c) + tuple(x.shape[2:])), per[0], per[1], eps,
                         per[2], per[3])
    return ops.reshape(y, tuple(x.shape))


def _update_running(buf, batch, momentum):
    """running = (1 - momentum) * running + momentum * batch, in place, outside autograd."""
    if TRACING[0]:   # NOTE: a compile() trace records the write as an effect of the call
        _traced_write(lambda: buf.mul_(1.0 - momentum).add_(batch.detach() * momentum))
        return       # running_average's order
    # NOTE: plain arrays, nothing recorded: the buffers are not part of the autograd graph
    np.copyto(buf._array, running_average(buf._array, batch._array, momentum),
              casting="same_kind")


def count_batch(counter):
    """num_batches_tracked += 1, in place, outside autograd; under compile() an effect of
    every call, not a write done once while tracing."""
    if TRACING[0]:
        _traced_write(lambda: counter.add_(1))
    else:
        counter._array[...] += 1


def _traced_write(write):
    """Run an in-place buffer write with grad mode off, so the trace records it as an effect."""
    from ..core import _GRAD
    prev, _GRAD.enabled = _GRAD.enabled, False
    try:
        write()
    finally:
        _GRAD.enabled = prev


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    if n == 1 and weight is not None and bias is not None:   # NOTE: nn.LayerNorm's case
        return ops.layer_norm_last(input, weight, bias, eps=eps)   # one kernel each way
    return ops.layer_norm(input, weight, bias, eps=eps, normalized_ndim=n)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    return ops.group_norm(input, weight, bias, num_groups=num_groups, eps=eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its other dims (group_norm with one
    channel per group). With running buffers and use_input_stats, they take the batch's
    average of the instance statistics (the unbiased variance), as torch; use_input_stats=
    False normalises with the running statistics instead."""
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        out = ops.batch_norm(input, running_mean, running_var, weight, bias, eps=eps)
        return _half_instance_norm(input, weight, bias, eps, running_mean, running_var) \
            if _is_half(input) else out
    out = ops.group_norm(input, weight, bias, num_groups=input.shape[1], eps=eps)
    if _is_half(input):
        out = _half_instance_norm(input, weight, bias, eps)
    if running_mean is not None or running_var is not None:
        axes = tuple(range(2, input.ndim))
        n = int(np.prod([input.shape[a] for a in axes], dtype=np.int64))
        mean, var = ops.moments(input, axes)            # (N, C) each
        if running_mean is not None:
            _update_running(running_mean, ops.mean(mean, axis=0), momentum)
        if running_var is not None:
            _update_running(running_var, ops.mean(var, axis=0) * (n / max(n - 1, 1)), momentum)
    return out


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    _refuse("normalize", out=(out, None))
    return ops.normalize(input, p, dim, eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return ops.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return ops.pairwise_distance(x1, x2, p, eps, keepdim)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by integer indices; the padding_idx row gets no gradient.
    max_norm renormalises the rows input picks, in weight itself (torch's embedding_renorm_);
    scale_grad_by_freq divides each row's gradient by its count in input."""
    _refuse("embedding", sparse=(sparse, False))
    if max_norm is not None:
        renorm_rows(weight, input, max_norm, norm_type)
    out = ops.embedding(input, weight)
    if scale_grad_by_freq:
        out = ops.scale_grad(out, ops.expand_dims(freq_scale(input, weight), axis=-1))
    if padding_idx is None:
        return out
    padding_idx = padding_idx % weight.shape[0] if padding_idx < 0 else padding_idx
    pad = ops.expand_dims(ops.eq(input, padding_idx), axis=-1)
    return ops.where(pad, ops.stop_gradient(out), out)


def renorm_rows(weight, input, max_norm, norm_type):  # noqa: A002
    """The rows of weight that input picks scaled, in place and outside autograd, to a
    norm_type-norm of at most max_norm (torch's embedding_renorm_: the norm in weight's dtype,
    the scale max_norm / (norm + 1e-7) in double, then rounded to weight's dtype)."""
    from ..grad_mode import no_grad
    with no_grad():
        norm = ops.cast(ops.norm(weight, ord=norm_type, axis=1, keepdims=True), np.float64)
        picked = ops.gt(ops.expand_dims(_counts(input, weight), axis=-1), 0.0)
        scale = ops.where(ops.logical_and(picked, ops.gt(norm, max_norm)),
                          max_norm / (norm + 1e-7), 1.0)
        weight.mul_(ops.cast(scale, weight.dtype))


def _counts(input, weight):  # noqa: A002
    """How many times input holds each row index of weight (float64, one per row)."""
    flat = ops.reshape(input, (-1,))
    return ops.take_grad(ops.ones_like(ops.cast(flat, np.float64)), flat,
                         np.zeros(weight.shape[0]), axis=0)


def freq_scale(input, weight):  # noqa: A002
    """1 / (the count in input of each of its indices), in weight's dtype: the factor torch's
    scale_grad_by_freq puts on each row's gradient."""
    return ops.cast(1.0 / ops.take(_counts(input, weight), input, axis=0), weight.dtype)


def _symbolic(shape):
    from dualgrad.ops.symbolic import Dim
    return any([isinstance(d, Dim) for d in shape])


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _inplace(input, inplace, "dropout", ops.dropout, p, training)


def _channel_dropout(x, p, training):
    """Zero whole channels (dim 1) with probability p, scale the rest by 1 / (1 - p)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
    from ..factories import zeros   # NOTE: a meta mask when x's shape is symbolic
    keep = ops.rand_like(zeros(shape) if _symbolic(shape) else np.zeros(shape, np.float32)) >= p
    return ops.where(keep, x * (1.0 / (1.0 - p)), 0.0)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Channel dropout of (N, C, H, W) input (or (N, C, L), as torch does with a warning)."""
    if input.ndim not in (3, 4):
        raise ValueError(f"dropout2d: expected a 3-d or 4-d input, got {tuple(input.shape)}")
    return _inplace(input, inplace, "dropout2d", _channel_dropout, p, training)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Channel dropout of (N, C, L) input, or of unbatched (C, L) (each row a channel)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a "
                           f"{input.ndim}D input. Note that dropout1d exists to provide "
                           f"channel-wise dropout on inputs with 1 spatial dimension, a "
                           f"channel dimension, and an optional batch dimension (i.e. 2D or "
                           f"3D inputs).")
    if input.ndim == 2:
        return _inplace(input, inplace, "dropout1d", _channel_dropout_unbatched, p, training)
    return _inplace(input, inplace, "dropout1d", _channel_dropout, p, training)


def _channel_dropout_unbatched(x, p, training):
    return ops.squeeze(_channel_dropout(ops.expand_dims(x, axis=0), p, training), axis=0)


def one_hot(tensor, num_classes=-1):
    """Class indices as int64 one-hot rows; num_classes=-1 takes the largest index + 1."""
    if num_classes == -1:
        num_classes = int(np.max(np.asarray(tensor))) + 1
    return ops.one_hot(tensor, num_classes, dtype="int64")


# -- the dtypes torch's losses take for a target ------------------------------------------------
def _dt(x):
    # NOTE: the dtype only (a compile() tracer has no values to read)
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _class_indices(target):
    """torch's nll_loss and cross_entropy take class indices of int64 or uint8 only."""
    dt = _dt(target)
    if dt.kind in "biu" and dt not in (np.dtype(np.int64), np.dtype(np.uint8)):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{scalar_type(dt)}")


def _same_dtype_target(input, target):  # noqa: A002
    """binary_cross_entropy: a target of the input's dtype only."""
    if _dt(target) != _dt(input):
        raise RuntimeError(f"Found dtype {scalar_type(_dt(target))} but expected "
                           f"{scalar_type(_dt(input))}")


def _in_input_dtype(loss, input):  # noqa: A002
    """huber_loss and soft_margin_loss write their result in the input's dtype (computed in
    the promoted one), as torch's kernels do."""
    return loss if loss.dtype == _dt(input) else ops.cast(loss, _dt(input))


@keeps_fp32
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy: logits (N, C) or (N, C, d1, ...) and class indices
    (N, ...) or class probabilities shaped like the logits; weight, ignore_index and
    label_smoothing as torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _class_indices(target)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    if ignore_index >= 0 and _dt(target).kind == "f":
        raise RuntimeError("ignore_index is not supported for floating point target")
    return ops.cross_entropy(input, target, reduction=reduction, weight=weight,
                             ignore_index=ignore_index, label_smoothing=label_smoothing,
                             axis=min(1, input.ndim - 1))


def _weighted(name, loss, weight, reduction, by_weight=True):
    """torch's weighted elementwise losses: weight shaped like the input; 'mean' divides the
    weighted sum by the sum of the weights (huber_loss: by the element count, as torch)."""
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError(f"{name}: Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return ops.sum(loss) / ops.sum(weight) if by_weight else ops.mean(loss)
    return ops.sum(loss) if reduction == "sum" else _none(reduction, loss)


def _none(reduction, loss):
    if reduction != "none":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return loss


@keeps_fp32
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
             weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        return ops.mse_loss(input, target, reduction=reduction)
    return _weighted("mse_loss", ops.mse_loss(input, target, reduction="none"), weight,
                     reduction)


@keeps_fp32
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
            weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair("l1_loss", input, target)  # noqa: A001
    if weight is None:
        return ops.l1_loss(input, target, reduction=reduction)
    return _weighted("l1_loss", ops.l1_loss(input, target, reduction="none"), weight,
                     reduction)


@keeps_fp32
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
                   beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair("smooth_l1_loss", input, target)  # noqa: A001
    return ops.smooth_l1_loss(input, target, reduction=reduction, beta=beta)


@keeps_fp32
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):  # noqa: A002
    input, target = _broadcast_pair("huber_loss", input, target)  # noqa: A001
    if weight is None:
        return _in_input_dtype(ops.huber_loss(input, target, reduction=reduction, delta=delta),
                               input)
    return _in_input_dtype(_weighted("huber_loss", ops.huber_loss(
        input, target, reduction="none", delta=delta), weight, reduction, by_weight=False), input)


@keeps_fp32
def kl_div(input, target, size_average=None, reduce=None, reduction="mean",  # noqa: A002
           log_target=False):
    legacy = size_average is not None or reduce is not None
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean" and not legacy:   # NOTE: torch's, for an explicit 'mean' only
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning,
                      stacklevel=user_stacklevel())
    if _dt(input).kind in "biu" or _dt(target).kind in "biu":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if _dt(input) == _dt(target):
        return ops.kl_div(input, target, reduction=reduction, log_target=log_target)
    # NOTE: torch's xlogy(target, target) - target * input: the first term rounded to a half
    # target's own dtype before the promoted subtraction
    from ..pointwise import xlogy
    loss = ops.exp(target) * (target - input) if log_target else \
        xlogy(target, target) - target * input
    if reduction == "batchmean":
        return ops.sum(loss) / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


@keeps_fp32
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,  # noqa: A002
             reduce=None, reduction="mean"):
    """Negative log-likelihood: minus input at each target class (classes in dim 1), with
    torch's weight and ignore_index; input need not be normalised log-probabilities."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _class_indices(target)
    return ops.nll_loss(input, target, reduction=reduction, weight=weight,
                        ignore_index=ignore_index)


@keeps_fp32
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), target +1 or -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(ops.relu(-target * (input1 - input2) + margin), reduction)


@keeps_fp32
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(anchor, positive) - d(anchor, negative) + margin) with the p-norm distance
    (swap: the smaller of d(anchor, negative) and d(positive, negative))."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d_pos = ops.pairwise_distance(anchor, positive, p, eps, False)
    d_neg = ops.pairwise_distance(anchor, negative, p, eps, False)
    if swap:
        d_neg = ops.minimum(d_neg, ops.pairwise_distance(positive, negative, p, eps, False))
    return _reduce(ops.relu(margin + d_pos - d_neg), reduction)


@keeps_fp32
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1 (the
    cosine along the last dim, each squared norm plus 1e-12, as torch)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    dot = ops.sum(input1 * input2, axis=-1)
    norms = (ops.sum(input1 * input1, axis=-1) + 1e-12) * (ops.sum(input2 * input2, axis=-1) + 1e-12)
    cos = dot / ops.sqrt(norms)
    loss = ops.where(target == 1, 1.0 - cos, 0.0) + ops.where(target == -1,
                                                               ops.relu(cos - margin), 0.0)
    return _reduce(loss, reduction)


def _reduce(loss, reduction):
    if reduction == "mean":
        return ops.mean(loss)
    return ops.sum(loss) if reduction == "sum" else _none(reduction, loss)


@keeps_fp32
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,  # noqa: A002
                                     reduce=None, reduction="mean", pos_weight=None):
    """BCE on logits; weight rescales each element's loss, pos_weight the positive term
    (broadcast along the last dim, as torch)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # NOTE: torch computes (1 - target).mul_(input)...: the result has the target's dtype,
    # which an integer or bool target cannot hold
    t_dt = _dt(target)
    if t_dt.kind == "b":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if t_dt.kind in "iu":
        raise RuntimeError(f"result type {scalar_type(_dt(input))} can't be cast to the "
                           f"desired output type {scalar_type(t_dt)}")
    if weight is None and pos_weight is None:
        loss = ops.binary_cross_entropy_with_logits(input, target, reduction=reduction)
        return loss if loss.dtype == t_dt else ops.cast(loss, t_dt)
    if pos_weight is None:
        loss = ops.binary_cross_entropy_with_logits(input, target, reduction="none")
    else:   # (1 - t) x + (1 + (pw - 1) t) softplus(-x), torch's stable form
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * ops.softplus(-input)
    loss = _reduce(loss if weight is None else loss * weight, reduction)
    return loss if loss.dtype == t_dt else ops.cast(loss, t_dt)


@keeps_fp32
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _same_dtype_target(input, target)
    if weight is None:
        return ops.binary_cross_entropy(input, target, reduction=reduction)
    loss = ops.binary_cross_entropy(input, target, reduction="none")
    return _reduce(loss * weight, reduction)


@lowers
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


@keeps_fp32
def pad(input, pad, mode="constant", value=0.0):  # noqa: A002 - torch's names
    """torch.nn.functional.pad: `pad` lists (left, right) pairs from the last dim backwards;
    mode "constant" (value), "reflect" (mirrored without the edge), "replicate" (the edge
    repeated) or "circular" (wrapped around). The last three are gathers along each padded
    dim, so gradients flow back to the positions each value came from."""
    if mode not in _PAD_INDEX and mode != "constant":
        raise NotImplementedError(f"F.pad(mode={mode!r}) is not supported by dualgrad; modes: "
                                  f"constant, reflect, replicate, circular")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"F.pad: padding length {len(pad)} must be even and at most "
                         f"2 * {input.ndim}")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return ops.pad(input, tuple(pairs), value=value)
    out = input
    for axis, (lo, hi) in enumerate(pairs):
        if lo or hi:
            n = input.shape[axis]
            idx = _PAD_INDEX[mode](np.arange(-lo, n + hi), n, lo, hi)
            out = ops.take(out, idx.astype(np.int64), axis=axis)
    return out


def _reflect(i, n, lo, hi):
    if max(lo, hi) >= n:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({lo}, {hi}) at dimension of "
                           f"input {n}")
    return mirrored(i, n)


def _circular(i, n, lo, hi):
    if max(lo, hi) > n:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if n + lo + hi < 0:
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    # NOTE: a negative width crops first, and the rest wraps around what is left (torch's);
    # reflect and replicate mirror and repeat at the input's own ends
    start, stop = max(-lo, 0), n - max(-hi, 0)
    return start + (i - start) % max(stop - start, 1)


_PAD_INDEX = {"reflect": _reflect, "replicate": lambda i, n, lo, hi: np.clip(i, 0, n - 1),
              "circular": _circular}
