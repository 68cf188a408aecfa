"""Loops that NumPy runs slowly, compiled with numba: im2col (`unfold`) and its adjoint
(`fold`), and `where`, `sigmoid` and softmax cross-entropy on large arrays (see below).

On the CNN's small images NumPy's version (pad, a sliding-window view, a 6-d transposing copy;
for fold, one strided `+=` per kernel offset) spends 60-280 µs per call in overhead and
4-element inner strides; these loops do the same gather / scatter-add in 1/4 to 1/3 of the
time (measured on the CNN's shapes: 15-90 µs against 60-280 µs). They are
the kernels of the `unfold` and `fold` ops (ops/nn.py), imported on first use so that
importing dualgrad does not import numba. fold adds the contributions to each pixel in the
same order as the NumPy loop over kernel offsets did (i, then j), so results are unchanged.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import njit

from .rules import is_bfloat16

# float sums that may be reordered (several running sums, so loops vectorise) and a*b+c
# contracted; nothing assumed about nan or inf, so they propagate (see layer norm, below)
_REASSOC = {"reassoc", "contract"}


@njit(cache=True, nogil=True)
def _unfold(x, out, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo):
    n_, c_, h_, w_ = x.shape
    for n in range(n_):
        for c in range(c_):
            for i in range(kh):
                for j in range(kw):
                    row = (c * kh + i) * kw + j
                    for oh in range(ho):
                        h = oh * sh + i * dh - ph
                        for ow in range(wo):
                            w = ow * sw + j * dw - pw
                            if 0 <= h < h_ and 0 <= w < w_:
                                out[n, row, oh * wo + ow] = x[n, c, h, w]
                            else:
                                out[n, row, oh * wo + ow] = 0


@njit(cache=True, nogil=True)
def _fold(cols, img, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo):
    n_, c_, h_, w_ = img.shape
    for n in range(n_):
        for c in range(c_):
            for i in range(kh):
                for j in range(kw):
                    row = (c * kh + i) * kw + j
                    for oh in range(ho):
                        h = oh * sh + i * dh - ph
                        if h < 0 or h >= h_:
                            continue
                        for ow in range(wo):
                            w = ow * sw + j * dw - pw
                            if 0 <= w < w_:
                                img[n, c, h, w] += cols[n, row, oh * wo + ow]


# NOTE: with output rows this short (the CNN's 4x4 maps) the loops above spend their time in
# 4-element inner loops: one gather (scatter-add) over a precomputed index map per sample does
# the same in about half the time (unfold 150 -> 90 us, fold 160 -> 75 at (64, 8, 4, 4))
_SHORT_ROW = 8


@functools.lru_cache(maxsize=64)
def _index_map(c_, h_, w_, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo):
    """For each (row, column) of one sample's unfolded (C*kh*kw, Ho*Wo), the flat index of its
    pixel in the (C*H*W) image, or C*H*W where the window reads padding."""
    c = np.arange(c_)[:, None, None, None, None]
    i = np.arange(kh)[None, :, None, None, None]
    j = np.arange(kw)[None, None, :, None, None]
    h = np.arange(ho)[None, None, None, :, None] * sh + i * dh - ph
    w = np.arange(wo)[None, None, None, None, :] * sw + j * dw - pw
    inside = (h >= 0) & (h < h_) & (w >= 0) & (w < w_)
    idx = np.where(inside, (c * h_ + h) * w_ + w, c_ * h_ * w_).reshape(-1).astype(np.int64)
    idx.flags.writeable = False
    return idx


@njit(cache=True, nogil=True)
def _gather(x, idx, out):
    n_, m = x.shape
    for n in range(n_):
        for k in range(idx.size):
            p = idx[k]
            out[n, k] = x[n, p] if p < m else 0


@njit(cache=True, nogil=True)
def _scatter_add(cols, idx, img):
    n_, m = img.shape
    for n in range(n_):
        for k in range(idx.size):   # NOTE: each pixel's terms in (c, i, j) order, as _fold
            p = idx[k]
            if p < m:
                img[n, p] += cols[n, k]


def unfold(x, kernel, stride, padding, dilation, ho, wo):
    """(N, C, H, W) -> (N, C*kh*kw, Ho*Wo), rows in (c, i, j) order; stride, padding and
    dilation are (height, width) pairs."""
    if x.dtype == np.float16:   # NOTE: numba has no float16: moved as float32, exactly
        return unfold(x.astype(np.float32), kernel, stride, padding, dilation, ho,
                      wo).astype(np.float16)
    kh, kw = kernel
    x = np.ascontiguousarray(x)
    if is_bfloat16(x.dtype):   # NOTE: numba has no bfloat16; a gather moves bits alone
        return unfold(x.view(np.uint16), kernel, stride, padding, dilation, ho, wo).view(x.dtype)
    n, c, h, w = x.shape
    out = np.empty((n, c * kh * kw, ho * wo), x.dtype)
    if wo < _SHORT_ROW:
        idx = _index_map(c, h, w, kh, kw, *stride, *padding, *dilation, ho, wo)
        _gather(x.reshape(n, c * h * w), idx, out.reshape(n, idx.size))
    else:
        _unfold(x, out, kh, kw, *stride, *padding, *dilation, ho, wo)
    return out


def fold(cols, shape, kernel, stride, padding, dilation, ho, wo):
    """Scatter-add (N, C*kh*kw, Ho*Wo) columns into a zero image of `shape`."""
    if cols.dtype == np.float16:   # NOTE: numba has no float16: summed in float32
        return fold(cols.astype(np.float32), shape, kernel, stride, padding, dilation, ho,
                    wo).astype(np.float16)
    kh, kw = kernel
    if is_bfloat16(cols.dtype):   # NOTE: numba has no bfloat16: sums in float32, rounded once
        return fold(cols.astype(np.float32), shape, kernel, stride, padding, dilation, ho,
                    wo).astype(cols.dtype)
    n, c, h, w = shape
    cols = np.ascontiguousarray(cols).reshape(n, c * kh * kw, ho * wo)
    img = np.zeros(shape, cols.dtype)
    if wo < _SHORT_ROW:
        idx = _index_map(c, h, w, kh, kw, *stride, *padding, *dilation, ho, wo)
        _scatter_add(cols.reshape(n, idx.size), idx, img.reshape(n, c * h * w))
    else:
        _fold(cols, img, kh, kw, *stride, *padding, *dilation, ho, wo)
    return img


# -- where on large float arrays: np.where runs about 1 ns per element on float32 (no SIMD
# select), these loops about 0.15 ns; used by the `where` kernel (ops/elementwise.py) only
# for same-shape contiguous arrays, where a flat loop is exact
@njit(cache=True, nogil=True)
def _where_aa(c, x, y, out):
    for i in range(c.size):
        out[i] = x[i] if c[i] else y[i]


@njit(cache=True, nogil=True)
def _where_as(c, x, s, out):
    for i in range(c.size):
        out[i] = x[i] if c[i] else s


@njit(cache=True, nogil=True)
def _where_sa(c, s, y, out):
    for i in range(c.size):
        out[i] = s if c[i] else y[i]


def where(c, x, y):
    """np.where(c, x, y) for a contiguous bool c and x, y each a float32 or float64 array of c's shape (a
    strided one is copied first: still 2-3x faster than np.where on it), a 0-d array of that
    dtype (a graph constant) or a Python number (NumPy's weak scalar: the array's dtype
    wins), at least one an array of c's shape; None when the arguments are not of that kind."""
    arr = x if type(x) is np.ndarray and x.shape == c.shape else y
    if type(arr) is not np.ndarray or arr.dtype.char not in "fd" or arr.shape != c.shape:
        return None     # NOTE: float32/float64 only: numba has no float16 (nor bfloat16)
    vals = []
    for v in (x, y):
        if type(v) is np.ndarray:
            if v.dtype != arr.dtype or v.shape not in (c.shape, ()):
                return None
            vals.append(v.item() if v.ndim == 0 else
                        v if v.flags.c_contiguous else np.ascontiguousarray(v))
        elif type(v) in (int, float) and abs(v) <= np.finfo(arr.dtype).max:
            vals.append(v)
        else:
            return None
    x, y = vals
    arr = x if type(x) is np.ndarray else y
    out = np.empty(c.shape, arr.dtype)
    flat = out.reshape(-1)
    if x is arr and type(y) is np.ndarray:
        _where_aa(c.reshape(-1), x.reshape(-1), y.reshape(-1), flat)
    elif x is arr:
        _where_as(c.reshape(-1), x.reshape(-1), arr.dtype.type(y), flat)
    else:
        _where_sa(c.reshape(-1), arr.dtype.type(x), y.reshape(-1), flat)
    return out


# -- sigmoid (ops/elementwise.py): NumPy's formula exp(min(x, 0)) / (exp(-|x|) + 1) takes two
# exps and five more passes; here e = exp(-|x|) once (NumPy's SIMD exp) and one loop selects the
# numerator and divides, in x's dtype: the same float operations, so the same values
@njit(cache=True, nogil=True, error_model="numpy")
def _sigmoid_finish(x, e, one):
    for i in range(x.size):
        v = e[i]
        e[i] = (one if x[i] >= 0 else v) / (one + v)


def sigmoid(x):
    """sigmoid of a float32/float64 array (any layout), as the `sigmoid` kernel computes it."""
    x = np.ascontiguousarray(x)
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    _sigmoid_finish(x.reshape(-1), e.reshape(-1), x.dtype.type(1))
    return e


# -- take's gradient (ops/shape.py): np.add.at on rows costs ~20 ns per element (12 ms for the
# GPT's token embedding, 2048 rows of 256); the same row additions in the same order, so the
# same sums
@njit(cache=True, nogil=True)
def _add_rows_at(z, idx, g):
    for i in range(idx.size):
        r = idx[i]
        for j in range(z.shape[1]):
            z[r, j] += g[i, j]


def add_rows_at(z, idx, g):
    """np.add.at(z, idx, g) for a C-contiguous z (n, ...), integer idx and g of shape
    idx.shape + z.shape[1:]: z[idx[i]] += g[i] in index order."""
    n = z.shape[0]
    idx = np.asarray(idx, np.int64).reshape(-1)
    idx = np.where(idx < 0, idx + n, idx)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError(f"take_grad: an index is out of range for {n} rows")
    _add_rows_at(z.reshape(n, -1), idx, np.ascontiguousarray(g, z.dtype).reshape(idx.size, -1))


# -- optimizer updates in place (eager optim.SGD, Adam, AdamW) -----------------------------------
# NOTE: the rules of ops/updates.py as NumPy calls allocate and run 4-14 passes per parameter
# (~4 µs each on the MLP's); one pass here, writing the state and the parameter in place as
# torch's optimizers do. Each scalar comes in the arrays' dtype, so every product and sum
# rounds as NumPy's float32 (weak Python scalar) arithmetic does: results are bit-identical
# (the loops are compiled without fastmath, so LLVM neither contracts a*b+c into an fma nor
# reorders). Adam's loop runs over up to MANY parameters per call (torch's multi-tensor
# apply; a numba call costs ~1-2 µs of dispatch), in tuples of 8, 4, 2 or 1 arrays (`chunks`:
# padding them with empty arrays cost more to unbox than it saved), so each dtype compiles
# four signatures, on first use. SGD stays one call per parameter: one call for the MLP's four
# parameters saved 3 µs alone and nothing measurable in a training step.
MANY = 8


@njit(cache=True, nogil=True)
def _sgd_momentum(p, g, buf, s, nesterov):
    # s: lr, momentum, 1 - dampening, weight decay, in p's dtype (one array: each scalar
    # argument costs numba's dispatch a type check)
    lr, momentum, damp, wd = s[0], s[1], s[2], s[3]
    p, g, buf = p.ravel(), g.ravel(), buf.ravel()   # NOTE: views: all three are C-contiguous
    for i in range(p.size):
        gi = g[i]
        if wd != 0:
            gi = gi + wd * p[i]
        b = momentum * buf[i] + (damp * gi if damp != 1 else gi)
        buf[i] = b
        p[i] = p[i] - lr * (gi + momentum * b if nesterov else b)


@njit(cache=True, nogil=True, error_model="numpy")   # NOTE: no zero check: the loop vectorises
def _adam(p, g, m, v, lr, b1, c1, b2, c2, bc1, bc2, eps, wd, decay, sign):
    # ops/updates.adam_update (adamw_update: decay = 1 - lr * wd first, then wd = 0), in place
    for i in range(p.size):
        pi = p[i]
        if decay != 1:
            pi = pi * decay
        gi = g[i] * sign
        if wd != 0:
            gi = gi + wd * pi
        mi = b1 * m[i] + c1 * gi
        vi = b2 * v[i] + c2 * (gi * gi)
        m[i] = mi
        v[i] = vi
        p[i] = pi - lr * (mi / bc1) / (np.sqrt(vi / bc2) + eps)


@njit(cache=True, nogil=True, error_model="numpy")
def _adam_many(ps, gs, m, v, offsets, lr, b1, c1, b2, c2, bc1, bc2, eps, wd, decay, sign):
    for k in range(len(ps)):
        o, n = offsets[k], ps[k].size
        _adam(ps[k], gs[k], m[o:o + n], v[o:o + n], lr, b1, c1, b2, c2, bc1, bc2, eps, wd,
              decay, sign)


def sgd_momentum_(p, g, buf, lr, momentum, dampening, weight_decay, nesterov):
    """sgd_update's step after the first, with momentum, written into p and buf; False (nothing
    written) unless p and buf are C-contiguous float32/float64 arrays of g's dtype and shape."""
    dt = p.dtype
    if not (dt.char in "fd" and g.dtype == dt and buf.dtype == dt and g.shape == p.shape and
            buf.shape == p.shape):   # NOTE: float16 too takes the NumPy rule (numba has none)
        return False
    pf, bf = p.flags, buf.flags
    if not (pf.c_contiguous and pf.writeable and bf.c_contiguous and bf.writeable):
        return False
    # NOTE: two arrays that each own their memory cannot overlap; else NumPy's exact check
    if not (pf.owndata and bf.owndata and p is not buf) and np.shares_memory(p, buf):
        return False
    if not g.flags.c_contiguous:   # NOTE: a summed transposed product (an LSTM's weights)
        g = np.ascontiguousarray(g)
    key = (dt, lr, momentum, dampening, weight_decay)
    s = _SGD_SCALARS.get(key)
    if s is None:
        if len(_SGD_SCALARS) > 64:
            _SGD_SCALARS.clear()
        s = np.array([lr, momentum, 1.0 - dampening, weight_decay], dt)
        s.flags.writeable = False
        _SGD_SCALARS[key] = s
    _sgd_momentum(p, g, buf, s, bool(nesterov))
    return True


_SGD_SCALARS = {}   # (dtype, lr, momentum, dampening, weight_decay) -> sgd's scalars as an array


def chunk_sizes(n):
    """How `chunks` cuts n arrays: tuples of MANY, then of 4, 2 and 1 for the rest, so that
    each `_many` loop compiles for four tuple sizes per dtype, whatever the parameter count."""
    sizes, size = [], MANY
    while n:
        while size > n:
            size //= 2
        sizes.append(size)
        n -= size
    return sizes


def chunks(items):
    """`items` in tuples of `chunk_sizes(len(items))`."""
    out, i = [], 0
    for size in chunk_sizes(len(items)):
        out.append(tuple(items[i:i + size]))
        i += size
    return out


def adam_many_(ps, gs, m, v, offsets, t, lr, beta1, beta2, eps, weight_decay, decoupled,
               maximize):
    """Adam's (decoupled: AdamW's) step number t over `chunks` of flat parameters and
    gradients, the moments flat (each parameter's at its offset, `offsets` int64 arrays cut as
    the chunks), all written in place; arrays checked by the caller (eager/optim/flat.py)."""
    f = ps[0][0].dtype.type
    decay, wd = (1.0 - lr * weight_decay, 0.0) if decoupled else (1.0, weight_decay)
    args = (f(lr), f(beta1), f(1.0 - beta1), f(beta2), f(1.0 - beta2), f(1.0 - beta1 ** t),
            f(1.0 - beta2 ** t), f(eps), f(wd), f(decay), f(-1.0 if maximize else 1.0))
    for tp, tg, o in zip(ps, gs, offsets):
        _adam_many(tp, tg, m, v, o, *args)


# -- softmax cross-entropy by rows (ops/losses.py) ---------------------------------------------
# NOTE: NumPy reduces a short last axis row by row: for the (128, 10) logits of a classifier
# the kernel's max, sums and masked product took ~35 µs in ten calls; one pass per row here.
# Each row follows the composite's arithmetic: the shift is the row max, or 0 where that is
# not finite (a row holding +inf or nan gives nan, as torch), sums run in float64.
@njit(cache=True, nogil=True, error_model="numpy")
def _row_shift(x, r, zero):
    # NOTE: `zero` is a 0 of x's dtype, so that float32 rows take float32 exp (twice as fast)
    m = x[r, 0]
    for c in range(x.shape[1]):
        v = x[r, c]
        if v != v:
            return zero
        if v > m:
            m = v
    return m if abs(m) < np.inf else zero


@njit(cache=True, nogil=True, error_model="numpy")   # NOTE: 0/0 is nan, not an exception
def _sce_rows(x, t, out, zero):
    for r in range(x.shape[0]):
        m = _row_shift(x, r, zero)
        s = 0.0
        for c in range(x.shape[1]):
            s += np.exp(x[r, c] - m)
        if not s < np.inf:          # a row holding +inf (or nan): nan throughout, as torch
            out[r] = np.nan
            continue
        lse = np.log(s)
        acc = 0.0
        for c in range(x.shape[1]):
            if t[r, c] != 0:
                acc += t[r, c] * ((x[r, c] - m) - lse)
        out[r] = -acc


@njit(cache=True, nogil=True, error_model="numpy")
def _sce_grad_rows(x, t, g, out, zero):
    for r in range(x.shape[0]):
        m = _row_shift(x, r, zero)
        s = 0.0
        tot = 0.0
        for c in range(x.shape[1]):
            e = np.exp(x[r, c] - m)
            out[r, c] = e
            s += e
            tot += t[r, c]
        k = tot / s if s < np.inf else np.nan
        for c in range(x.shape[1]):
            out[r, c] = (out[r, c] * k - t[r, c]) * g[r]


# NOTE: on long rows (a language model's vocabulary) the loops above spend their time in scalar
# exp calls (~4 ns each; numba has no vector exp here) and one float64 sum chain: from LONG_ROW
# classes on, NumPy's SIMD exp computes e = exp(x - shift) for all rows at once and the loops
# below finish from it with the same shifts and float64 sums, reordered so that they vectorise
# (no contraction): the exp's last bit and the sums' rounding may differ (float32 loss within
# 1 ulp; gradients near 0 where e * k and the target cancel by more). At the GPT's (2048,
# 1000) float32 logits, loss and gradient 17.4 -> 8.1 ms CPU.
LONG_ROW = 64


@njit(cache=True, nogil=True, error_model="numpy")
def _row_shifts(x, m, zero):
    for r in range(x.shape[0]):
        m[r] = _row_shift(x, r, zero)


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _sce_finish(d, e, t, out):
    for r in range(d.shape[0]):
        s = 0.0
        for c in range(d.shape[1]):
            s += e[r, c]
        if not s < np.inf:
            out[r] = np.nan
            continue
        lse = np.log(s)
        acc = 0.0
        for c in range(d.shape[1]):
            if t[r, c] != 0:
                acc += t[r, c] * (d[r, c] - lse)
        out[r] = -acc


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _sce_grad_finish(e, t, g, out):
    for r in range(e.shape[0]):
        s = 0.0
        tot = 0.0
        for c in range(e.shape[1]):
            s += e[r, c]
            tot += t[r, c]
        k = tot / s if s < np.inf else np.nan
        for c in range(e.shape[1]):
            out[r, c] = (e[r, c] * k - t[r, c]) * g[r]


def _shifted_exp(x):
    """(x - shift, exp(x - shift)) of the rows of x, the shift each row's `_row_shift`."""
    m = np.empty(x.shape[0], x.dtype)
    _row_shifts(x, m, x.dtype.type(0))
    d = x - m[:, None]
    return d, np.exp(d)


def _rows(a):
    return a.reshape(-1, a.shape[-1])


def sce_rows(x, t):
    """The loss per row, or None when the arrays are not C-contiguous float32/float64 of one
    dtype with at least one row and class (the NumPy kernel handles those)."""
    if not _row_ready(x, t):
        return None
    out = np.empty(x.shape[:-1], x.dtype)
    if x.shape[-1] >= LONG_ROW:
        _sce_finish(*_shifted_exp(_rows(x)), _rows(t), out.reshape(-1))
    else:
        _sce_rows(_rows(x), _rows(t), out.reshape(-1), x.dtype.type(0))
    return out


def sce_grad_rows(x, t, g):
    if not _row_ready(x, t) or type(g) is not np.ndarray or g.dtype != x.dtype or \
            g.shape != x.shape[:-1]:
        return None
    g = np.ascontiguousarray(g).reshape(-1)
    if x.shape[-1] >= LONG_ROW:
        e = _shifted_exp(_rows(x))[1]
        _sce_grad_finish(e, _rows(t), g, e)      # NOTE: in place: each element read first
        return e.reshape(x.shape)
    out = np.empty_like(x)
    _sce_grad_rows(_rows(x), _rows(t), g, _rows(out), x.dtype.type(0))
    return out


def _row_ready(x, t):
    return (type(x) is np.ndarray and type(t) is np.ndarray and x.dtype == t.dtype and
            x.dtype.kind == "f" and x.dtype.itemsize >= 4 and x.ndim >= 1 and x.size and
            x.shape == t.shape and x.flags.c_contiguous and t.flags.c_contiguous)


# -- max pooling (ops/pool.py): each window's first maximum (a later nan wins, as torch), and
# the gradient added at it. Windows read a cached index map, padding never picked: a padded slot
# reads the window's nearest earlier inside slot again (or its first one), which changes
# neither the maximum nor which slot holds it, so the loop has no bounds checks.
@functools.lru_cache(maxsize=64)
def _pool_map(h_, w_, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo):
    """(Ho*Wo, kh*kw) flat indices into one channel's H*W; a window with no inside slot: -1."""
    hs = np.arange(ho)[:, None, None, None] * sh - ph + np.arange(kh)[None, None, :, None] * dh
    ws = np.arange(wo)[None, :, None, None] * sw - pw + np.arange(kw)[None, None, None, :] * dw
    inside = ((hs >= 0) & (hs < h_) & (ws >= 0) & (ws < w_)).reshape(ho * wo, kh * kw)
    flat = (hs * w_ + ws).reshape(ho * wo, kh * kw)
    idx = np.full(flat.shape, -1, np.int64)
    for r in range(flat.shape[0]):
        slots = np.flatnonzero(inside[r])
        if slots.size:
            prev = np.maximum.accumulate(np.where(inside[r], np.arange(flat.shape[1]), -1))
            idx[r] = flat[r, np.where(prev < 0, slots[0], prev)]
    idx.flags.writeable = False
    return idx


@njit(cache=True, nogil=True, inline="always")
def _window_max(xf, c, idx, r):
    p = idx[r, 0]
    best, at = xf[c, p], p
    for k in range(1, idx.shape[1]):
        q = idx[r, k]
        v = xf[c, q]
        take = (v > best) | (v != v)
        best = v if take else best
        at = q if take else at
    return best, at


@njit(cache=True, nogil=True)
def _max_pool(xf, idx, out):
    for c in range(xf.shape[0]):
        for r in range(idx.shape[0]):
            if idx[r, 0] < 0:
                out[c, r] = -np.inf
            else:
                out[c, r] = _window_max(xf, c, idx, r)[0]


@njit(cache=True, nogil=True)
def _max_pool_grad(xf, idx, g, dx):
    for c in range(xf.shape[0]):
        for r in range(idx.shape[0]):
            if idx[r, 0] >= 0:
                dx[c, _window_max(xf, c, idx, r)[1]] += g[c, r]


# 2x2 windows that tile the image (stride 2, no padding or dilation, H and W even: the pooling
# of most CNNs) need no index map: each window's four elements are read in place, in the same
# order (rows, then columns) with the same rule for the first maximum and nan, and the gradient
# writes the four elements of dx (g at the maximum, 0 elsewhere) instead of zeroing dx and
# scattering into it. The CNN's three poolings (64x32x32x32, 64x64x16x16, 64x128x8x8), forward
# and gradient: 2.2 and 5.6 ms through the map, 1.5 and 4.1 ms so (one thread; numba's loop
# over a general kh x kw window was slower than the map's).
@njit(cache=True, nogil=True, inline="always")
def _max4_at(x, p0, p2):
    best, at = x[p0], p0
    for q in (p0 + 1, p2, p2 + 1):
        v = x[q]
        if (v > best) | (v != v):
            best, at = v, q
    return best, at


@njit(cache=True, nogil=True)
def _max_pool_2x2(xf, out, w_, ho, wo):
    for c in range(xf.shape[0]):
        x, o = xf[c], out[c]
        for i in range(ho):
            for j in range(wo):
                p0 = 2 * i * w_ + 2 * j
                o[i * wo + j] = _max4_at(x, p0, p0 + w_)[0]


@njit(cache=True, nogil=True)
def _max_pool_2x2_grad(xf, g, dx, w_, ho, wo):
    for c in range(xf.shape[0]):
        x, d, gc = xf[c], dx[c], g[c]
        for i in range(ho):
            for j in range(wo):
                p0 = 2 * i * w_ + 2 * j
                p2 = p0 + w_
                at = _max4_at(x, p0, p2)[1]
                d[p0] = 0.0
                d[p0 + 1] = 0.0
                d[p2] = 0.0
                d[p2 + 1] = 0.0
                d[at] = gc[i * wo + j]


def _tiled_2x2(x, geometry):
    """Whether the windows are 2x2, stride 2, without padding or dilation, tiling x exactly."""
    return geometry[:8] == (2, 2, 2, 2, 0, 0, 1, 1) and \
        x.shape[2] == 2 * geometry[8] and x.shape[3] == 2 * geometry[9]


def _pool_input(x, geometry):
    """(x as a C-contiguous (N*C, H*W) float array, the index map): float16 and integers
    compute in float64."""
    return _pool_array(x), _pool_map(*x.shape[2:], *geometry)


def _pool_array(x):
    n, c, h, w = x.shape
    if x.dtype.kind != "f" or x.itemsize < 4:
        x = x.astype(np.float64)
    return np.ascontiguousarray(x).reshape(n * c, h * w)


def max_pool(x, geometry):
    """(N, C, H, W) -> (N, C, Ho, Wo) window maxima; geometry is (kh, kw, sh, sw, ph, pw, dh,
    dw, Ho, Wo)."""
    n, c = x.shape[:2]
    if _tiled_2x2(x, geometry):
        xf = _pool_array(x)
        out = np.empty((n * c, geometry[-2] * geometry[-1]), xf.dtype)
        _max_pool_2x2(xf, out, x.shape[3], *geometry[-2:])
    else:
        xf, idx = _pool_input(x, geometry)
        out = np.empty((n * c, idx.shape[0]), xf.dtype)
        _max_pool(xf, idx, out)
    return out.reshape(n, c, *geometry[-2:]).astype(x.dtype, copy=False)


def max_pool_grad(x, g, geometry):
    """Zeros shaped like x with each g added at its window's first maximum."""
    tiled = _tiled_2x2(x, geometry)
    xf, idx = (_pool_array(x), None) if tiled else _pool_input(x, geometry)
    dt = np.promote_types(g.dtype, np.float32)
    gf = np.ascontiguousarray(g, dt).reshape(xf.shape[0], -1)
    if tiled:
        dx = np.empty(xf.shape, dt)
        _max_pool_2x2_grad(xf, gf, dx, x.shape[3], *geometry[-2:])
    else:
        dx = np.zeros(xf.shape, dt)
        _max_pool_grad(xf, idx, gf, dx)
    return dx.reshape(x.shape).astype(g.dtype, copy=False)


# -- the LSTM cell's pointwise part (ops/lstm.py): e = exp(-|z|) of the sigmoid gates comes from
# NumPy's SIMD exp and tanh from NumPy's tanh (numba's libm calls are 3-5x slower); each loop
# finishes the sigmoids as the `sigmoid` kernel does and combines them in the order the
# composite (f * c + i * g, o * tanh(c), the mul/sigmoid_grad/tanh_grad rules) rounds in
@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sig(x, e, one):
    return (one if x >= 0 else e) / (one + e)


@njit(cache=True, nogil=True, error_model="numpy")
def _lstm_c(z, e, t, c, out, one):
    n, h = out.shape
    for r in range(n):
        for j in range(h):
            i, f = _sig(z[r, j], e[r, j], one), _sig(z[r, h + j], e[r, h + j], one)
            out[r, j] = f * c[r, j] + i * t[r, j]


@njit(cache=True, nogil=True, error_model="numpy")
def _lstm_h(z, e, out, one):
    """out holds tanh(c) on entry, h on return."""
    n, h = out.shape
    for r in range(n):
        for j in range(h):
            out[r, j] = _sig(z[r, 3 * h + j], e[r, j], one) * out[r, j]


@njit(cache=True, nogil=True, error_model="numpy")
def _lstm_c_grad(z, e, t, c, u, out, one):
    n, h = c.shape
    for r in range(n):
        for j in range(h):
            i, f = _sig(z[r, j], e[r, j], one), _sig(z[r, h + j], e[r, h + j], one)
            g, tj = u[r, j], t[r, j]
            out[r, j] = (g * tj) * (i * (one - i))
            out[r, h + j] = (g * c[r, j]) * (f * (one - f))
            out[r, 2 * h + j] = (g * i) * (one - tj * tj)
            out[r, 3 * h + j] = 0
            out[r, 4 * h + j] = g * f


@njit(cache=True, nogil=True, error_model="numpy")
def _lstm_h_grad(z, e, t, u, out, one):
    n, h = t.shape
    for r in range(n):
        for k in range(3 * h):
            out[r, k] = 0
        for j in range(h):
            o, g, tj = _sig(z[r, 3 * h + j], e[r, j], one), u[r, j], t[r, j]
            out[r, 3 * h + j] = (g * tj) * (o * (one - o))
            out[r, 4 * h + j] = (g * o) * (one - tj * tj)


def _neg_abs_exp(x):
    e = np.abs(x)
    np.negative(e, out=e)
    return np.exp(e, out=e)


def lstm_c(z, c, out=None):
    """(N, 4H) gates, (N, H) state, float32/float64 of one dtype: f * c + i * tanh(g) (into
    out, a C-contiguous (N, H) array, when given: ops/lstm_sequence.py's rows)."""
    h = c.shape[1]
    out = np.empty(c.shape, c.dtype) if out is None else out
    _lstm_c(z, _neg_abs_exp(z[:, :2 * h]), np.tanh(z[:, 2 * h:3 * h]), c, out, c.dtype.type(1))
    return out


def lstm_h(z, c, out=None):
    h = c.shape[1]
    out = np.tanh(c, out=out)
    _lstm_h(z, _neg_abs_exp(z[:, 3 * h:]), out, c.dtype.type(1))
    return out


def lstm_c_grad(z, c, u):
    h = c.shape[1]
    out = np.empty((c.shape[0], 5 * h), c.dtype)
    _lstm_c_grad(z, _neg_abs_exp(z[:, :2 * h]), np.tanh(z[:, 2 * h:3 * h]), c, u, out,
                 c.dtype.type(1))
    return out


def lstm_h_grad(z, c, u):
    h = c.shape[1]
    out = np.empty((c.shape[0], 5 * h), c.dtype)
    _lstm_h_grad(z, _neg_abs_exp(z[:, 3 * h:]), np.tanh(c), u, out, c.dtype.type(1))
    return out


# -- layer norm over the last axis (ops/norm.py) -----------------------------------------------
# NOTE: one pass per row for the mean and one for the variance, both summed in float64, then the
# output; rows are short (a model's width) and stay in cache. The gradient's loop adds w's and
# b's gradients into float64 row accumulators, in row order. The float64 sums may be reordered
# (`reassoc`: several running sums, so the loops vectorise; 3x faster at (512, 32)) and a*b+c
# contracted; no assumption about nan or inf is made, so they propagate as in the composite.


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_REASSOC)
def _ln_stats(x, r):
    d = x.shape[1]
    s = 0.0
    for c in range(d):
        s += x[r, c]
    mu = s / d
    v = 0.0
    for c in range(d):
        t = x[r, c] - mu
        v += t * t
    return mu, v / d


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_REASSOC)
def layer_norm_rows(x, w, b, eps, y):
    for r in range(x.shape[0]):
        mu, var = _ln_stats(x, r)
        rstd = 1.0 / np.sqrt(var + eps)
        for c in range(x.shape[1]):
            y[r, c] = (x[r, c] - mu) * rstd * w[c] + b[c]


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_REASSOC)
def layer_norm_grad_rows(x, w, g, eps, out, acc):
    d = x.shape[1]
    for r in range(x.shape[0]):
        mu, var = _ln_stats(x, r)
        rstd = 1.0 / np.sqrt(var + eps)
        a = 0.0
        m = 0.0
        for c in range(d):
            xh = (x[r, c] - mu) * rstd
            dxh = g[r, c] * w[c]
            a += dxh
            m += dxh * xh
            acc[0, c] += g[r, c] * xh
            acc[1, c] += g[r, c]
        a /= d
        m /= d
        for c in range(d):
            xh = (x[r, c] - mu) * rstd
            out[r, c] = rstd * (g[r, c] * w[c] - a - xh * m)
