"""torch.linalg's decompositions and solvers (and torch.cholesky, logdet, pinverse, svd,
matrix_exp, triangular_solve, …) over the LAPACK-backed ops of ops/linalg_np.py, with
torch's result namedtuples and float64 gradients as torch's.

>>> from dualgrad import eager as torch
>>> a = torch.tensor([[4.0, 2.0], [2.0, 3.0]])
>>> torch.linalg.det(a).item(), torch.linalg.solve(a, torch.tensor([2.0, 1.0])).tolist()
(8.0, [0.5, 0.0])
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from dualgrad.eager.amp import keeps_fp32, lowers
from dualgrad.ops.rules import floating

from dualgrad import ops

from .functions import _arr, _no_grad_tensor, _t, diagonal as _diagonal

SlogdetResult = namedtuple("slogdet", "sign logabsdet")
EighResult = namedtuple("eigh", "eigenvalues eigenvectors")
SvdResult = namedtuple("svd", "U S Vh")
TorchSvdResult = namedtuple("svd", "U S V")
InvExResult = namedtuple("inv_ex", "inverse info")
SolveExResult = namedtuple("solve_ex", "result info")
CholeskyExResult = namedtuple("cholesky_ex", "L info")
QrResult = namedtuple("qr", "Q R")
LdlResult = namedtuple("ldl_factor", "LD pivots")
LdlExResult = namedtuple("ldl_factor_ex", "LD pivots info")
LstsqResult = namedtuple("lstsq", "solution residuals rank singular_values")
TriangularSolveResult = namedtuple("triangular_solve", "solution cloned_coefficient")


def _float(name, A):  # noqa: N803 - torch's argument names
    a = _t(A)
    if not floating(a.dtype):
        raise RuntimeError(f"linalg.{name}: Expected a floating point tensor as input. Got "
                           f"{a.dtype}")
    return a


def _square(name, A):  # noqa: N803
    a = _float(name, A)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they "
                           f"are {a.shape[-2] if a.ndim > 1 else a.ndim} by "
                           f"{a.shape[-1] if a.ndim else 0} matrices")
    return a


def _info(a):
    return _no_grad_tensor(np.zeros(tuple(a.shape[:-2]), np.int32))


def _empty_batch(a, fn):
    """fn(a), or an empty result of a's shape when a has no elements (LAPACK wants one)."""
    return a * 1.0 if a.numel() == 0 else fn(a)


# -- inverse and determinant -------------------------------------------------------------------
@keeps_fp32
def inv(A, *, out=None):  # noqa: N803
    return _empty_batch(_square("inv", A), ops.inv)


def inv_ex(A, *, check_errors=False, out=None):  # noqa: N803
    a = _square("inv_ex", A)
    return InvExResult(inv(a), _info(a))


def slogdet(A, *, out=None):  # noqa: N803
    a = _square("slogdet", A)
    if a.numel() == 0:
        ones = ops.reshape(ops.sum(a, axis=(-2, -1)), tuple(a.shape[:-2])) + 1.0
        return SlogdetResult(ops.stop_gradient(ones), ones * 0.0)
    return SlogdetResult(ops.det_sign(a), ops.logabsdet(a))


def det(A, *, out=None):  # noqa: N803
    sign, logabs = slogdet(A)
    return sign * ops.exp(logabs)


def logdet(input):  # noqa: A002
    """log(det(A)): NaN for a negative determinant, -inf for a zero one."""
    sign, logabs = slogdet(input)
    return ops.where(ops.lt(sign, 0), math.nan, logabs)


# -- solvers -----------------------------------------------------------------------------------
def _vector_rhs(a, b):
    """torch's rule: B is a batch of vectors when it has one dim fewer than A and its shape
    is A's without the last dim (or B is 1-D)."""
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


@keeps_fp32
def solve(A, B, *, left=True, out=None):  # noqa: N803
    a, b = _square("solve", A), _t(B)
    if not left:   # X A = B  <=>  A^T X^T = B^T
        return solve(a.mT, b.mT).mT
    vec = _vector_rhs(a, b)
    b2 = ops.expand_dims(b, axis=-1) if vec else b
    if a.dtype != b2.dtype:
        dt = np.promote_types(a.dtype, b2.dtype)
        a, b2 = ops.cast(a, dt), ops.cast(b2, dt)
    if a.numel() == 0 or b2.numel() == 0:   # NOTE: LAPACK wants elements; empty, on both's tape
        x = b2 + ops.sum(a, axis=(-2, -1), keepdims=True) * 0.0
    else:
        x = ops.solve(a, b2)
    return ops.squeeze(x, axis=-1) if vec else x


def solve_ex(A, B, *, left=True, check_errors=False, out=None):  # noqa: N803
    return SolveExResult(solve(A, B, left=left), _info(_t(A)))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):  # noqa: N803
    """Through the triangle of A alone (the other one is never read), as torch."""
    a, b = _float("solve_triangular", A), _t(B)
    tri = ops.triu(a) if upper else ops.tril(a)
    if unitriangular:
        n = a.shape[-1]
        tri = (ops.triu(a, 1) if upper else ops.tril(a, -1)) + np.eye(n, dtype=a.dtype)
    return solve(tri, b, left=left)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803
    a = _t(A)
    m = a.mT if transpose else a
    x = solve_triangular(m, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(x, a.clone())


def matrix_exp(A):  # noqa: N803
    return _empty_batch(_square("matrix_exp", A), ops.matrix_exp)


# -- Cholesky ----------------------------------------------------------------------------------
def cholesky(A, *, upper=False, out=None):  # noqa: N803 - linalg.cholesky
    a = _square("cholesky", A)
    L = _empty_batch(a, ops.cholesky)   # noqa: N806
    return L.mT if upper else L


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):  # noqa: N803
    return CholeskyExResult(cholesky(A, upper=upper), _info(_t(A)))


def torch_cholesky(input, upper=False):  # noqa: A002 - torch.cholesky
    return cholesky(input, upper=upper)


def cholesky_inverse(input, upper=False):  # noqa: A002
    L = _t(input)   # noqa: N806
    a = ops.matmul(L.mT, L) if upper else ops.matmul(L, L.mT)
    return inv(a)


def cholesky_solve(B, L, upper=False):  # noqa: N803
    L = _t(L)   # noqa: N806
    a = ops.matmul(L.mT, L) if upper else ops.matmul(L, L.mT)
    return solve(a, B)


# -- eigenvalues and singular values -----------------------------------------------------------
@keeps_fp32
def eigh(A, UPLO="L", *, out=None):  # noqa: N803
    a = _square("eigh", A)
    if UPLO == "U":   # NOTE: numpy reads the lower triangle: mirror the upper one into it
        a = a.mT
    return EighResult(ops.eigh_values(a), ops.eigh_vectors(a))


def eigvalsh(A, UPLO="L", *, out=None):  # noqa: N803
    a = _square("eigvalsh", A)
    return ops.eigh_values(a.mT if UPLO == "U" else a)


@keeps_fp32
def svd(A, full_matrices=True, *, driver=None, out=None):  # noqa: N803
    a = _float("svd", A)
    full = bool(full_matrices) and a.shape[-2] != a.shape[-1]
    return SvdResult(ops.svd_u(a, full=full), ops.svd_s(a), ops.svd_vh(a, full=full))


def torch_svd(input, some=True, compute_uv=True):  # noqa: A002 - torch.svd
    U, S, Vh = svd(input, full_matrices=not some)   # noqa: N806
    return TorchSvdResult(U, S, Vh.mT)


def svdvals(A, *, driver=None, out=None):  # noqa: N803
    return ops.svd_s(_float("svdvals", A))


@keeps_fp32
def qr(A, mode="reduced", *, out=None):  # noqa: N803
    """Q R with Q's columns orthonormal (LAPACK's signs); mode "reduced", "complete" (equal
    to reduced for m <= n... and square inputs) or "r" (Q empty)."""
    a = _float("qr", A)
    m, n = a.shape[-2:]
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    if mode == "complete" and m > n:
        raise NotImplementedError("linalg.qr(mode='complete') of a tall matrix is not "
                                  "supported by dualgrad")
    if a.numel() == 0:
        k = min(m, n)
        q = ops.zeros_like(np.zeros(tuple(a.shape[:-1]) + (k,), a.dtype)) + a.sum() * 0
        r = ops.zeros_like(np.zeros(tuple(a.shape[:-2]) + (k, n), a.dtype)) + a.sum() * 0
    else:
        q, r = ops.qr_q(a), ops.qr_r(a)
    if mode == "r":
        return QrResult(_no_grad_tensor(np.zeros(0, a.dtype)), r)
    return QrResult(q, r)


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares (for wide A, the least-norm) solution of A X = B, as pinv(A) B, with
    the fields torch's driver fills: residuals for tall full-rank A (not 'gelsy', the
    default), the rank (not 'gels'), singular values ('gelsd', 'gelss')."""
    a, b = _float("lstsq", A), _t(B)
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           f"gelsy, gelsd, gelss)")
    vec = b.ndim == a.ndim - 1
    b2 = ops.expand_dims(b, axis=-1) if vec else b
    x = ops.matmul(pinv(a, rtol=rcond), b2)
    m, n = a.shape[-2:]
    empty = _no_grad_tensor(np.zeros(0, a.dtype))
    if m > n and driver != "gelsy":
        r = ops.matmul(a, x) - b2
        residuals = ops.sum(r * r, axis=-2)
        residuals = ops.squeeze(residuals, axis=-1) if vec else residuals
    else:   # NOTE: empty, yet on the tape as torch's is
        residuals = ops.reshape(x, (-1,))[:0]
    rank = _no_grad_tensor(np.zeros(0, np.int64)) if driver == "gels" else matrix_rank(a)
    sv = ops.stop_gradient(ops.svd_s(a)) if driver in ("gelsd", "gelss") else empty
    return LstsqResult(ops.squeeze(x, axis=-1) if vec else x, residuals, rank, sv)


def _lapack(name, dt):
    import scipy.linalg.lapack as lapack   # NOTE: on first use
    return getattr(lapack, ("s" if dt == np.float32 else "d") + name)


def _batches(arr, tail):
    """arr as a stack of its last `tail` dims (its batch counted, not -1: a 0x0 matrix's)."""
    lead = arr.shape[:arr.ndim - tail]
    return arr.reshape((int(np.prod(lead)),) + arr.shape[arr.ndim - tail:])


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):  # noqa: N803
    """LAPACK's sytrf (lower): the compact L D in one matrix and its 1-based pivots (negative
    for a 2x2 block), as torch; no gradient (torch has none)."""
    a = _arr(_square("ldl_factor", A))
    if a.size == 0:
        return LdlExResult(_no_grad_tensor(a.copy()),
                           _no_grad_tensor(np.zeros(a.shape[:-1], np.int32)),
                           _no_grad_tensor(np.zeros(a.shape[:-2], np.int32)))
    lds, pivs, infos = [], [], []
    for m in _batches(a, 2):
        ldu, ipiv, info = _lapack("sytrf", a.dtype)(m, lower=1)
        lds.append(np.tril(ldu))
        pivs.append(ipiv)
        infos.append(info)
    shape = a.shape
    ld = np.array(lds, a.dtype).reshape(shape)
    piv = np.array(pivs, np.int32).reshape(shape[:-1])
    info = np.array(infos, np.int32).reshape(shape[:-2])
    return LdlExResult(_no_grad_tensor(ld), _no_grad_tensor(piv), _no_grad_tensor(info))


def ldl_factor(A, *, hermitian=False, out=None):  # noqa: N803
    ld, piv, _ = ldl_factor_ex(A, hermitian=hermitian)
    return LdlResult(ld, piv)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):  # noqa: N803
    """X with A X = B from ldl_factor's result (LAPACK's sytrs)."""
    ld, piv, b = _arr(LD), _arr(pivots), _arr(B)
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = np.broadcast_to(ld, batch + ld.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.zeros(b.shape, b.dtype)
    for k, (m, p, r) in enumerate(zip(_batches(ld, 2), _batches(piv, 1), _batches(b, 2))):
        if r.size and m.size:
            _batches(out, 2)[k] = _lapack("sytrs", ld.dtype)(m, p, r, lower=1)[0]
    return _no_grad_tensor(out)


def householder_product(A, tau, *, out=None):  # noqa: N803
    """The first n columns of H_0 H_1 ... H_(k-1), H_i = I - tau_i v_i v_i^T, v_i the i-th
    column of A below its diagonal with a 1 on it (LAPACK's orgqr)."""
    a, t = _float("householder_product", A), _t(tau)
    m, n = a.shape[-2:]
    if t.shape[-1] > n or n > m:
        raise RuntimeError(f"torch.linalg.householder_product: tau {tuple(t.shape)} must have "
                           f"at most n <= m entries for A {tuple(a.shape)}")
    q = ops.zeros_like(a[..., :, :1] * 0.0 + np.zeros(m, a.dtype)) + np.eye(m, dtype=a.dtype)
    rows = np.arange(m)
    for i in range(t.shape[-1]):
        v = ops.where(rows > i, a[..., :, i], np.where(rows == i, 1.0, 0.0).astype(a.dtype))
        qv = ops.matmul(q, ops.expand_dims(v, axis=-1))
        q = q - ops.expand_dims(ops.expand_dims(t[..., i], axis=-1), axis=-1) * (
            qv * ops.expand_dims(v, axis=-2))
    return q[..., :, :n]


def torch_qr(input, some=True):  # noqa: A002 - torch.qr
    return qr(input, "reduced" if some else "complete")


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):  # noqa: N803
    """V diag(1/s) U^T over the singular values above max(atol, rtol * s_max)."""
    a = _float("pinv", A)
    if a.numel() == 0:
        return ops.reshape(a, tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2])) * 1.0
    if hermitian:   # NOTE: the lower triangle alone, through eigh (as torch)
        v = ops.eigh_vectors(a)
        s = ops.eigh_values(a)
        u, vh = v, v.mT
    else:   # NOTE: its own gradient, which holds where the rank is deficient (torch's)
        tols = np.stack(np.broadcast_arrays(*_tolerances(a, atol, rtol)), axis=-1)
        return ops.pinv_tol(a, np.broadcast_to(tols, tuple(a.shape[:-2]) + (1, 2)))
    keep = np.abs(_arr(s)) > _tolerance(np.abs(_arr(s)), a, atol, rtol)
    inv_s = ops.where(keep, 1.0 / ops.where(keep, s, 1.0), 0.0)
    return ops.matmul(vh.mT * ops.expand_dims(inv_s, axis=-2), u.mT)


def _tolerance(s, a, atol, rtol):
    """max(atol, rtol * the largest singular value), torch's default rtol eps * max(m, n)
    when neither is given (atol and rtol may be tensors, one value per matrix)."""
    atol, rtol = _tolerances(a, atol, rtol)
    return np.maximum(atol, rtol * np.max(s, axis=-1, keepdims=True, initial=0.0))


def _tolerances(a, atol, rtol):
    """(atol, rtol) as float64 arrays, one value per matrix (batch + (1,)) or one for all."""
    atol = None if atol is None else np.asarray(_arr(atol), dtype=np.float64)
    rtol = None if rtol is None else np.asarray(_arr(rtol), dtype=np.float64)
    if rtol is None:
        rtol = np.float64(0.0) if atol is not None and np.all(atol > 0) else \
            np.float64(np.finfo(a.dtype).eps * max(a.shape[-2:]))
    atol = np.float64(0.0) if atol is None else atol
    atol = atol[..., None] if atol.ndim else atol
    rtol = rtol[..., None] if rtol.ndim else rtol
    return atol, rtol


@keeps_fp32
def pinverse(input, rcond=1e-15):  # noqa: A002
    return pinv(input, rtol=rcond)


@keeps_fp32
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):  # noqa: N803
    a = _arr(_float("matrix_rank", A))
    if a.size == 0:
        return _no_grad_tensor(np.zeros(a.shape[:-2], np.int64))
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    if tol is not None:
        atol, rtol = tol, 0.0
    return _no_grad_tensor((s > _tolerance(s, a, atol, rtol)).sum(axis=-1).astype(np.int64))


# -- products and shapes -----------------------------------------------------------------------
def matrix_power(A, n, *, out=None):  # noqa: N803
    a = _square("matrix_power", A) if n < 0 else _t(A)
    if n == 0:
        return ops.zeros_like(a) + np.eye(a.shape[-1], dtype=a.dtype)
    base = inv(a) if n < 0 else a
    out, k = None, abs(n)
    while k:   # NOTE: repeated squaring, as torch
        if k & 1:
            out = base if out is None else ops.matmul(out, base)
        k >>= 1
        if k:
            base = ops.matmul(base, base)
    return out


def chain_matmul(*matrices, out=None):
    """torch's deprecated form of linalg.multi_dot, taking the matrices as arguments (one
    matrix: itself), with torch's warning."""
    from .core import warn_once
    warn_once("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
              "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
              "more tensors rather than multiple parameters.", stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(list(matrices), out=out)


@lowers
def multi_dot(tensors, *, out=None):
    ts = [_t(t) for t in tensors]
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = ops.expand_dims(ts[0], axis=0)
    if last_vec:
        ts[-1] = ops.expand_dims(ts[-1], axis=-1)
    out = _chain(ts, _chain_order([t.shape[0] for t in ts] + [ts[-1].shape[1]]), 0,
                 len(ts) - 1)
    if first_vec:
        out = ops.squeeze(out, axis=0)
    if last_vec:
        out = ops.squeeze(out, axis=-1)
    return out


def _chain_order(p):
    """split[i][j]: where the product of matrices i..j (matrix k is p[k] x p[k + 1]) splits
    in the cheapest order: the textbook dynamic programme, first minimum kept, as torch's;
    three matrices by torch's own rule, (AB)C unless A(BC) costs strictly less."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    if n == 3:
        a, b, c, d = p
        split[0][1], split[1][2] = 0, 1
        split[0][2] = 0 if a * c * (b + d) > b * d * (a + c) else 1
        return split
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _chain(ts, split, i, j):
    """The product of ts[i..j] in split's order: each product rounded to the dtype, as
    torch's chain of mm (which matters in float16)."""
    if i == j:
        return ts[i]
    k = split[i][j]
    return ops.matmul(_chain(ts, split, i, k), _chain(ts, split, k + 1, j))


@lowers
def vecdot(x, y, *, dim=-1, out=None):
    """(x * y).sum(dim), as torch's: the products rounded to the dtype, summed as sum sums
    (float16 in float32, rounded once); x conjugated when complex, as torch's."""
    x = _t(x)
    return ((ops.conj(x) if x.dtype.kind == "c" else x) * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    return _diagonal(A, offset, dim1, dim2)


def linalg_cross(input, other, *, dim=-1, out=None):  # noqa: A002
    from .reductions import cross
    return cross(input, other, dim=dim)


def vander(x, *, N=None):  # noqa: N803
    """Columns x^0, x^1, ..., x^(N-1) of the last dim."""
    v = _t(x)
    v = ops.reshape(v, (1,)) if v.ndim == 0 else v
    v = ops.cast(v, np.int64) if v.dtype.kind in "biu" and v.dtype != np.int64 else v
    n = v.shape[-1] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return ops.expand_dims(v, axis=-1)[..., :0]
    cols = [ops.ones_like(v)] + [v] * (n > 1)
    for _ in range(2, n):
        cols.append(cols[-1] * v)
    return ops.stack(*cols, axis=-1)


def tensorinv(A, ind=2, *, out=None):  # noqa: N803
    a = _t(A)
    rows, cols = tuple(a.shape[:ind]), tuple(a.shape[ind:])
    m = ops.reshape(a, (math.prod(rows), math.prod(cols)))
    return ops.reshape(inv(m), cols + rows)


def tensorsolve(A, B, dims=None, *, out=None):  # noqa: N803
    a, b = _t(A), _t(B)
    if dims is not None:
        dims = [d % a.ndim for d in dims]
        a = a.permute(*[d for d in range(a.ndim) if d not in dims], *dims)
    x_shape = tuple(a.shape[b.ndim:])
    m = ops.reshape(a, (b.numel(), math.prod(x_shape)))
    return ops.reshape(solve(m, ops.reshape(b, (-1,))), x_shape)


LINALG = {"inv": inv, "inv_ex": inv_ex, "det": det, "slogdet": slogdet, "solve": solve,
          "solve_ex": solve_ex, "solve_triangular": solve_triangular, "cholesky": cholesky,
          "cholesky_ex": cholesky_ex, "eigh": eigh, "eigvalsh": eigvalsh, "svd": svd,
          "svdvals": svdvals, "qr": qr, "lstsq": lstsq, "ldl_factor": ldl_factor,
          "ldl_factor_ex": ldl_factor_ex, "ldl_solve": ldl_solve,
          "householder_product": householder_product, "pinv": pinv, "matrix_rank": matrix_rank,
          "matrix_power": matrix_power, "multi_dot": multi_dot, "vecdot": vecdot,
          "diagonal": diagonal, "cross": linalg_cross, "vander": vander,
          "tensorinv": tensorinv, "tensorsolve": tensorsolve, "matrix_exp": matrix_exp}

TORCH = {"cholesky": torch_cholesky, "cholesky_inverse": cholesky_inverse,
         "cholesky_solve": cholesky_solve, "logdet": logdet, "pinverse": pinverse,
         "svd": torch_svd, "qr": torch_qr, "matrix_exp": matrix_exp,
         "triangular_solve": triangular_solve,
         "det": det, "slogdet": slogdet, "inverse": inv, "matrix_power": matrix_power}
