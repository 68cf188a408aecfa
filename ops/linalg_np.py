"""Matrix functions with LAPACK kernels (numpy.linalg, scipy.linalg): inverse, log|det| and
the determinant's sign, solve, Cholesky, the symmetric eigendecomposition, the singular value
decomposition (its three factors as three ops), the matrix exponential. Each batches over the
leading dims; each gradient is the textbook rule written in op calls (torch's, in its real
case), so eager and graph differentiate them alike.

>>> import numpy as np
>>> from dualgrad import ops
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> ops.inv(a).round(3).tolist(), ops.cholesky(a).round(3).tolist()
([[0.375, -0.25], [-0.25, 0.5]], [[2.0, 0.0], [1.0, 1.414]])
"""
from __future__ import annotations

import numpy as np

from .core import Sample, ShapeError, Spec, fmt_shape, primitive, register
from .elementwise import eq, unbroadcast, where
from .nn import matmul
from .rules import broadcast
from .composite import tril
from .shape import concat, expand_dims, matrix_transpose, slice_, zeros_like

_SQ = (Sample(((3, 3),), domain=(0.5, 2.0)), Sample(((2, 4, 4),), domain=(0.5, 2.0)))


def _square(name):
    def infer(x, **_):
        if x.ndim is not None and (x.ndim < 2 or _differ(x.shape[-1], x.shape[-2])):
            raise ShapeError(f"{name}: expected a batch of square matrices, got "
                             f"{fmt_shape(x)}")
        return x
    return infer


def _differ(m, n):
    return m is not None and n is not None and m != n


def _T(x):
    return matrix_transpose(x)


def _register(name, infer, kernel, vjp, samples=_SQ):
    return primitive(register(name, infer, kernel, vjp, category="other", samples=samples,
                              ref=None))


# -- inverse, determinant ----------------------------------------------------------------------
inv = _register("inv", _square("inv"), np.linalg.inv,
                lambda g, x, out, **kw: (-matmul(_T(out), matmul(g, _T(out))),))


def _values_infer(x, **_):
    return Spec(x.shape[:-2], x.dtype)


def _logabsdet_kernel(x):
    return np.linalg.slogdet(x)[1].astype(np.asarray(x).dtype)


logabsdet = _register("logabsdet", _values_infer, _logabsdet_kernel,
                      lambda g, x, **kw: (expand_dims(expand_dims(g, axis=-1), axis=-1)
                                          * _T(inv(x)),))
det_sign = _register("det_sign", _values_infer,
                     lambda x: np.sign(np.linalg.det(x)).astype(np.asarray(x).dtype), None,
                     samples=tuple(Sample(s.args, domain=s.domain, grad=False) for s in _SQ))


# -- solve: X with A X = B (B a batch of matrices; the frontend makes vectors columns) -------
def _solve_infer(a, b, **_):
    if a.ndim < 2 or b.ndim < 2 or _differ(a.shape[-1], a.shape[-2]) or \
            _differ(a.shape[-1], b.shape[-2]):
        raise ShapeError(f"solve: A {fmt_shape(a)} must be square matrices and B "
                         f"{fmt_shape(b)} have as many rows")
    batch = broadcast("solve", Spec(a.shape[:-2], a.dtype), Spec(b.shape[:-2], b.dtype))
    return Spec(tuple(batch) + tuple(b.shape[-2:]), np.result_type(a.dtype, b.dtype))


def _solve_vjp(g, a, b, out, **kw):
    gb = solve(_T(a), g)
    return unbroadcast(-matmul(gb, _T(out)), a), unbroadcast(gb, b)


solve = _register("solve", _solve_infer, lambda a, b: np.linalg.solve(a, b), _solve_vjp,
                  samples=(Sample(((3, 3), (3, 2)), domain=(0.5, 2.0)),
                           Sample(((2, 4, 4), (4, 1)), domain=(0.5, 2.0))))


# -- Cholesky: lower L with L L^T = A ------------------------------------------------------------
def _cholesky_kernel(x):
    try:
        return np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        raise ValueError("cholesky: the input is not positive-definite") from None


def _cholesky_vjp(g, x, out, **kw):
    """L^-T phi(L^T gL) L^-1, phi(P) = (tril(P) + tril(P, -1)^T) / 2 (torch's rule)."""
    p = tril(matmul(_T(out), g))
    p = (p + _T(tril(p, -1))) * 0.5
    linv = inv(out)
    return (matmul(_T(linv), matmul(p, linv)),)


# NOTE: grad=False: these read one triangle, so a finite difference of one element is not
# the symmetric rule torch's gradient is; tests/eager/test_opdb.py checks it against torch's
_SPD = (Sample((np.array([[4.0, 2.0, 0.6], [2.0, 5.0, 1.0], [0.6, 1.0, 3.0]]),), grad=False),)
cholesky = _register("cholesky", _square("cholesky"), _cholesky_kernel, _cholesky_vjp,
                     samples=_SPD)


# -- symmetric eigendecomposition: values ascending, vectors as columns -----------------------
def _eigh_w_infer(x, **_):
    return Spec(x.shape[:-1], x.dtype)


def _eigh_values_vjp(g, x, **kw):
    v = eigh_vectors(x)
    return (matmul(v * expand_dims(g, axis=-2), _T(v)),)


def _inverse_gaps(w):
    """1 / (w_j - w_i) off the diagonal, 0 on it (entry i, j)."""
    e = expand_dims(w, axis=-2) - expand_dims(w, axis=-1)
    same = eq(e, 0)
    return where(same, 0.0, 1.0 / where(same, 1.0, e))


def _eigh_vectors_vjp(g, x, out, **kw):
    vtg = matmul(_T(out), g)
    skew = (vtg - _T(vtg)) * 0.5
    return (matmul(out, matmul(skew * _inverse_gaps(eigh_values(x)), _T(out))),)


eigh_values = _register("eigh_values", _eigh_w_infer, lambda x: np.linalg.eigh(x)[0],
                        _eigh_values_vjp, samples=_SPD)
eigh_vectors = _register("eigh_vectors", _square("eigh_vectors"),
                         lambda x: np.linalg.eigh(x)[1], _eigh_vectors_vjp, samples=_SPD)


# -- the SVD A = U diag(S) Vh, one op per factor ------------------------------------------------
# NOTE: full=True gives U (m, m) and Vh (n, n), as torch's full_matrices: the columns past
# min(m, n) complete an orthonormal basis (which one is LAPACK's choice) and, as in torch's
# rule, get no gradient
def _svd_u_infer(x, full=False, **_):
    k = None if None in x.shape[-2:] else min(x.shape[-2:])
    return Spec(x.shape[:-1] + (x.shape[-2] if full else k,), x.dtype)


def _svd_s_infer(x, **_):
    k = None if None in x.shape[-2:] else min(x.shape[-2:])
    return Spec(x.shape[:-2] + (k,), x.dtype)


def _svd_vh_infer(x, full=False, **_):
    k = None if None in x.shape[-2:] else min(x.shape[-2:])
    return Spec(x.shape[:-2] + (x.shape[-1] if full else k, x.shape[-1]), x.dtype)


def svd_signs(u, vh, xp=np):
    """Singular vectors have no sign of their own: each pair (u_k, vh_k) is flipped so that
    u_k's entry of largest magnitude is positive, one convention for every engine and test."""
    if u.shape[-2] == 0 or u.shape[-1] == 0:
        return u, vh
    big = xp.take_along_axis(u, xp.argmax(xp.abs(u), axis=-2)[..., None, :], axis=-2)
    sign = xp.where(big < 0, -1.0, 1.0).astype(u.dtype)
    return u * sign, vh * xp.swapaxes(sign, -1, -2)


def _svd(i):
    def kernel(x, full=False):
        u, s, vh = np.linalg.svd(x, full_matrices=full)
        k = s.shape[-1]
        uk, vk = svd_signs(u[..., :k], vh[..., :k, :])    # NOTE: the first k fix the signs
        if i == 0:
            return np.concatenate([uk, u[..., k:]], axis=-1) if full else uk
        if i == 2:
            return np.concatenate([vk, vh[..., k:, :]], axis=-2) if full else vk
        return s
    return kernel


def _reduced(g, out, x, axis):
    """g and out cut to their first min(m, n) columns (axis -1) or rows (-2): full=True's
    extra singular vectors get no gradient, as in torch's rule."""
    k = min(x.shape[-2:])
    if out.shape[axis] == k:
        return g, out
    cut = (Ellipsis, slice(0, k)) if axis == -1 else (Ellipsis, slice(0, k), slice(None))
    return slice_(g, index=cut), slice_(out, index=cut)


def _svd_s_vjp(g, x, **kw):
    return (matmul(svd_u(x) * expand_dims(g, axis=-2), svd_vh(x)),)


def _sq_gaps(s):
    """1 / (s_k^2 - s_j^2) off the diagonal (entry j, k), 0 on it."""
    s2 = s * s
    return _inverse_gaps(s2)


def _svd_u_vjp(g, x, out, **kw):
    """U [(skew(U^T gU) / E) S] Vh + (I - U U^T) gU S^-1 Vh (torch's rule, gU's part)."""
    g, out = _reduced(g, out, x, -1)
    s, vh = svd_s(x), svd_vh(x)
    utg = matmul(_T(out), g)
    inner = (utg - _T(utg)) * _sq_gaps(s) * expand_dims(s, axis=-2)
    proj = g - matmul(out, utg)
    return (matmul(matmul(out, inner) + proj / expand_dims(s, axis=-2), vh),)


def _svd_vh_vjp(g, x, out, **kw):
    """U [S (skew(V^T gV) / E)] Vh + U S^-1 gV^T (I - V V^T), gV = gVh^T (gVh's part)."""
    g, out = _reduced(g, out, x, -2)
    s, u = svd_s(x), svd_u(x)
    vtg = matmul(out, _T(g))            # V^T gV
    inner = expand_dims(s, axis=-1) * ((vtg - _T(vtg)) * _sq_gaps(s))
    proj = g - matmul(_T(vtg), out)     # gV^T (I - V V^T), written with Vh
    return (matmul(u, matmul(inner, out) + proj / expand_dims(s, axis=-1)),)


_RECT = (Sample(((4, 3),)), Sample(((2, 3, 5),)))
# NOTE: no samples of full=True: its extra vectors are LAPACK's choice, which no reference
# shares (tests/eager/test_linalg_torch.py checks what is defined of them)
svd_u = _register("svd_u", _svd_u_infer, _svd(0), _svd_u_vjp, samples=_RECT)
svd_s = _register("svd_s", _svd_s_infer, _svd(1), _svd_s_vjp, samples=_RECT)
svd_vh = _register("svd_vh", _svd_vh_infer, _svd(2), _svd_vh_vjp, samples=_RECT)


# -- the pseudo-inverse over the singular values above a cutoff --------------------------------
def _pinv_infer(a, tols, **_):
    if a.ndim is not None and a.ndim < 2:
        raise ShapeError(f"pinv: expected a batch of matrices, got {fmt_shape(a)}")
    return Spec(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)


def _pinv_kernel(a, tols):
    """V diag(1/s) U^T over the singular values s > max(atol, rtol * max(s)), tols[..., 0, :]
    = (atol, rtol), one pair per matrix (shape batch + (1, 2))."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    tols = np.asarray(tols, np.float64)
    keep = s > np.maximum(tols[..., 0], tols[..., 1] * np.max(s, axis=-1, keepdims=True,
                                                               initial=0.0))
    inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0).astype(s.dtype)
    return np.matmul(np.swapaxes(vh, -1, -2) * inv_s[..., None, :], np.swapaxes(u, -1, -2))


def _pinv_vjp(g, a, tols, out, **kw):
    """-P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A), P = pinv(A) (Golub and
    Pereyra's derivative at constant rank, torch's rule): unlike the SVD's rules it has no
    1 / (s_i^2 - s_j^2), so it holds at the zero singular values of a rank-deficient A."""
    pt, gt = _T(out), _T(g)
    left = matmul(matmul(gt, out), pt)                  # g^T P P^T
    right = matmul(matmul(pt, out), gt)                 # P^T P g^T
    ga = (-matmul(pt, matmul(g, pt)) + left - matmul(a, matmul(out, left))
          + right - matmul(matmul(right, out), a))
    return unbroadcast(ga, a), None


pinv_tol = primitive(register(
    "pinv_tol", _pinv_infer, _pinv_kernel, _pinv_vjp, category="other", ref=None,
    # NOTE: the rule is torch's, the derivative at constant rank: where a cutoff drops singular
    # values of a full-rank matrix it is not the truncated function's (no finite differences)
    samples=(Sample(((4, 3), np.array([[0.0, 1e-6]]))),
             Sample(((2, 3, 5), np.array([[[1e-6, 0.0]], [[0.0, 1e-6]]]))),
             Sample(((2, 3, 5), np.array([[[1e-6, 0.0]], [[0.0, 0.5]]])), grad=False),
             Sample((np.array([[1.0, 2.0], [2.0, 4.0], [0.5, 1.0]]), np.array([[1e-9, 0.0]])),
                    grad=False))))


# -- QR (reduced, m >= n): A = Q R ----------------------------------------------------------------
def _qr_q_infer(x, **_):
    k = None if None in x.shape[-2:] else min(x.shape[-2:])
    return Spec(x.shape[:-1] + (k,), x.dtype)


def _qr_r_infer(x, **_):
    k = None if None in x.shape[-2:] else min(x.shape[-2:])
    return Spec(x.shape[:-2] + (k, x.shape[-1]), x.dtype)


def _copyltu(m):
    """The symmetric matrix with m's lower triangle."""
    return tril(m) + _T(tril(m, -1))


def _times_r_inv_t(y, r):
    """y R^-T, with R upper triangular and square."""
    return _T(solve(r, _T(y)))


def _cols(x, lo, hi):
    return slice_(x, index=(slice(None),) * (len(x.shape) - 1) + (slice(lo, hi),))


def _qr_grad(x, q, r, gq, gr):
    """The gradient of A = QR from gQ and gR (either may be None): (gQ + Q copyltu(R gR^T -
    gQ^T Q)) R^-T for m >= n; a wide A = [X | Y] (R = [U | V]) takes that rule on X with
    gQ + Y gV^T and gU, and Q gV for Y."""
    m, n = x.shape[-2], x.shape[-1]
    if m < n:
        gu, gv = (None, None) if gr is None else (_cols(gr, 0, m), _cols(gr, m, n))
        if gv is not None:
            extra = matmul(_cols(x, m, n), _T(gv))
            gq = extra if gq is None else gq + extra
        gx = _qr_grad(_cols(x, 0, m), q, _cols(r, 0, m), gq, gu)
        gy = zeros_like(_cols(x, m, n)) if gv is None else matmul(q, gv)
        return concat(gx, gy, axis=-1)
    inner = None
    if gr is not None:
        inner = matmul(r, _T(gr))
    if gq is not None:
        inner = -matmul(_T(gq), q) if inner is None else inner - matmul(_T(gq), q)
    y = matmul(q, _copyltu(inner))
    return _times_r_inv_t(y if gq is None else y + gq, r)


def _qr_q_vjp(g, x, out, **kw):
    return (_qr_grad(x, out, qr_r(x), g, None),)


def _qr_r_vjp(g, x, out, **kw):
    return (_qr_grad(x, qr_q(x), out, None, g),)


def _qr(i):
    return lambda x: np.linalg.qr(x, mode="reduced")[i]


_TALL = (Sample(((4, 3),)), Sample(((2, 3, 3),)), Sample(((2, 4),)))
qr_q = _register("qr_q", _qr_q_infer, _qr(0), _qr_q_vjp, samples=_TALL)
qr_r = _register("qr_r", _qr_r_infer, _qr(1), _qr_r_vjp, samples=_TALL)


# -- the matrix exponential --------------------------------------------------------------------
def _expm_kernel(x):
    import scipy.linalg   # NOTE: on first use
    x = np.asarray(x)
    # NOTE: computed in float64 and rounded once: in float32 (and below) the Pade sums of a
    # matrix with large exponentials cancel, 1e-5 relative off (torch's own float32 is closer)
    return scipy.linalg.expm(x.astype(np.float64)).astype(x.dtype) if x.size else x.copy()


def _expm_vjp(g, x, **kw):
    """The top-right block of exp([[A^T, g], [0, A^T]]) (torch's rule)."""
    at = _T(x)
    n = x.shape[-1]
    big = concat(concat(at, g, axis=-1), concat(zeros_like(at), at, axis=-1), axis=-2)
    lead = (slice(None),) * (len(x.shape) - 2)
    return (slice_(matrix_exp(big), index=lead + (slice(0, n), slice(n, 2 * n))),)


matrix_exp = _register("matrix_exp", _square("matrix_exp"), _expm_kernel, _expm_vjp)

def det(a):
    """The determinant, as the sign times exp(log|det|): both engines' det (its gradient
    det * inv(a)^T comes through logabsdet's rule)."""
    from .elementwise import exp
    return det_sign(a) * exp(logabsdet(a))


def singular_value_norm(a, ord, axis=(-2, -1), keepdims=False):  # noqa: A002 - torch's name
    """The matrix norms of singular values over the two `axis` dims: 'nuc' (their sum), 2
    (the largest), -2 (the smallest); torch.linalg.matrix_norm's, with svd_s's gradient."""
    from .composite import min as min_
    from .reduce import max as max_, sum as sum_
    from .shape import transpose
    nd = len(a.shape)
    rows, cols = (d % nd for d in axis)
    rest = [d for d in range(nd) if d not in (rows, cols)]
    s = svd_s(transpose(a, tuple(rest) + (rows, cols)))
    # NOTE: 2 of an empty matrix is 0, as torch's (singular values are >= 0)
    out = max_(s, axis=-1, initial=0.0) if ord == 2 else {"nuc": sum_, -2: min_}[ord](s, axis=-1)
    if keepdims:
        out = expand_dims(expand_dims(out, axis=min(rows, cols)), axis=max(rows, cols))
    return out


__all__ = ["inv", "logabsdet", "det_sign", "det", "solve", "cholesky", "eigh_values", "eigh_vectors", "pinv_tol",
           "svd_u", "svd_s", "svd_vh", "qr_q", "qr_r", "matrix_exp", "singular_value_norm"]
