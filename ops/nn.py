"""Neural-network primitives: matmul, unfold/fold (im2col and its adjoint), one_hot, rand_like.

conv2d is a composition over unfold (see conv.py): one primitive carries the sliding-window
arithmetic, and its adjoint `fold` is its gradient (max pooling has loops of its own: pool.py).
"""
from __future__ import annotations

import math

import numpy as np

from . import refs
from .core import Sample, ShapeError, Spec, bind, fmt_shape, primitive, register
from .elementwise import unbroadcast
from .gemm import matmul2d, sum_nt
from .symbolic import fixing
from .rules import HALF, broadcast, dims_match, result_dtype, shapes_str
from .shape import expand_dims, matrix_transpose, reshape, reshape_like, transpose


# -- matmul -----------------------------------------------------------------------------------
def _matmul_infer(x, y, **_):
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError(f"matmul: both operands need at least 1 dim, got {shapes_str(x, y)}")
    k1 = x.shape[-1]
    k2 = y.shape[-2] if y.ndim >= 2 else y.shape[0]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"matmul: cannot multiply {fmt_shape(x)} by {fmt_shape(y)}: "
                         f"inner dimensions {k1} != {k2}{fixing(k1, k2)}")
    bx = x.shape[:-2] if x.ndim >= 2 else ()
    by = y.shape[:-2] if y.ndim >= 2 else ()
    try:
        batch = broadcast("matmul", Spec(bx, x.dtype), Spec(by, y.dtype))
    except ShapeError:
        raise ShapeError(f"matmul: cannot multiply {fmt_shape(x)} by {fmt_shape(y)}: batch "
                         f"dimensions {fmt_shape(bx)} and {fmt_shape(by)} do not broadcast") \
            from None
    rows = (x.shape[-2],) if x.ndim >= 2 else ()
    cols = (y.shape[-1],) if y.ndim >= 2 else ()
    return Spec(batch + rows + cols, result_dtype(x, y))


def _matmul_vjp(g, x, y, needs=(True, True), **kw):
    if len(x.shape) == 2 and len(y.shape) == 2:
        # NOTE: matrices (every linear layer's case): the products have the operands' shapes,
        # nothing to lift or unbroadcast (30 -> 26 us for an LSTM step's h @ W_hh.T)
        return (matmul(g, transpose(y, axes=(1, 0))) if needs[0] else None,
                matmul(transpose(x, axes=(1, 0)), g) if needs[1] else None)
    # NOTE: 1-d operands are lifted to matrices so one rule covers every case.
    x2 = expand_dims(x, axis=0) if len(x.shape) == 1 else x
    y2 = expand_dims(y, axis=-1) if len(y.shape) == 1 else y
    g2 = g
    if len(y.shape) == 1:
        g2 = expand_dims(g2, axis=-1)
    if len(x.shape) == 1:
        g2 = expand_dims(g2, axis=-2)
    gx = gy = None
    if needs[0] and _same_batch(x, y, g):
        gx = matmul_sum_nt(g, y)     # NOTE: a shared left matrix (conv2d's weight)
    elif needs[0]:
        gx = matmul(g2, matrix_transpose(y2))
        gx = reshape_like(unbroadcast(gx, x2), x) if len(x.shape) == 1 else unbroadcast(gx, x)
    if needs[1]:
        gy = _batched_weight_grad(x, y, g)
        if gy is None:
            gy = matmul(matrix_transpose(x2), g2)
            gy = reshape_like(unbroadcast(gy, y2), y) if len(y.shape) == 1 else unbroadcast(gy, y)
    return gx, gy


def _same_batch(x, y, g):
    """x a matrix, y a stack (B, k, n) of 3 dims, all known (g is then (B, m, n))."""
    xs, ys = tuple(x.shape), tuple(y.shape)
    return len(xs) == 2 and len(ys) == 3 and None not in xs + ys and \
        tuple(g.shape) == ys[:1] + xs[:1] + ys[2:]


def _batched_weight_grad(x, y, g):
    """x (..., m, k) @ y (k, n): y's gradient, the sum over x's batch of x_b^T g_b, as ONE
    matmul (B*m, k)^T @ (B*m, n) instead of B small ones and a sum_to_like (1.4-2x faster,
    both together, on the transformer's weights); None when the shapes do not have that
    form."""
    k, n = (y.shape if len(y.shape) == 2 else (None, None))
    if len(x.shape) < 3 or not k or not n:   # NOTE: -1 cannot stand beside a 0 dim
        return None
    return matmul(transpose(reshape(x, (-1, k)), axes=(1, 0)), reshape(g, (-1, n)))


def _matmul_kernel(x, y):
    """np.matmul; a C-contiguous stack (..., m, k) times a matrix (k, n) as ONE 2-D product,
    and 2-D products through ops/gemm.py (BLAS's threads kept asleep where they do not pay).

    NOTE: NumPy runs the stack as one small gemm per matrix, and with a transposed weight view
    (eager's and the traced `x @ W.T`) slower still: (64, 8, 32) @ (32, 96)^T 57 -> 40 µs."""
    if getattr(x, "dtype", None) in HALF or getattr(y, "dtype", None) in HALF:
        # NOTE: float16 and bfloat16 dot products summed in float32 and rounded once, as torch's CPU
        # kernels do (rules.torch_opmath_dtype); NumPy's float16 loop rounds every step
        out = np.result_type(x, y)
        return np.matmul(np.asarray(x, np.float32), np.asarray(y, np.float32)).astype(out)
    if getattr(x, "dtype", None) == np.complex64 and getattr(y, "dtype", None) == np.complex64 \
            and np.ndim(x) > 2:
        # NOTE: NumPy's stacked complex64 loop sums in complex64 without BLAS: in complex128,
        # rounded once, it is at least as close as torch's (tests/eager/opdb_accuracy.py)
        return np.matmul(x.astype(np.complex128), y.astype(np.complex128)).astype(np.complex64)
    if type(x) is np.ndarray and type(y) is np.ndarray and y.ndim == 2:
        if x.ndim == 2:
            return matmul2d(x, y)
        if x.ndim > 2 and x.flags.c_contiguous:
            rows = math.prod(x.shape[:-1])   # NOTE: spelled out: -1 is ambiguous when k is 0
            return matmul2d(x.reshape(rows, x.shape[-1]), y).reshape(x.shape[:-1] + y.shape[1:])
    return np.matmul(x, y)


MATMUL = register(
    "matmul", _matmul_infer, _matmul_kernel, _matmul_vjp, category="matmul", onnx="MatMul", promote="same",
    zero_from=(0, 1),
    samples=(Sample(((3, 4), (4, 5))), Sample(((2, 3, 4), (4, 5))),
             Sample(((2, 1, 3, 4), (3, 4, 2))), Sample(((4,), (4, 3))), Sample(((3, 4), (4,))),
             Sample(((4,), (4,))),
             Sample(((32, 64), (128, 10)),
                    match=r"matmul: cannot multiply \(32, 64\) by \(128, 10\): "
                          r"inner dimensions 64 != 128"),
             Sample(((2, 3, 4), (3, 4, 5)), match="batch dimensions")),
    ref=lambda np, x, y: np.matmul(x, y), complex=True, tf_name="MatMul")


# -- matmul_sum_nt: the sum over a stack of g_b @ y_b.T --------------------------------------
# NOTE: the gradient of a matrix shared by a stack of products (conv2d's weight against each
# image's columns); as matmul then the unbroadcasting sum it kept B products (m, k) apart.
def _sum_nt_infer(g, y, **_):
    if g.ndim != 3 or y.ndim != 3 or not dims_match(g.shape[:1] + g.shape[2:],
                                                     y.shape[:1] + y.shape[2:]):
        raise ShapeError(f"matmul_sum_nt: expects stacks g (B, m, n) and y (B, k, n), got "
                         f"{fmt_shape(g)} and {fmt_shape(y)}")
    return Spec((g.shape[1], y.shape[1]), result_dtype(g, y))


def _sum_nt_kernel(g, y):
    g, y = np.asarray(g), np.asarray(y)
    if g.ndim != 3 or y.ndim != 3 or g.shape[0] != y.shape[0] or g.shape[2] != y.shape[2]:
        raise ValueError("not (B, m, n) and (B, k, n)")   # NOTE: the shape rule says why
    dt = np.result_type(g, y)
    return sum_nt(g.astype(dt, copy=False), y.astype(dt, copy=False))


def _sum_nt_vjp(v, g, y, needs=(True, True), **_):
    return (matmul(v, y) if needs[0] else None,
            matmul(transpose(v, axes=(1, 0)), g) if needs[1] else None)


MATMUL_SUM_NT = register(
    "matmul_sum_nt", _sum_nt_infer, _sum_nt_kernel, _sum_nt_vjp, category="matmul",
    samples=(Sample(((3, 4, 5), (3, 2, 5))), Sample(((1, 2, 3), (1, 4, 3))),
             Sample(((3, 4, 5), (2, 2, 5)), match=r"matmul_sum_nt: expects stacks")),
    ref=lambda np, g, y: np.einsum("bmn,bkn->mk", g, y))


# -- matmul_nt: x @ w.T, the linear layer's product ---------------------------------------------
# NOTE: as matmul(x, transpose(w)) an eager linear layer cost 2 op calls and 2 tape entries
# forward and 5 calls backward (the product's rule on the transposed view, then the
# transpose's); here 1 and 1, and 2-3 backward: w's gradient comes as g^T x in its own layout.
# The kernel is the same np.matmul on the same strided view, so the same values; compile()
# traces the matmul(x, transpose(w)) form (`decompose`), which the layout pass knows.
def _matmul_nt_infer(x, w, **_):
    if x.ndim == 0 or w.ndim != 2:
        raise ShapeError(f"matmul_nt: expects x (..., k) and a 2-d w (n, k), got "
                         f"{fmt_shape(x)} and {fmt_shape(w)}")
    if x.shape[-1] is not None and w.shape[1] is not None and x.shape[-1] != w.shape[1]:
        raise ShapeError(f"matmul_nt: cannot multiply {fmt_shape(x)} by the transpose of "
                         f"{fmt_shape(w)}: inner dimensions {x.shape[-1]} != {w.shape[1]}"
                         f"{fixing(x.shape[-1], w.shape[1])}")
    return Spec(x.shape[:-1] + (w.shape[0],), result_dtype(x, w))


def _matmul_nt_kernel(x, w):
    if type(w) is not np.ndarray or type(x) is not np.ndarray:
        x, w = np.asarray(x), np.asarray(w)
    if w.ndim != 2 or x.ndim == 0:
        raise ValueError("not (..., k) by (n, k)")   # NOTE: the shape rule says why
    return _matmul_kernel(x, w.T)


def _matmul_nt_vjp(g, x, w, needs=(True, True), **kw):
    gx = matmul(g, w) if needs[0] else None
    gw = None
    if needs[1]:
        n, k = w.shape
        if len(x.shape) != 2:
            if n is None or k is None:
                raise ShapeError(f"matmul_nt: the gradient for w needs its shape, got "
                                 f"{fmt_shape(w.shape)}")
            # NOTE: the row count spelled out where known: -1 is ambiguous when n or k is 0
            lead = x.shape[:-1]
            m = -1 if any(d is None for d in lead) else math.prod(lead)   # NOTE: a Dim too
            x, g = reshape(x, (m, k)), reshape(g, (m, n))
        gw = matmul(transpose(g, axes=(1, 0)), x)
    return gx, gw


MATMUL_NT = register(
    "matmul_nt", _matmul_nt_infer, _matmul_nt_kernel, _matmul_nt_vjp, category="matmul",
    samples=(Sample(((3, 4), (5, 4))), Sample(((2, 3, 4), (5, 4))), Sample(((4,), (3, 4))),
             Sample(((3, 4), (5, 3)), match=r"matmul_nt: cannot multiply \(3, 4\) by the "
                                            r"transpose of \(5, 3\): inner dimensions 4 != 3"),
             Sample(((3, 4), (4,)), match="a 2-d w")),
    ref=lambda np, x, w: np.matmul(x, np.swapaxes(w, 0, 1)), complex=True)
MATMUL_NT.decompose = lambda x, w: matmul(x, transpose(w, axes=(1, 0)))


# -- unfold / fold (im2col) -------------------------------------------------------------------
def pair(v):
    """An int or a (height, width) pair as a pair of ints (torch's `_pair`; a 1-tuple, which
    torch's pooling takes, counts for both)."""
    if type(v) is int:      # NOTE: the common case, ~60 calls per CNN step: np.ndim costs 1 µs
        return (v, v)
    if np.ndim(v) == 0:
        return (int(v), int(v))
    v = tuple(int(a) for a in v)
    return v * 2 if len(v) == 1 else v


def _attr(v):
    """The attr form: one int when both axes agree (as graphs saved before pairs read)."""
    a, b = pair(v)
    return a if a == b else (a, b)


def _window_out(size, k, stride, pad, dilation=1):
    if size is None:
        return None
    return (size + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def window_outs(hw, kernel, stride=1, padding=0, dilation=1):
    """The (Ho, Wo) an unfold with these attrs gives an (H, W) image."""
    return tuple(_window_out(s, k, st, p, d) for s, k, st, p, d in
                 zip(hw, kernel, pair(stride), pair(padding), pair(dilation)))


def _unfold_check(x, kernel, stride, padding, dilation=1, name="unfold"):
    if x.ndim != 4:
        raise ShapeError(f"{name}: expects a 4-d input (N, C, H, W), got {fmt_shape(x)}")
    _, c, h, w = x.shape
    kh, kw = kernel
    for size, k, p, d, axis in zip((h, w), kernel, pair(padding), pair(dilation),
                                   ("height", "width")):
        if size is not None and size + 2 * p < d * (k - 1) + 1:
            raise ShapeError(f"{name}: input {fmt_shape(x)} is smaller than the {kh}x{kw} "
                             f"window along {axis} (with padding {p}, dilation {d})")
    return (c,) + window_outs((h, w), kernel, stride, padding, dilation)


def _unfold_infer(x, kernel, stride=1, padding=0, dilation=1, **_):
    c, ho, wo = _unfold_check(x, kernel, stride, padding, dilation)
    ck = None if c is None else c * kernel[0] * kernel[1]
    cols = None if ho is None or wo is None else ho * wo
    return Spec((x.shape[0], ck, cols), x.dtype)


def _unfold_kernel(x, kernel, stride=1, padding=0, dilation=1):
    """(N, C, H, W) -> (N, C*kh*kw, Ho*Wo), columns in (c, i, j) order like torch.nn.Unfold."""
    from . import native
    ho, wo = window_outs(x.shape[2:], kernel, stride, padding, dilation)
    if ho <= 0 or wo <= 0:
        raise ValueError("the window does not fit")   # NOTE: the shape rule says why
    return native.unfold(x, kernel, pair(stride), pair(padding), pair(dilation), ho, wo)


def _fold_infer(cols, like, kernel, stride=1, padding=0, dilation=1, **_):
    return Spec(like.shape, cols.dtype)


def _fold_kernel(cols, like, kernel, stride=1, padding=0, dilation=1):
    """The adjoint of unfold: scatter-add columns back into an image shaped like `like`."""
    from . import native
    shape = np.shape(like)
    ho, wo = window_outs(shape[2:], kernel, stride, padding, dilation)
    return native.fold(cols, shape, kernel, pair(stride), pair(padding), pair(dilation),
                       ho, wo)


def _unfold_vjp(g, x, kernel, stride=1, padding=0, dilation=1, **kw):
    return (fold(g, x, kernel=kernel, stride=stride, padding=padding, dilation=dilation),)


def _fold_vjp(g, cols, like, kernel, stride=1, padding=0, dilation=1, **kw):
    return (unfold(g, kernel=kernel, stride=stride, padding=padding, dilation=dilation), None)


def _unfold_ref(np, x, kernel, stride=1, padding=0, dilation=1):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, pair(stride), pair(padding), pair(dilation)
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, h, w = x.shape
    ho, wo = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    cols = [x[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
            for i in range(kh) for j in range(kw)]          # each (N, C, Ho, Wo)
    return np.stack(cols, axis=2).reshape(n, c * kh * kw, ho * wo)


UNFOLD = register(
    "unfold", _unfold_infer, _unfold_kernel, _unfold_vjp, category="other",
    samples=(Sample(((2, 3, 5, 5),), {"kernel": (3, 3), "stride": 1, "padding": 0}),
             Sample(((1, 2, 6, 5),), {"kernel": (2, 3), "stride": 2, "padding": 1}),
             Sample(((1, 1, 4, 4),), {"kernel": (2, 2), "stride": 2, "padding": 0}),
             Sample(((1, 2, 7, 6),), {"kernel": (2, 3), "stride": (2, 1), "padding": (1, 0),
                                      "dilation": (2, 1)}),
             Sample(((2, 3, 5),), {"kernel": (3, 3)}, match=r"expects a 4-d input"),
             Sample(((1, 1, 2, 2),), {"kernel": (3, 3)}, match="smaller than the 3x3 window")),
    ref=_unfold_ref, complex=True)
FOLD = register(
    "fold", _fold_infer, _fold_kernel, _fold_vjp, category="other",
    samples=(Sample(((2, 27, 9), (2, 3, 5, 5)), {"kernel": (3, 3), "stride": 1, "padding": 0}),
             Sample(((1, 12, 12), (1, 2, 6, 5)), {"kernel": (2, 3), "stride": 2, "padding": 1}),
             Sample(((1, 12, 16), (1, 2, 7, 6)), {"kernel": (2, 3), "stride": (2, 1),
                                                  "padding": (1, 0), "dilation": (2, 1)})),
    ref=lambda np_, cols, like, **kw: refs.scatter(
        np_, cols, _unfold_ref(np, refs.positions(like.shape, 1), **kw) - 1, like.shape))


def unfold(x, kernel, stride=1, padding=0, dilation=1):
    return bind(UNFOLD, x, kernel=pair(kernel), stride=_attr(stride), padding=_attr(padding),
                dilation=_attr(dilation))


def fold(cols, like, kernel, stride=1, padding=0, dilation=1):
    return bind(FOLD, cols, like, kernel=pair(kernel), stride=_attr(stride),
                padding=_attr(padding), dilation=_attr(dilation))


UNFOLD.fn, FOLD.fn = unfold, fold


# -- one_hot ----------------------------------------------------------------------------------
def _one_hot_infer(idx, num_classes, dtype="float32", **_):
    if idx.dtype.kind not in "iu":
        raise ShapeError(f"one_hot: indices must be integers, got {idx.dtype} for "
                         f"{fmt_shape(idx)}")
    return Spec(idx.shape + (num_classes,), np.dtype(dtype))


def _one_hot_kernel(idx, num_classes, dtype="float32", strict=True):
    """Rows with a 1 at each index; strict (torch) raises for an index outside [0, classes),
    otherwise (TF) its row is all zeros."""
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu":     # NOTE: one_hot(1.5) would be all zeros
        raise TypeError(f"one_hot: indices must be integers, got {idx.dtype}")
    if strict and idx.size:
        lo, hi = idx.min(), idx.max()
        if lo < 0 or hi >= num_classes:
            raise IndexError(f"class index {lo if lo < 0 else hi} is out of range for "
                             f"{num_classes} classes")
    return (idx[..., None] == np.arange(num_classes)).astype(dtype)


ONE_HOT = register("one_hot", _one_hot_infer, _one_hot_kernel, None, category="other",
                   samples=(Sample((np.array([0, 2, 1]),), {"num_classes": 3}, grad=False),
                            Sample((np.array([[0, 5], [-1, 2]]),),
                                   {"num_classes": 3, "strict": False}, grad=False),
                            Sample(((3,),), {"num_classes": 3}, match="must be integers")),
                   ref=lambda np, idx, num_classes, dtype="float32", strict=True:
                       (idx[..., None] == np.arange(num_classes)).astype(dtype))


def one_hot(idx, num_classes, dtype="float32", strict=True):
    """strict=False: an index outside [0, num_classes) gives a row of zeros (tf.one_hot)."""
    return bind(ONE_HOT, idx, num_classes=int(num_classes), dtype=str(np.dtype(dtype)),
                strict=bool(strict))


ONE_HOT.fn = one_hot


# -- randomness -------------------------------------------------------------------------------
class _RNG:
    gen = np.random.default_rng(0)


def manual_seed(seed: int):
    """Seed the generator that random ops (dropout masks, rand_like) draw from."""
    _RNG.gen = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    return _RNG.gen


def _rand_like_kernel(x, dtype="float32"):
    return _RNG.gen.random(np.shape(x), dtype=np.float64).astype(dtype)


RAND_LIKE = register("rand_like", lambda x, dtype="float32", **_: Spec(x.shape, np.dtype(dtype)),
                     _rand_like_kernel, None, category="other", stateful=True, samples=(),
                     ref=None)


def rand_like(x, dtype="float32"):
    """Uniform [0, 1) values shaped like x, drawn at run time (a new draw every run)."""
    return bind(RAND_LIKE, x, dtype=str(np.dtype(dtype)))


RAND_LIKE.fn = rand_like
matmul, matmul_nt = primitive(MATMUL), primitive(MATMUL_NT)
matmul_sum_nt = primitive(MATMUL_SUM_NT)   # sum over b of g[b] @ y[b].T
