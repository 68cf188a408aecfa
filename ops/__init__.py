"""dualgrad's one op library: every primitive defined once, interpreted by both engines.

>>> import numpy as np
>>> from dualgrad import ops
>>> ops.add(np.ones(2, np.float32), 1.0)
array([2., 2.], dtype=float32)
>>> sorted(ops.REGISTRY)[:3]
['abs', 'add', 'argmax']
"""
if __name__ != "dualgrad.ops":  # NOTE: a second copy would mean a second op registry
    raise ImportError(f"dualgrad's engines import under one root: write `from dualgrad import ops`, "
                      f"not `import {__name__}` (found {__file__})")
from .core import (ELEMENTWISE, FLOATING, REDUCTION, REGISTRY, ComplexError, DtypeError, KernelError, Op, Sample,
                   ShapeError, Spec, bind, fmt_shape, infer_spec, is_value, register, spec_of,
                   user_frame, where_str)
from .elementwise import (abs, add, atan2, cast, ceil, copy, cos, div, eq, erf, erfinv, exp, expm1,
                          floor,
                          floordiv, floormod, ge, gt, le, log, log1p, lt, round,
                          maximum, minimum, mul, ne, neg, pow, relu, sigmoid, sign, sin, truncatemod,
                          scale_grad, small_int_power, softplus, sqrt, stop_gradient, sub, tanh,
                          unbroadcast, where)
from .shape import (broadcast_like, broadcast_to, concat, concat_part, expand_dims, matrix_transpose,
                    expand_index, ones_like, pad, reshape, reshape_like, slice_, slice_grad,
                    reverse, squeeze, sum_to_like, take, take_grad, transpose, zeros_like)
from .reduce import argmax, count, cumprod, cumsum, max, prod, sum
from .nn import fold, generator, manual_seed, matmul, matmul_nt, one_hot, rand_like, unfold
from .index import argsort, gather, gather_grad, getitem
from .losses import cascade_sum, softmax_cross_entropy, softmax_cross_entropy_grad
from .pool import max_pool, max_pool_grad
from .lstm import lstm_cell_c, lstm_cell_c_grad, lstm_cell_h, lstm_cell_h_grad
from .norm import layer_norm_last, layer_norm_last_grad
from .lstm_sequence import lstm_seq, lstm_seq_grad
from .composite import (COMPOSITES, argmin, clamp, logical_and, logical_not, logical_or, rsqrt,
                        square, batch_norm, binary_cross_entropy,
                        binary_cross_entropy_with_logits, dropout,
                        embedding, flip, gelu, layer_norm, linear, log_softmax, logsumexp,
                        masked_fill, mean, min, moments, mse_loss, norm, roll,
                        silu, softmax, split, stack, tile, tril, triu, var)
from .nll import cross_entropy, nll_loss
from .conv import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
                   adaptive_max_pool2d, avg_pool1d, avg_pool2d, conv1d, conv2d,
                   conv_transpose2d, max_pool1d, max_pool2d, pixel_shuffle,
                   pixel_unshuffle)
from .resample import interpolate
from .sampling import grid_sample
from .activations import (celu, cosine_similarity, elu, glu, group_norm, hardsigmoid,
                          hardswish, hardtanh, huber_loss, kl_div, l1_loss, leaky_relu,
                          logsigmoid, mish, normalize, pairwise_distance, prelu, relu6, selu,
                          smooth_l1_loss, softsign, tanhshrink)
from .linalg import einsum
from .special import digamma, erfc, lgamma, polygamma, trigamma
from .draws import (dirichlet_grad, sample_binomial, sample_dirichlet, sample_poisson,
                    standard_gamma, standard_gamma_grad)
from .linalg_np import *  # noqa: E402,F401,F403 - inv, solve, cholesky, eigh_*, svd_*, matrix_exp
from .strided import as_strided, as_strided_within, diagonal, sliding_windows, strided_positions  # noqa: E402,F401
from .special_math import *  # noqa: E402,F401,F403 - i0, ndtri, bessel_j0, the polynomials, …
from .collective import all_reduce, all_reduce_many
from .complex_parts import angle, complex_, conj, imag, real, view_as_complex, view_as_real
from .fft import fft
from . import api, autodiff

__all__ = [n for n in dir() if not n.startswith("_")]
