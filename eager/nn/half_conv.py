"""Transposed convolution of float16 and bfloat16 inputs as torch's CPU kernels round it.

torch (2.13) hands a transposed convolution to oneDNN, which accumulates in float32 and rounds
once (dualgrad's general op does the same), except where oneDNN cannot take it: a half dtype
the CPU gives oneDNN no support for (bfloat16 needs AVX-512 (F, BW, VL, DQ) or AVX-NE-CONVERT,
float16 AVX512-FP16 or AVX-NE-CONVERT: `onednn_supports`, read from the CPU's features as
torch's `_is_mkldnn_bf16_supported` / `_fp16_` read them), and any half input whose
output_padding is at least its stride. There torch takes its slow path: one matrix product per
sample and group, columns = weight^T @ input, each dot product accumulated in float32 and
rounded to the input's dtype; then col2im adds the columns into the zeroed output in that
dtype, kernel offset by kernel offset (each addition rounded); then the bias, added in float32
and rounded once. Computing it in float32 and rounding once differs from that in about one
element in five, so `slow_path` follows the same steps, bit for bit
(tests/eager/test_half_kernels.py, which also checks `onednn_supports` against torch's).
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from dualgrad import ops
from dualgrad.ops.rules import is_bfloat16


@functools.lru_cache(maxsize=None)
def onednn_supports(dtype_name):
    """Whether oneDNN (in torch's CPU build) takes `dtype_name` ('bfloat16' or 'float16') on
    this CPU, from its features as LLVM reads them (llvmlite comes with numba)."""
    from llvmlite import binding
    features = binding.get_host_cpu_features()

    def has(*names):
        return all(features.get(n, False) for n in names)
    if has("avxneconvert"):
        return True
    if dtype_name == "bfloat16":
        return has("avx512f", "avx512bw", "avx512vl", "avx512dq")
    return has("avx512fp16")


def takes_slow_path(x, weight, stride, output_padding, groups):
    """Whether torch computes this transposed convolution with its slow path (stride and
    output_padding: one int per spatial dim); arguments the slow path cannot take go to the
    general op, which raises the error that names what is wrong."""
    dt = np.dtype(x.dtype)
    if dt != np.float16 and not is_bfloat16(dt):
        return False
    if onednn_supports("bfloat16" if is_bfloat16(dt) else "float16") and \
            all(o < s for o, s in zip(output_padding, stride)):
        return False
    return x.ndim == weight.ndim and x.shape[1] == weight.shape[0] and groups >= 1 and \
        x.shape[1] % groups == 0


def slow_path(x, weight, bias, stride, padding, output_padding, groups, dilation):
    """x (N, C_in, *spatial) float16 or bfloat16, weight (C_in, C_out / groups, *kernel); the spatial
    arguments are tuples of one int per spatial dim."""
    f32, dt = np.dtype("float32"), np.dtype(x.dtype)
    n, cin, sp = x.shape[0], x.shape[1], tuple(x.shape[2:])
    k, coutg, nd = tuple(weight.shape[2:]), weight.shape[1], len(sp)
    out_sp = tuple((sp[d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k[d] - 1) +
                   output_padding[d] + 1 for d in range(nd))
    cing, kn, sn = cin // groups, int(np.prod(k)), int(np.prod(sp))
    xg = ops.reshape(ops.cast(x, f32), (n, groups, cing, sn))
    wg = ops.reshape(ops.cast(weight, f32), (1, groups, cing, coutg * kn))
    cols = ops.cast(ops.matmul(ops.transpose(wg, (0, 1, 3, 2)), xg), dt)   # (N, g, Cout*K, S)
    cols = ops.reshape(cols, (n, groups * coutg, kn) + sp)
    out = None
    for j, kk in enumerate(itertools.product(*(range(kd) for kd in k))):
        y = cols[:, :, j]
        for d in range(nd):
            y = _place(y, 2 + d, stride[d], kk[d] * dilation[d] - padding[d], out_sp[d])
        out = y if out is None else out + y    # NOTE: half additions: each one rounds
    if bias is not None:
        b = ops.reshape(ops.cast(bias, f32), (1, -1) + (1,) * nd)
        out = ops.cast(ops.cast(out, f32) + b, dt)
    return out


def _place(y, axis, stride, offset, length):
    """y's entries i along `axis` moved to i * stride + offset of a zero-filled axis of
    `length` (entries landing outside it dropped)."""
    size = y.shape[axis]
    if stride > 1:      # NOTE: zeros between the entries: (…, L, 1) padded to (…, L, stride)
        y = ops.expand_dims(y, axis=axis + 1)
        pads = [(0, 0)] * y.ndim
        pads[axis + 1] = (0, stride - 1)
        y = ops.reshape(ops.pad(y, tuple(pads)), y.shape[:axis] + (size * stride,) +
                        y.shape[axis + 2:])
    lo = min(max(offset, 0), length)
    if offset < 0:
        y = _slice(y, axis, -offset, y.shape[axis])
    keep = min(y.shape[axis], max(length - lo, 0))
    y = _slice(y, axis, 0, keep)
    pads = [(0, 0)] * y.ndim
    pads[axis] = (lo, length - lo - keep)
    return ops.pad(y, tuple(pads))


def _slice(y, axis, start, stop):
    index = [slice(None)] * y.ndim
    index[axis] = slice(start, stop)
    return y[tuple(index)]
