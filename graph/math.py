"""`graph.math`: the `tf.math` namespace of tf.compat.v1, names of functions that graph/
defines elsewhere (one definition each: these are the same objects).

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> tf.math.reduce_sum is tf.reduce_sum, tf.math.log1p is tf.log1p
(True, True)
"""
from dualgrad import ops

from .math_ops import (abs, add, add_n, argmax, argmin, ceil, cos, count_nonzero,  # noqa: A004
                       cumprod, cumsum, divide, equal, erf, exp, floor, floordiv, floormod, greater,
                       greater_equal, is_finite, is_inf, is_nan, l2_normalize, less,
                       less_equal, log, log1p, logical_and, logical_not, logical_or, maximum,
                       minimum, mod, multiply, named, negative, not_equal, old_names, pow,
                       reciprocal, reduce_all, reduce_any, reduce_logsumexp, reduce_max,
                       reduce_mean, reduce_min, reduce_prod, reduce_sum, round, rsqrt,
                       sigmoid, sign, sin, sqrt, square, squared_difference, subtract, tanh,
                       truediv)
from .math_ops import MATH_FROM_REGISTRY, div_no_nan, logical_xor, reduce_euclidean_norm, realdiv
from .nn import log_softmax, softmax, softplus, softsign, zero_fraction
from .segment_ops import (bincount, confusion_matrix, unsorted_segment_max,
                          unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
                          unsorted_segment_sqrt_n)
from .select_ops import in_top_k, segment_mean, segment_sum, top_k, unsorted_segment_sum

__all__ = [
    "abs", "add", "add_n", "argmax", "argmin", "ceil", "cos", "count_nonzero", "cumprod", "cumsum",
    "divide", "equal", "erf", "exp", "floor", "floordiv", "floormod", "greater",
    "greater_equal", "is_finite", "is_inf", "is_nan", "l2_normalize", "less", "less_equal",
    "log", "log1p", "log_sigmoid", "log_softmax", "logical_and", "logical_not", "logical_or",
    "maximum", "minimum", "mod", "multiply", "negative", "not_equal", "pow", "reciprocal",
    "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min",
    "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance", "round", "rsqrt", "sigmoid",
    "sign", "sin", "softmax", "softplus", "softsign", "sqrt", "square", "squared_difference",
    "subtract", "tanh", "truediv", "top_k", "in_top_k", "reduce_euclidean_norm", "realdiv",
    "zero_fraction", "segment_sum", "segment_mean", "unsorted_segment_sum", "divide_no_nan",
    "logical_xor", "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
    "unsorted_segment_mean", "unsorted_segment_sqrt_n", "bincount", "confusion_matrix",
]

divide_no_nan = div_no_nan   # NOTE: tf.math's name for tf.div_no_nan (tf.compat.v1 has both)


@named
def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), exact for large |x|."""
    return ops.logsigmoid(x)


@named
@old_names(keep_dims="keepdims")
def reduce_variance(input_tensor, axis=None, keepdims=False):
    """The biased variance over `axis` (divides by N), as tf.math.reduce_variance."""
    return ops.var(input_tensor, axis=axis, keepdims=bool(keepdims))


@named
@old_names(keep_dims="keepdims")
def reduce_std(input_tensor, axis=None, keepdims=False):
    return ops.sqrt(ops.var(input_tensor, axis=axis, keepdims=bool(keepdims)))


globals().update(MATH_FROM_REGISTRY)   # expm1, erfinv, bessel_i0e, …: declared by their ops
__all__ += list(MATH_FROM_REGISTRY)
