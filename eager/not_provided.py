"""The one table of what `dualgrad.eager` does not do as PyTorch does, each row with its reason.

- `ABSENT`: names of PyTorch's op database (`op_db`, spelled as its entries name them:
  `linalg.cross`, `nn.functional.conv3d`, `cauchy` for `Tensor.cauchy_`) that dualgrad does not
  provide. Looking one up raises AttributeError with the reason, so `hasattr` is False:

  >>> from dualgrad import eager
  >>> hasattr(eager.linalg, "cross")
  False
- `DIFFERS`: entries dualgrad provides that still differ from torch somewhere, as
  `(entry, dtype, mode)` with `"*"` for every dtype or mode (mode "eager" or "compile").

docs/pytorch-compat.md shows this table (generated from it; tests/eager/test_opdb.py checks the
page and that every op_db entry is either provided and agrees with torch, or a row here).
"""
from __future__ import annotations

COMPLEX = "complex numbers: dualgrad has no complex dtypes"
LAPACK = ("a matrix decomposition, solver or inverse: dualgrad computes none (no LAPACK "
          "bindings with gradients)")
SPARSE = "sparse layouts: dualgrad's tensors are dense"
MASKED = "torch.masked (a prototype of masked reductions): not provided"
WINDOWS = "torch.signal.windows: not provided yet"
STRIDES = ("explicit strides and memory formats: dualgrad does not expose a tensor's strides "
           "(it stores NumPy arrays)")
COPY = "a *_copy / unsafe_* variant of a view (for torch's functionalization): not provided yet"
SPECIAL = "special function: not implemented yet"
THREE_D = "3-d convolution, pooling or padding: dualgrad's are 1-d and 2-d"
ATEN = "an ATen internal (torch.ops.aten or a leading underscore), not torch's public API"
CUDA = "torch.cuda.jiterator compiles CUDA kernels: CUDA only"
BF16 = "bfloat16: dualgrad has no bfloat16 dtype yet"
NOT_YET = "not implemented yet"

ABSENT = {
    "__rdiv__": NOT_YET,
    "_batch_norm_with_update": ATEN,
    "_chunk_cat": ATEN,
    "_native_batch_norm_legit": ATEN,
    "_segment_reduce": ATEN,
    "_softmax_backward_data": ATEN,
    "_unsafe_masked_index": ATEN,
    "_unsafe_masked_index_put_accumulate": ATEN,
    "_upsample_bilinear2d_aa": ATEN,
    "addbmm": NOT_YET,
    "alias_copy": COPY,
    "angle": COMPLEX,
    "as_strided": STRIDES,
    "as_strided_copy": COPY,
    "as_strided_scatter": STRIDES,
    "bfloat16": BF16,
    "broadcast_shapes": NOT_YET,
    "cauchy": NOT_YET,
    "cdouble": COMPLEX,
    "cfloat": COMPLEX,
    "chalf": COMPLEX,
    "cholesky": LAPACK,
    "cholesky_inverse": LAPACK,
    "cholesky_solve": LAPACK,
    "combinations": NOT_YET,
    "complex": COMPLEX,
    "conj": COMPLEX,
    "conj_physical": COMPLEX,
    "constant_pad_nd": ATEN,
    "cumulative_trapezoid": NOT_YET,
    "diagonal_copy": COPY,
    "empty_permuted": STRIDES,
    "empty_strided": STRIDES,
    "expand_copy": COPY,
    "fft.fft": COMPLEX,
    "fft.fft2": COMPLEX,
    "fft.fftn": COMPLEX,
    "fft.fftshift": COMPLEX,
    "fft.hfft": COMPLEX,
    "fft.hfft2": COMPLEX,
    "fft.hfftn": COMPLEX,
    "fft.ifft": COMPLEX,
    "fft.ifft2": COMPLEX,
    "fft.ifftn": COMPLEX,
    "fft.ifftshift": COMPLEX,
    "fft.ihfft": COMPLEX,
    "fft.ihfft2": COMPLEX,
    "fft.ihfftn": COMPLEX,
    "fft.irfft": COMPLEX,
    "fft.irfft2": COMPLEX,
    "fft.irfftn": COMPLEX,
    "fft.rfft": COMPLEX,
    "fft.rfft2": COMPLEX,
    "fft.rfftn": COMPLEX,
    "fill": NOT_YET,
    "frexp": SPECIAL,
    "gcd": SPECIAL,
    "geometric": NOT_YET,
    "geqrf": LAPACK,
    "gradient": NOT_YET,
    "grid_sampler_2d": ATEN,
    "grid_sampler_3d": ATEN,
    "hash_tensor": ATEN,
    "histogram": NOT_YET,
    "histogramdd": NOT_YET,
    "i0": SPECIAL,
    "igamma": SPECIAL,
    "igammac": SPECIAL,
    "imag": COMPLEX,
    "index_reduce": NOT_YET,
    "istft": COMPLEX,
    "jiterator_2inputs_2outputs": CUDA,
    "jiterator_4inputs_with_extra_args": CUDA,
    "jiterator_binary": CUDA,
    "jiterator_binary_return_by_ref": CUDA,
    "jiterator_unary": CUDA,
    "lcm": SPECIAL,
    "ldexp": SPECIAL,
    "linalg.cholesky": LAPACK,
    "linalg.cholesky_ex": LAPACK,
    "linalg.cond": LAPACK,
    "linalg.cross": LAPACK,
    "linalg.det": LAPACK,
    "linalg.diagonal": LAPACK,
    "linalg.eig": LAPACK,
    "linalg.eigh": LAPACK,
    "linalg.eigvals": LAPACK,
    "linalg.eigvalsh": LAPACK,
    "linalg.householder_product": LAPACK,
    "linalg.inv": LAPACK,
    "linalg.inv_ex": LAPACK,
    "linalg.ldl_factor": LAPACK,
    "linalg.ldl_factor_ex": LAPACK,
    "linalg.ldl_solve": LAPACK,
    "linalg.lstsq": LAPACK,
    "linalg.lu": LAPACK,
    "linalg.lu_factor": LAPACK,
    "linalg.lu_factor_ex": LAPACK,
    "linalg.lu_solve": LAPACK,
    "linalg.matrix_power": LAPACK,
    "linalg.matrix_rank": LAPACK,
    "linalg.multi_dot": LAPACK,
    "linalg.pinv": LAPACK,
    "linalg.qr": LAPACK,
    "linalg.slogdet": LAPACK,
    "linalg.solve": LAPACK,
    "linalg.solve_ex": LAPACK,
    "linalg.solve_triangular": LAPACK,
    "linalg.svd": LAPACK,
    "linalg.svdvals": LAPACK,
    "linalg.tensorinv": LAPACK,
    "linalg.tensorsolve": LAPACK,
    "linalg.vander": LAPACK,
    "linalg.vecdot": LAPACK,
    "log_normal": NOT_YET,
    "logdet": LAPACK,
    "lu": LAPACK,
    "lu_solve": LAPACK,
    "lu_unpack": LAPACK,
    "masked.amax": MASKED,
    "masked.amin": MASKED,
    "masked.argmax": MASKED,
    "masked.argmin": MASKED,
    "masked.cumprod": MASKED,
    "masked.cumsum": MASKED,
    "masked.log_softmax": MASKED,
    "masked.logaddexp": MASKED,
    "masked.logsumexp": MASKED,
    "masked.mean": MASKED,
    "masked.median": MASKED,
    "masked.norm": MASKED,
    "masked.normalize": MASKED,
    "masked.prod": MASKED,
    "masked.softmax": MASKED,
    "masked.softmin": MASKED,
    "masked.std": MASKED,
    "masked.sum": MASKED,
    "masked.var": MASKED,
    "matrix_exp": LAPACK,
    "max_pool2d_with_indices_backward": ATEN,
    "mvlgamma": SPECIAL,
    "narrow_copy": COPY,
    "native_batch_norm": ATEN,
    "native_dropout_backward": ATEN,
    "native_group_norm": ATEN,
    "native_layer_norm": ATEN,
    "new_empty_strided": STRIDES,
    "nextafter": SPECIAL,
    "nn.functional.adaptive_avg_pool3d": THREE_D,
    "nn.functional.adaptive_max_pool3d": THREE_D,
    "nn.functional.alpha_dropout": NOT_YET,
    "nn.functional.avg_pool3d": THREE_D,
    "nn.functional.bilinear": NOT_YET,
    "nn.functional.channel_shuffle": NOT_YET,
    "nn.functional.conv3d": THREE_D,
    "nn.functional.conv_transpose3d": THREE_D,
    "nn.functional.ctc_loss": NOT_YET,
    "nn.functional.dropout3d": THREE_D,
    "nn.functional.embedding_bag": NOT_YET,
    "nn.functional.feature_alpha_dropout": NOT_YET,
    "nn.functional.fractional_max_pool2d": NOT_YET,
    "nn.functional.fractional_max_pool3d": THREE_D,
    "nn.functional.gaussian_nll_loss": NOT_YET,
    "nn.functional.grid_sample": NOT_YET,
    "nn.functional.hardshrink": NOT_YET,
    "nn.functional.hinge_embedding_loss": NOT_YET,
    "nn.functional.linear_cross_entropy": NOT_YET,
    "nn.functional.local_response_norm": NOT_YET,
    "nn.functional.max_pool3d": THREE_D,
    "nn.functional.max_unpool1d": NOT_YET,
    "nn.functional.max_unpool2d": NOT_YET,
    "nn.functional.max_unpool3d": THREE_D,
    "nn.functional.multi_head_attention_forward": NOT_YET,
    "nn.functional.multi_margin_loss": NOT_YET,
    "nn.functional.multilabel_margin_loss": NOT_YET,
    "nn.functional.multilabel_soft_margin_loss": NOT_YET,
    "nn.functional.pdist": NOT_YET,
    "nn.functional.poisson_nll_loss": NOT_YET,
    "nn.functional.rms_norm": NOT_YET,
    "nn.functional.rrelu": NOT_YET,
    "nn.functional.soft_margin_loss": NOT_YET,
    "nn.functional.softshrink": NOT_YET,
    "nn.functional.threshold": NOT_YET,
    "nn.functional.triplet_margin_with_distance_loss": NOT_YET,
    "nn.functional.upsample_bilinear": NOT_YET,
    "nn.functional.upsample_nearest": NOT_YET,
    "nonzero_static": NOT_YET,
    "ormqr": LAPACK,
    "pca_lowrank": LAPACK,
    "permute_copy": COPY,
    "pinverse": LAPACK,
    "polar": COMPLEX,
    "qr": LAPACK,
    "real": COMPLEX,
    "renorm": NOT_YET,
    "resize_": NOT_YET,
    "resize_as_": NOT_YET,
    "resolve_conj": COMPLEX,
    "resolve_neg": COMPLEX,
    "scalar_tensor": NOT_YET,
    "signal.windows.bartlett": WINDOWS,
    "signal.windows.blackman": WINDOWS,
    "signal.windows.cosine": WINDOWS,
    "signal.windows.exponential": WINDOWS,
    "signal.windows.gaussian": WINDOWS,
    "signal.windows.general_cosine": WINDOWS,
    "signal.windows.general_hamming": WINDOWS,
    "signal.windows.hamming": WINDOWS,
    "signal.windows.hann": WINDOWS,
    "signal.windows.kaiser": WINDOWS,
    "signal.windows.nuttall": WINDOWS,
    "slice": NOT_YET,
    "sparse.mm": SPARSE,
    "sparse.sampled_addmm": SPARSE,
    "special.airy_ai": SPECIAL,
    "special.bessel_j0": SPECIAL,
    "special.bessel_j1": SPECIAL,
    "special.bessel_y0": SPECIAL,
    "special.bessel_y1": SPECIAL,
    "special.chebyshev_polynomial_t": SPECIAL,
    "special.chebyshev_polynomial_u": SPECIAL,
    "special.chebyshev_polynomial_v": SPECIAL,
    "special.chebyshev_polynomial_w": SPECIAL,
    "special.entr": SPECIAL,
    "special.erfcx": SPECIAL,
    "special.hermite_polynomial_h": SPECIAL,
    "special.hermite_polynomial_he": SPECIAL,
    "special.i0e": SPECIAL,
    "special.i1": SPECIAL,
    "special.i1e": SPECIAL,
    "special.laguerre_polynomial_l": SPECIAL,
    "special.legendre_polynomial_p": SPECIAL,
    "special.log_ndtr": SPECIAL,
    "special.modified_bessel_i0": SPECIAL,
    "special.modified_bessel_i1": SPECIAL,
    "special.modified_bessel_k0": SPECIAL,
    "special.modified_bessel_k1": SPECIAL,
    "special.ndtri": SPECIAL,
    "special.scaled_modified_bessel_k0": SPECIAL,
    "special.scaled_modified_bessel_k1": SPECIAL,
    "special.shifted_chebyshev_polynomial_t": SPECIAL,
    "special.shifted_chebyshev_polynomial_u": SPECIAL,
    "special.shifted_chebyshev_polynomial_v": SPECIAL,
    "special.shifted_chebyshev_polynomial_w": SPECIAL,
    "special.spherical_bessel_j0": SPECIAL,
    "special.xlog1py": SPECIAL,
    "special.zeta": SPECIAL,
    "split_with_sizes_copy": COPY,
    "squeeze_copy": COPY,
    "stft": COMPLEX,
    "svd": LAPACK,
    "svd_lowrank": LAPACK,
    "t_copy": COPY,
    "tensordot": NOT_YET,
    "to_sparse": SPARSE,
    "torch._scaled_mm": ATEN,
    "torch._scaled_mm_v2": ATEN,
    "torch.ops.aten._efficient_attention_forward": ATEN,
    "torch.ops.aten._flash_attention_forward": ATEN,
    "torch.ops.aten._safe_softmax.default": ATEN,
    "transpose_copy": COPY,
    "trapezoid": NOT_YET,
    "trapz": NOT_YET,
    "triangular_solve": LAPACK,
    "unbind_copy": COPY,
    "unfold_copy": COPY,
    "unravel_index": NOT_YET,
    "unsafe_chunk": COPY,
    "unsafe_split": COPY,
    "unsqueeze_copy": COPY,
    "view_as_complex": COMPLEX,
    "view_as_real": COMPLEX,
    "view_copy": COPY,
}

DIFFERS = {
    ("*", "bfloat16", "*", "*"): BF16,
    ("*", "*", "compile", "aliasing"): (
        "compile() returns its results as new tensors: a view of an input (transpose, "
        "narrow, split, ...) comes back as a copy, where torch.compile keeps the view"),
    # rows below: generated by `python -m tests.eager.opdb_summary --write-rows` from the
    # test's samples (the reason is the first difference seen); edit a reason freely
    ('__rpow__', '*', 'eager', 'gradient'):
        'float64: gradient of input 0: values differ (Tensor-likes are not close! Mismatched elements: 5 / 5 (100.0%) Greatest absolute difference: nan at index (0,) (up to 1e-07',
    ('__rpow__', '*', 'eager', 'result'):
        'int16, int32, int64, int8: raised KernelError: pow: failed on inputs (), (5,): Integers to negative integer powers are not allowed. (at tests/eager/opdb_harness.py:278)',
    ('addmm', '*', '*', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 1 / 6 (16.7%) Greatest absolute difference: 0.001953125 at index (0, 2) (up to 0.001 all',
    ('addmv', '*', 'eager', 'result'):
        "int16, int32, int64, int8, uint8: result: dtype float32 != torch's torch.int16",
    ('all', '*', '*', 'result'):
        "uint8: result: dtype bool != torch's torch.uint8",
    ('any', '*', '*', 'result'):
        "uint8: result: dtype bool != torch's torch.uint8",
    ('argsort', '*', '*', 'result'):
        'bool, float16, int8, uint8: result: values differ (Tensor-likes are not equal! Mismatched elements: 7999 / 8000 (100.0%) Greatest absolute difference: 7985 at index (7985,) Greatest relati',
    ('cdist', '*', '*', 'gradient'):
        "float64: gradient: dualgrad's result does not require grad where torch's does",
    ('ceil', '*', 'eager', 'aliasing'):
        "int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('cosh', '*', '*', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 8 / 20 (40.0%) Greatest absolute difference: 6.0 at index (12,) (up to 0.001 allowed) Gr',
    ('diagonal', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result does not change the input; torch's does",
    ('diff', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('dist', '*', 'eager', 'result'):
        'float16: result: values differ (Scalars are not close! Expected 32.8125 but got inf. Absolute difference: inf (up to 0.001 allowed) Relative difference: inf (up to 0.001',
    ('div.no_rounding_mode', '*', 'compile', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('einsum', '*', '*', 'result'):
        "uint8: result: dtype uint64 != torch's torch.int64",
    ('flip', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('fliplr', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('flipud', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('floor', '*', 'eager', 'aliasing'):
        "int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('full', '*', 'eager', 'result'):
        'uint8: raised OverflowError: Python integer -5 out of bounds for uint8',
    ('index_add', '*', '*', 'result'):
        'uint8: raised KernelError: mul: failed on inputs (1,), (): Python integer -1 out of bounds for uint8 (at tests/eager/opdb_harness.py:284)',
    ('index_select', '*', '*', 'result'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: raised InvalidArgumentError: take: failed on inputs (), (1,): tuple index out of range in node 'take' (op take) defined at tests/eager/opdb_harness.py:284 with ",
    ('kthvalue', '*', '*', 'result'):
        'int16, int32, int64, int8, uint8: result[1]: values differ (Tensor-likes are not equal! Mismatched elements: 5 / 25 (20.0%) Greatest absolute difference: 4 at index (4, 1) Greatest relative diff',
    ('lerp', '*', 'eager', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 1 / 25 (4.0%) Greatest absolute difference: 0.00244140625 at index (4, 0) (up to 0.001 a',
    ('linalg.norm.subgradients_at_zero', '*', 'eager', 'gradient'):
        "float64: gradient: dualgrad's result does not require grad where torch's does",
    ('linalg.vector_norm', '*', '*', 'result'):
        'float16: result: values differ (Scalars are not close! Expected 0.0673828125 but got 0.0701904296875. Absolute difference: 0.0028076171875 (up to 0.001 allowed) Relative',
    ('logcumsumexp', '*', 'eager', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 7 / 125 (5.6%) Greatest absolute difference: 0.3046875 at index (1, 0, 0) (up to 0.001 a',
    ('logsumexp', '*', '*', 'result'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: raised InvalidArgumentError: max: failed on inputs (): axis 0 is out of bounds for array of dimension 0 in node 'max' (op max, part of logsumexp) defined at tes",
    ('masked_fill', '*', '*', 'result'):
        "bool: result: dtype int64 != torch's torch.bool",
    ('min.reduction_with_dim', '*', '*', 'result'):
        'bool, uint8: raised InvalidArgumentError: neg: failed on inputs (5, 5, 5): The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logica',
    ('nan_to_num', '*', 'eager', 'aliasing'):
        "bool, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('nansum', '*', '*', 'result'):
        "uint8: result: dtype uint64 != torch's torch.int64",
    ('nn.functional.adaptive_avg_pool1d', '*', '*', 'result'):
        'float16, float32, float64: raised ValueError: setting an array element with a sequence. The requested array has an inhomogeneous shape after 1 dimensions. The detected shape was (2,) + in',
    ('nn.functional.adaptive_avg_pool2d', '*', '*', 'result'):
        'float16, float32, float64: result: values differ (Tensor-likes are not close! Mismatched elements: 2 / 280 (0.7%) Greatest absolute difference: 0.001953125 at index (0, 4, 2, 2) (up to 0.',
    ('nn.functional.adaptive_max_pool1d', '*', '*', 'result'):
        'float16, float32, float64: raised NotImplementedError: adaptive_max_pool2d(return_indices=True) is supported by dualgrad only when the output size divides the input size',
    ('nn.functional.adaptive_max_pool2d', '*', '*', 'result'):
        'float16, float32, float64: raised NotImplementedError: adaptive_max_pool2d(return_indices=True) is supported by dualgrad only when the output size divides the input size',
    ('nn.functional.avg_pool1d', '*', '*', 'result'):
        "float16, int64: raised InvalidArgumentError: unfold: failed on inputs (6, 1, 1, 9): float16 in node 'unfold' (op unfold, part of avg_pool2d) defined at tests/eager/opdb_harness",
    ('nn.functional.avg_pool2d', '*', '*', 'result'):
        "float16, int64: raised InvalidArgumentError: unfold: failed on inputs (3, 1, 11, 11): float16 in node 'unfold' (op unfold, part of avg_pool2d) defined at tests/eager/opdb_harne",
    ('nn.functional.batch_norm', '*', '*', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 2 / 125 (1.6%) Greatest absolute difference: 0.0078125 at index (4, 1, 4) (up to 0.001 a',
    ('nn.functional.conv_transpose2d', '*', '*', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 8 / 108 (7.4%) Greatest absolute difference: 0.0625 at index (0, 2, 0, 3) (up to 0.001 a',
    ('nn.functional.cosine_embedding_loss', '*', '*', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('nn.functional.group_norm', '*', 'eager', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 1 / 18 (5.6%) Greatest absolute difference: 0.0029296875 at index (0, 4, 2) (up to 0.001',
    ('nn.functional.hardtanh', '*', '*', 'result'):
        "int16, int32, int64, int8: result: dtype float64 != torch's torch.int16",
    ('nn.functional.instance_norm', '*', '*', 'result'):
        'float16, float32, float64: raised NotImplementedError: instance_norm with running statistics (track_running_stats=True) is not supported by dualgrad',
    ('nn.functional.interpolate.area', '*', '*', 'result'):
        "float16, float32, float64: raised NotImplementedError: interpolate(mode='area') is not supported by dualgrad; supported: ['bilinear', 'linear', 'nearest', 'nearest-exact']",
    ('nn.functional.interpolate.bicubic', '*', '*', 'result'):
        "float16, float32, float64, uint8: raised NotImplementedError: interpolate(mode='bicubic') is not supported by dualgrad; supported: ['bilinear', 'linear', 'nearest', 'nearest-exact']",
    ('nn.functional.interpolate.bilinear', '*', '*', 'result'):
        'uint8: result: values differ (Tensor-likes are not equal! Mismatched elements: 101302 / 101400 (99.9%) Greatest absolute difference: 254 at index (0, 1, 6, 19) Greates',
    ('nn.functional.interpolate.trilinear', '*', '*', 'result'):
        "float16, float32, float64: raised NotImplementedError: interpolate(mode='trilinear') is not supported by dualgrad; supported: ['bilinear', 'linear', 'nearest', 'nearest-exact']",
    ('nn.functional.layer_norm', '*', '*', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 1 / 6 (16.7%) Greatest absolute difference: 0.0012969970703125 at index (0, 1, 0) (up to',
    ('nn.functional.margin_ranking_loss', '*', 'compile', 'result'):
        "int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('nn.functional.max_pool1d', '*', '*', 'result'):
        "float16: raised InvalidArgumentError: unfold: failed on inputs (2, 1, 1, 3): float16 in node 'unfold' (op unfold, part of max_pool2d) defined at tests/eager/opdb_harness",
    ('nn.functional.max_pool2d', '*', '*', 'result'):
        "float16, int16, int32, int64, int8: raised InvalidArgumentError: unfold: failed on inputs (2, 1, 3, 7): float16 in node 'unfold' (op unfold, part of max_pool2d) defined at tests/eager/opdb_harness",
    ('nn.functional.nll_loss', '*', '*', 'result'):
        'float16, float32, float64: result: values differ (Tensor-likes are not close! Mismatched elements: 2 / 2 (100.0%) Greatest absolute difference: 4.8359375 at index (0,) (up to 0.001 allowe',
    ('nn.functional.pairwise_distance', '*', 'compile', 'result'):
        "int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('nn.functional.pixel_shuffle', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('nn.functional.pixel_unshuffle', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('nn.functional.relu6', '*', '*', 'result'):
        "int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.int16",
    ('nn.functional.softsign', '*', 'compile', 'result'):
        "int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('nn.functional.tanhshrink', '*', 'compile', 'result'):
        "int32, int64: result: dtype float64 != torch's torch.float32",
    ('nn.functional.triplet_margin_loss', '*', 'compile', 'result'):
        "int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('nn.functional.unfold', '*', '*', 'result'):
        "float16: raised InvalidArgumentError: unfold: failed on inputs (0, 1, 5, 5): float16 in node 'unfold' (op unfold) defined at tests/eager/opdb_harness.py:284 with input s",
    ('norm', '*', 'eager', 'gradient'):
        "float64: gradient: dualgrad's result does not require grad where torch's does",
    ('norm.nuc', '*', '*', 'result'):
        "float32, float64: raised ValueError: norm: ord must be a positive number, inf, -inf, 0 or 'fro', got 'nuc'",
    ('normal.number_mean', '*', '*', 'result'):
        "float16, float32, float64: raised TypeError: normal() got an unexpected keyword argument 'dtype'",
    ('polygamma.polygamma_n_0', '*', '*', 'gradient'):
        'float64: gradient: raised NotImplementedError: the gradient of trigamma (polygamma of order 2) is not implemented by dualgrad',
    ('polygamma.polygamma_n_0', '*', '*', 'result'):
        'bool, float16, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: polygamma of order 2 is not supported by dualgrad (orders 0 and 1 are)',
    ('polygamma.polygamma_n_1', '*', '*', 'gradient'):
        'float64: gradient: raised NotImplementedError: the gradient of trigamma (polygamma of order 2) is not implemented by dualgrad',
    ('polygamma.polygamma_n_1', '*', '*', 'result'):
        'bool, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: polygamma of order 2 is not supported by dualgrad (orders 0 and 1 are)',
    ('polygamma.polygamma_n_2', '*', '*', 'gradient'):
        'float64: gradient: raised NotImplementedError: the gradient of trigamma (polygamma of order 2) is not implemented by dualgrad',
    ('polygamma.polygamma_n_2', '*', '*', 'result'):
        'bool, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: polygamma of order 2 is not supported by dualgrad (orders 0 and 1 are)',
    ('polygamma.polygamma_n_3', '*', '*', 'gradient'):
        'float64: gradient: raised NotImplementedError: the gradient of trigamma (polygamma of order 2) is not implemented by dualgrad',
    ('polygamma.polygamma_n_3', '*', '*', 'result'):
        'bool, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: polygamma of order 2 is not supported by dualgrad (orders 0 and 1 are)',
    ('polygamma.polygamma_n_4', '*', '*', 'gradient'):
        'float64: gradient: raised NotImplementedError: the gradient of trigamma (polygamma of order 2) is not implemented by dualgrad',
    ('polygamma.polygamma_n_4', '*', '*', 'result'):
        'bool, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: polygamma of order 2 is not supported by dualgrad (orders 0 and 1 are)',
    ('reciprocal', '*', 'compile', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('repeat', '*', 'eager', 'aliasing'):
        'bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: writing through the result raised RuntimeError: logical_not_: unsupported operation: the tensor is a read-only view (e.g. made by expand); clone() it ',
    ('roll', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('rot90', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('round', '*', 'eager', 'aliasing'):
        "int16, int32, int64, int8, uint8: aliasing: a write through the result changes the input; torch's does not",
    ('rsqrt', '*', 'compile', 'result'):
        'bool, int32, int64: result: values differ (Tensor-likes are not close! Mismatched elements: 9 / 20 (45.0%) Greatest absolute difference: nan at index (0,) (up to 1e-05 allowed) Gre',
    ('scatter_reduce.amax', '*', '*', 'result'):
        'bool, int16, int32, int64, int8, uint8: result: values differ (Tensor-likes are not equal! Mismatched elements: 2 / 50 (4.0%) Greatest absolute difference: 1 at index (2, 4) Greatest relative differen',
    ('scatter_reduce.amin', '*', '*', 'result'):
        'bool, int16, int32, int64, int8, uint8: result: values differ (Tensor-likes are not equal! Mismatched elements: 7 / 50 (14.0%) Greatest absolute difference: 1 at index (1, 0) Greatest relative differe',
    ('scatter_reduce.prod', '*', '*', 'result'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: raised NotImplementedError: scatter_reduce(reduce='prod') is not supported by dualgrad",
    ('scatter_reduce.sum', '*', '*', 'result'):
        "bool: result: dtype int64 != torch's torch.bool",
    ('sinh', '*', '*', 'result'):
        'float16: result: values differ (Tensor-likes are not close! Mismatched elements: 195 / 400 (48.8%) Greatest absolute difference: 10.0 at index (2, 11) (up to 0.001 allow',
    ('slice_scatter', '*', '*', 'result'):
        "float16: raised InvalidArgumentError: where: failed on inputs (20, 20, 20), (20, 20, 20), (20, 20, 20): float16 in node 'where' (op where) defined at tests/eager/opdb_ha",
    ('sort', '*', '*', 'result'):
        'bool, float16, int8, uint8: result[1]: values differ (Tensor-likes are not equal! Mismatched elements: 7999 / 8000 (100.0%) Greatest absolute difference: 7985 at index (7985,) Greatest rel',
    ('special.ndtr', '*', 'compile', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('special.polygamma.special_polygamma_n_0', '*', '*', 'gradient'):
        'float64: gradient: raised NotImplementedError: the gradient of trigamma (polygamma of order 2) is not implemented by dualgrad',
    ('special.polygamma.special_polygamma_n_0', '*', '*', 'result'):
        'bool, float16, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: polygamma of order 2 is not supported by dualgrad (orders 0 and 1 are)',
    ('square', '*', '*', 'result'):
        "bool: result: dtype bool != torch's torch.int64",
    ('sum_to_size', '*', '*', 'result'):
        "bool, int16, int32, int8, uint8: result: dtype bool != torch's torch.int64",
    ('sum_to_size', '*', 'eager', 'aliasing'):
        "float16, float32, float64, int64: aliasing: a write through the result changes the input; torch's does not",
    ('tile', '*', 'eager', 'aliasing'):
        'bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: writing through the result raised RuntimeError: logical_not_: unsupported operation: the tensor is a read-only view (e.g. made by expand); clone() it ',
    ('to', '*', 'eager', 'aliasing'):
        "float64: aliasing: a write through the result changes the input; torch's does not",
    ('to', '*', 'eager', 'result'):
        'bool, float16, float32, int16, int32, int64, int8, uint8: raised NotImplementedError: to(memory_format=torch.channels_last) is not supported by dualgrad: its tensors are row-major (contiguous) only',
    ('topk', '*', '*', 'result'):
        'int16, int32, int64, int8, uint8: result[1]: values differ (Tensor-likes are not equal! Mismatched elements: 20 / 150 (13.3%) Greatest absolute difference: 4 at index (1, 7, 0) Greatest relative',
    ('trace', '*', '*', 'result'):
        "uint8: result: dtype uint64 != torch's torch.int64",
    ('tril', '*', '*', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.bool",
    ('triu', '*', '*', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.bool",
    ('true_divide', '*', 'compile', 'result'):
        "bool, int16, int32, int64, int8, uint8: result: dtype float64 != torch's torch.float32",
    ('unfold', '*', 'eager', 'aliasing'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: aliasing: a write through the result does not change the input; torch's does",
    ('xlogy', '*', 'compile', 'result'):
        "int32, int64: result: dtype float64 != torch's torch.float32",
    ('zero_', '*', '*', 'result'):
        "bool, float16, float32, float64, int16, int32, int64, int8, uint8: raised AttributeError: module 'torch' has no attribute 'zero_'",
}


def absent(namespace: str, name: str) -> AttributeError:
    """The AttributeError a module's __getattr__ raises for `namespace.name` ("" for
    torch.*): the table's reason when the name is a row, torch's wording otherwise."""
    full = f"{namespace}.{name}" if namespace else name
    torch_name = f"torch.{full}"
    why = ABSENT.get(full)
    inside = sorted(k for k in ABSENT if k.startswith(full + "."))
    if why is None and inside:       # a namespace none of whose names dualgrad provides
        why = ABSENT[inside[0]]
    if why is None:
        return AttributeError(f"module '{torch_name.rsplit('.', 1)[0]}' has no attribute "
                              f"'{name}'")
    return AttributeError(f"dualgrad does not provide {torch_name}: {why} "
                          f"(docs/pytorch-compat.md)")
