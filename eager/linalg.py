"""torch.linalg: the norms (`norm`, `vector_norm`, `matrix_norm`, differentiable as torch's).
The decompositions and solvers are eager/extra_linalg.py's; a name not provided raises
AttributeError with the reason (eager/not_provided.py), so `hasattr` is False.

>>> from dualgrad import eager as torch
>>> x = torch.tensor([[3.0, -4.0], [1.0, 0.0]])
>>> torch.linalg.norm(x).item() == torch.linalg.vector_norm(x).item(), \\
...     torch.linalg.vector_norm(x, ord=1, dim=1).tolist(), torch.linalg.matrix_norm(x, ord=1).item()
(True, [7.0, 1.0], 4.0)
"""
from __future__ import annotations

import math

from dualgrad import ops

from .amp import keeps_fp32
from .extra_linalg import LINALG, _float, inv
from .not_provided import absent

globals().update(LINALG)   # inv, det, solve, cholesky, eigh, svd, pinv, … (eager/extra_linalg.py)


def _cast(x, dtype):
    return x if dtype is None else ops.cast(x, dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The vector ord-norm over dim (every element by default): any positive ord, inf, -inf
    or 0."""
    if out is not None:
        raise NotImplementedError("linalg.vector_norm(out=) is not supported by dualgrad")
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return ops.norm(_cast(x, dtype), ord=ord, axis=axis, keepdims=keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: N803
    """The matrix norm over the two dims: 'fro', 1, -1 (max / min column sum of |A|), inf,
    -inf (max / min row sum); 'nuc', 2 and -2 from the singular values."""
    if out is not None:
        raise NotImplementedError("linalg.matrix_norm(out=) is not supported by dualgrad")
    A = _cast(A, dtype)
    if ord == "fro":
        return ops.norm(A, ord=2, axis=tuple(dim), keepdims=keepdim)
    rows, cols = (d % A.ndim for d in dim)
    if ord == -2 and 0 in (A.shape[rows], A.shape[cols]):
        raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
    if ord in ("nuc", 2, -2):
        return ops.singular_value_norm(A, ord, tuple(dim), keepdim)
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, over = (cols, rows) if abs(ord) == math.inf else (rows, cols)
    if ord < 0 and A.shape[over] == 0:   # NOTE: the dim torch's amin reports, after the sum
        raise IndexError(f"amin(): Expected reduction dim "
                           f"{over - (not keepdim and summed < over)} to have non-zero size.")
    sums = ops.sum(ops.abs(A), axis=summed, keepdims=True)
    # NOTE: the largest sum over an empty dim is 0, as torch's (sums of |A| are >= 0)
    out = ops.max(sums, axis=over, keepdims=True, initial=0.0) if ord > 0 else \
        ops.min(sums, axis=over, keepdims=True)
    return out if keepdim else ops.squeeze(out, axis=(rows, cols))


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: N803, A002
    """torch.linalg.norm: a vector norm (dim an int, or a 1-D input, or no ord and no dim:
    the 2-norm of every element) or a matrix norm (dim a pair, or a 2-D input with ord)."""
    if dim is None and ord is not None and A.ndim not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must "
                           "be 1D or 2D. Got " f"{A.ndim}D.")
    matrix = isinstance(dim, (list, tuple)) and len(dim) == 2 or \
        dim is None and ord is not None and A.ndim == 2
    if matrix:
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim,
                           keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


def __getattr__(name):
    raise absent("linalg", name)


__all__ = ["norm", "vector_norm", "matrix_norm", *LINALG]


@keeps_fp32
def cond(A, p=None):  # noqa: N803
    a = _float("cond", A)
    if p in (None, 2, -2):
        s = ops.svd_s(a)
        hi, lo = ops.max(s, axis=-1), ops.min(s, axis=-1)
        return hi / lo if p != -2 else lo / hi
    return matrix_norm(a, p) * matrix_norm(inv(a), p)
