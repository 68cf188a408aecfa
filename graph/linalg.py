"""`graph.linalg`: the `tf.linalg` namespace of tf.compat.v1 (the functions are defined in
math_ops.py and select_ops.py; `band_part` here).

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> with tf.Session() as s:
...     s.run(tf.linalg.band_part(tf.ones((3, 3)), 0, -1)).tolist()
[[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
"""
import numpy as np

from dualgrad import ops

from .core import convert_to_tensor
from .math_ops import l2_normalize, matmul, named, norm, reduce_sum
from .select_ops import einsum, tensordot

__all__ = ["band_part", "det", "diag", "diag_part", "inv", "einsum", "l2_normalize", "matmul",
           "matrix_transpose", "norm", "tensordot", "trace", "transpose"]


@named
def det(input):  # noqa: A002 - TF's name
    """tf.linalg.det / tf.matrix_determinant: the determinant of each trailing square matrix."""
    return ops.det(input)


@named
def inv(input, adjoint=False):  # noqa: A002 - TF's name
    """tf.linalg.inv / tf.matrix_inverse: the inverse of each trailing square matrix (of its
    transpose with adjoint=True; real tensors only)."""
    x = ops.matrix_transpose(input) if adjoint else input
    if np.dtype(x.dtype) == np.float16:   # NOTE: LAPACK has no half precision; TF computes it
        return ops.cast(ops.inv(ops.cast(x, np.float32)), np.float16)
    return ops.inv(x)


@named
def band_part(input, num_lower, num_upper):  # noqa: A002 - TF's name
    """Keep num_lower diagonals below the main one and num_upper above (-1: all of them)."""
    out = input
    if num_lower >= 0:
        out = ops.triu(out, -num_lower)
    if num_upper >= 0:
        out = ops.tril(out, num_upper)
    return out


@named
def matrix_transpose(a, conjugate=False):
    """Swap the last two dims (tf.linalg.matrix_transpose; real tensors only)."""
    return ops.matrix_transpose(a)


transpose = matrix_transpose


@named
def diag_part(input):  # noqa: A002 - TF's name
    """The main diagonal of each matrix in x's last two dims (tf.linalg.diag_part,
    tf.matrix_diag_part): (..., min(m, n))."""
    x = convert_to_tensor(input)
    nd = len(x.shape)
    if nd < 2:
        raise ValueError(f"diag_part: input must be at least 2-d, got shape {tuple(x.shape)}")
    return ops.diagonal(x, offset=0, axis1=nd - 2, axis2=nd - 1)


@named
def trace(x):
    """The sum of the main diagonal of each matrix in x's last two dims (tf.linalg.trace,
    tf.trace)."""
    return reduce_sum(diag_part(x), axis=-1)


@named
def diag(diagonal):
    """Square matrices with `diagonal` (..., n) on their main diagonal and zeros elsewhere
    (tf.linalg.diag, tf.matrix_diag): (..., n, n)."""
    d = convert_to_tensor(diagonal)
    n = d.shape[-1] if len(d.shape) else None
    if n is None:
        raise ValueError(f"diag: diagonal must be at least 1-d with its last dim known, got "
                         f"shape {tuple(d.shape)}")
    return ops.where(np.eye(n, dtype=bool), ops.expand_dims(d, axis=-1),
                     np.zeros((), d.dtype))
