"""The LSTM's whole sequence as one primitive each way (eager's nn.LSTM runs on it).

    out = lstm_seq(gx, h0, c0, w_hh[, b_hh], reverse=False, save=True)

runs T steps of the cell of ops/lstm.py from the input gates of every step gx (T, N, 4H)
(x W_ih^T + b_ih, one product for all steps), the state h0, c0 (N, H) and the recurrent
weight w_hh (4H, H) (and bias (4H,)): per step z = gx[t] + (h W_hh^T + b_hh),
c = lstm_cell_c(z, c), h = lstm_cell_h(z, c); `reverse` walks t from T - 1 down to 0. The
result packs rows of (N, H):

    save=True   (6T, N, H): h_t in time order (T rows), the gates z (4T rows: the (T, N, 4H)
                array's memory, in the order the steps ran), the states c (T rows, same order)
    save=False  (T + 1, N, H): h_t in time order, then the last state c

so out[:T] is the output sequence and out[-1] the final c either way (the layer slices views);
save=True keeps what the gradient reads. The gradient is one op too, `lstm_seq_grad`:
backpropagation through time in one kernel call, packed in rows of width H (gx's 4TN rows,
h0's N, c0's N, w_hh's 4H, then b_hh's 4).

NOTE: run as per-step ops, an eager LSTM step costs ~5 tape entries forward (the slice of gx,
the product, the bias add, the gates' add, the two cell ops) and ~10 backward, 50 steps each
way in the training benchmark's layer; here one and one. The kernels call the very kernels
the composite's ops call, in the same order (the product through matmul_nt's kernel, the cell
through ops/native.py's lstm loops, the bias gradient through sum_to_like's, w_hh's and
b_hh's per-step gradients added in reverse time order as eager's backward adds them), so the
values are the composite's bit for bit. The op carries the composite as `decompose`, which
compile() traces; when the backward records (create_graph, graph mode's `gradients`) the rule
is that composite's gradient written in differentiable ops, so double backward works as
through the per-step ops.

>>> import numpy as np
>>> from dualgrad import ops
>>> gx, s = np.zeros((2, 1, 4), np.float32), np.zeros((1, 1), np.float32)
>>> out = ops.lstm_seq(gx, s, s, np.zeros((4, 1), np.float32), save=False)
>>> out.shape, out[-1]             # (T + 1, N, H); c_2 = 0.5 * (0.5 * 0 + 0.5 * tanh(0))
((3, 1, 1), array([[0.]], dtype=float32))
"""
from __future__ import annotations

import numpy as np

from .core import Sample, ShapeError, Spec, bind, fmt_shape, register
from .composite import linear, stack
from .lstm import _c_vjp, _h_vjp, lstm_cell_c, lstm_cell_h
from .nn import MATMUL, MATMUL_NT, matmul
from .norm import _records
from .rules import dims_match, floating, result_dtype
from .shape import SUM_TO_LIKE, concat, reshape, reshape_like, slice_, sum_to_like, transpose


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _order(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


# -- shape rules ------------------------------------------------------------------------------
def _sizes(name, gx, h0, c0, w, b):
    """(T, N, H) of a well-shaped call (None where unknown), or a ShapeError."""
    h = next((d for d in (h0.shape[-1:] + c0.shape[-1:] + w.shape[1:]) if d is not None), None) \
        if h0.ndim == 2 and w.ndim == 2 else None
    g = None if h is None else 4 * h
    ok = gx.ndim == 3 and h0.ndim == c0.ndim == w.ndim == 2 and \
        dims_match(h0.shape, c0.shape) and dims_match(h0.shape, (gx.shape[1], h)) and \
        dims_match(gx.shape[2:], (g,)) and dims_match(w.shape, (g, h)) and \
        all(len(x.shape) == 1 and dims_match(x.shape, (g,)) for x in b)
    if not ok:
        raise ShapeError(f"{name}: input gates {fmt_shape(gx)} must be (T, N, 4H) for states "
                         f"h0 {fmt_shape(h0)} and c0 {fmt_shape(c0)} (N, H), w_hh "
                         f"{fmt_shape(w)} (4H, H)"
                         + "".join(f" and b_hh {fmt_shape(x)} (4H,)" for x in b))
    n = next((d for d in (gx.shape[1], h0.shape[0], c0.shape[0]) if d is not None), None)
    return gx.shape[0], n, h


def _dtype(*specs):
    dt = result_dtype(*specs)
    return dt if floating(dt) else np.dtype(np.float32)


def _infer(gx, h0, c0, w, *b, reverse=False, save=True):
    t, n, h = _sizes("lstm_seq", gx, h0, c0, w, b)
    rows = None if t is None else 6 * t if save else t + 1
    return Spec((rows, n, h), _dtype(gx, h0, c0, w, *b))


def _grad_infer(h0, c0, w, out, g, reverse=False, bias=True):
    h = w.shape[1] if w.ndim == 2 else None
    if out.ndim != 3 or not dims_match(g.shape, out.shape) or (
            out.shape[0] is not None and out.shape[0] % 6):
        raise ShapeError(f"lstm_seq_grad: the forward's result {fmt_shape(out)} must be "
                         f"(6T, N, H) and its gradient {fmt_shape(g)} of that shape")
    t = None if out.shape[0] is None else out.shape[0] // 6
    gx = Spec((t, out.shape[1], None if h is None else 4 * h), out.dtype)
    t, n, h = _sizes("lstm_seq_grad", gx, h0, c0, w, ())
    rows = None if None in (t, n, h) else 4 * t * n + 2 * n + 4 * h + 4 * bias
    return Spec((rows, h), _dtype(h0, c0, w, out, g))


# -- kernels ----------------------------------------------------------------------------------
def _ready(*arrays):
    """C-contiguous float32/float64 arrays of one dtype: the kernels' loops."""
    dt = arrays[0].dtype if type(arrays[0]) is np.ndarray else None
    return dt is not None and dt.char in "fd" and all(
        type(a) is np.ndarray and a.dtype is dt and a.flags.c_contiguous for a in arrays)


def _kernel(gx, h0, c0, w, *b, reverse=False, save=True):
    from . import native     # NOTE: on first use: importing dualgrad does not import numba
    if not _ready(gx, h0, c0, w, *b):
        return np.asarray(_composite(*[np.asarray(a) for a in (gx, h0, c0, w) + b],
                                     reverse=reverse, save=save))
    steps, n, g = gx.shape
    if h0.shape != (n, g // 4) or c0.shape != h0.shape or w.shape != (g, g // 4) or \
            any(x.shape != (g,) for x in b):
        raise ValueError("shapes")   # NOTE: the shape rule says why
    out = np.empty((6 * steps if save else steps + 1, n, g // 4), gx.dtype)
    zs = out[steps:5 * steps].reshape(steps, n, g) if save else None
    h, c = h0, c0
    for k, t in enumerate(_order(steps, reverse)):
        m = MATMUL_NT.kernel(h, w)           # NOTE: F.linear's product and bias add, then + gx
        if b:
            m = np.add(m, b[0], out=m)
        z = np.add(gx[t], m, out=zs[k] if save else m)
        c = native.lstm_c(z, c, out[5 * steps + k] if save else None)
        h = native.lstm_h(z, c, out[t])
    if not save:
        out[steps] = c
    return out


def _grad_kernel(h0, c0, w, out, g, reverse=False, bias=True):
    from . import native
    dt = np.result_type(h0, c0, w, out, g)
    dt = dt if floating(dt) else np.dtype(np.float32)
    work = dt if dt.char in "fd" else np.dtype(np.float32)
    h0, c0, w, out, g = [np.ascontiguousarray(a, work) for a in (h0, c0, w, out, g)]
    steps, n, h = out.shape[0] // 6, out.shape[1], w.shape[1]
    if out.shape[0] % 6 or out.shape != g.shape or h0.shape != (n, h) or c0.shape != (n, h) \
            or w.shape != (4 * h, h) or out.shape[2] != h:
        raise ValueError("shapes")
    res = np.empty((4 * steps * n + 2 * n + 4 * h + 4 * bias, h), work)
    dgx = res[:4 * steps * n].reshape(steps, n, 4 * h)
    hs, zs, cs = out[:steps], out[steps:5 * steps].reshape(steps, n, 4 * h), out[5 * steps:]
    gz, gc = g[steps:5 * steps].reshape(steps, n, 4 * h), g[5 * steps:]
    order = list(_order(steps, reverse))
    dh = dc = dw = db = None
    like_b = np.empty(4 * h, work)     # NOTE: sum_to_like reads its shape only
    for k in range(steps - 1, -1, -1):
        t = order[k]
        dh = g[t] if dh is None else g[t] + dh
        p = native.lstm_h_grad(zs[k], cs[k], dh)
        dc = p[:, 4 * h:] if dc is None else p[:, 4 * h:] + dc
        dc = dc + gc[k]
        q = native.lstm_c_grad(zs[k], cs[k - 1] if k else c0, dc)
        dz = np.add(q[:, :4 * h], p[:, :4 * h], out=dgx[t])
        dz += gz[k]
        h_prev = hs[order[k - 1]] if k else h0
        step_w = MATMUL.kernel(dz.T, h_prev)   # NOTE: matmul_nt's rule: matmul(g^T, x)
        dw = step_w if dw is None else np.add(dw, step_w, out=dw)
        if bias:
            step_b = SUM_TO_LIKE.kernel(dz, like_b)
            db = step_b if db is None else np.add(db, step_b, out=db)
        dh, dc = MATMUL.kernel(dz, w), q[:, 4 * h:]
    rows = 4 * steps * n
    res[rows:rows + n], res[rows + n:rows + 2 * n] = dh, dc
    res[rows + 2 * n:rows + 2 * n + 4 * h] = dw
    if bias:
        res[rows + 2 * n + 4 * h:] = db.reshape(4, h)
    return res if dt == work else res.astype(dt)


# -- gradient rules ---------------------------------------------------------------------------
def _rows(x, lo, hi):
    return slice_(x, index=(slice(lo, hi),))


def _vjp(g, gx, h0, c0, w, *b, out=None, needs=None, reverse=False, save=True):
    needs = needs or (True,) * (4 + len(b))
    if not save or _records(g):
        return _composite_vjp(g, gx, h0, c0, w, *b, reverse=reverse, save=save, needs=needs)
    steps, n, h = _known(gx, w)
    p = lstm_seq_grad(h0, c0, w, out, g, reverse=reverse, bias=bool(b))
    r = 4 * steps * n
    grads = [reshape_like(_rows(p, 0, r), gx), _rows(p, r, r + n), _rows(p, r + n, r + 2 * n),
             _rows(p, r + 2 * n, r + 2 * n + 4 * h)]
    grads += [reshape_like(_rows(p, r + 2 * n + 4 * h, r + 2 * n + 4 * h + 4), x) for x in b]
    return tuple(x if need else None for x, need in zip(grads, needs))


def _known(gx, w):
    steps, n, _ = _shape(gx)
    h = _shape(w)[1]
    if None in (steps, n, h):
        raise ShapeError(f"lstm_seq: the gradient needs the number of steps, the batch and the "
                         f"hidden size, unknown in input gates {fmt_shape(_shape(gx))} and "
                         f"w_hh {fmt_shape(_shape(w))}")
    return steps, n, h


def _composite_vjp(g, gx, h0, c0, w, *b, reverse, save, needs):
    """The per-step composite's gradient in differentiable ops: its forward again, then its
    steps' rules in reverse (the rules of lstm_cell_h, lstm_cell_c, add, linear)."""
    steps, n, h = _known(gx, w)
    ran = _steps(gx, h0, c0, w, b, reverse)
    gz = reshape(_rows(g, steps, 5 * steps), (steps, n, 4 * h)) if save else None
    dgx, dh, dc, dw, db = [None] * steps, None, None, None, None
    for k in range(steps - 1, -1, -1):
        t, z, c_prev, c, h_prev = ran[k]
        dh = slice_(g, index=(t,)) if dh is None else slice_(g, index=(t,)) + dh
        dz_h, dc_h = _h_vjp(dh, z, c)
        dc = dc_h if dc is None else dc_h + dc
        if save or k == steps - 1:
            dc = dc + slice_(g, index=(5 * steps + k if save else steps,))
        dz_c, dc = _c_vjp(dc, z, c_prev)
        dz = dz_c + dz_h
        dgx[t] = dz + slice_(gz, index=(k,)) if save else dz
        dz = dgx[t]
        step_w = matmul(transpose(dz, axes=(1, 0)), h_prev)
        dw = step_w if dw is None else dw + step_w
        if b:
            db = sum_to_like(dz, b[0]) if db is None else db + sum_to_like(dz, b[0])
        dh = matmul(dz, w)
    grads = (stack(*dgx, axis=0), dh, dc, dw) + ((db,) if b else ())
    return tuple(x if need else None for x, need in zip(grads, needs))


# -- the composite (what compile() traces) and the reference -----------------------------------
def _steps(gx, h0, c0, w, b, reverse):
    """[(t, z, c_{t-1}, c_t, h_{t-1})] in the order the steps run, as per-step ops."""
    h, c, ran = h0, c0, []
    for t in _order(_shape(gx)[0], reverse):
        z = slice_(gx, index=(t,)) + linear(h, w, b[0] if b else None)
        c_new = lstm_cell_c(z, c)
        ran.append((t, z, c, c_new, h))
        h, c = lstm_cell_h(z, c_new), c_new
    ran.append((None, None, c, None, h))   # NOTE: the last state, read by _composite
    return ran


def _composite(gx, h0, c0, w, *b, reverse=False, save=True):
    ran = _steps(gx, h0, c0, w, b, reverse)
    *ran, (_, _, c_last, _, h_last) = ran
    steps = len(ran)
    hs = [x[4] for x in ran[1:]] + [h_last]          # h_t in the order the steps ran
    by_time = [None] * steps
    for (t, *_), h in zip(ran, hs):
        by_time[t] = h
    if not save:
        return stack(*by_time, c_last, axis=0)
    n, h = _shape(h0)
    zs = reshape(stack(*[x[1] for x in ran], axis=0), (4 * steps, n, h))
    return concat(stack(*by_time, axis=0), zs, stack(*[x[3] for x in ran], axis=0), axis=0)


def _ref(np, gx, h0, c0, w, *b, reverse=False, save=True):
    steps, hidden = gx.shape[0], h0.shape[-1]
    h, c, hs, zs, cs = h0, c0, [None] * steps, [], []
    for t in _order(steps, reverse):
        z = gx[t] + h @ w.T + (b[0] if b else 0)
        s = 1 / (1 + np.exp(-z))
        i, f, o = s[:, :hidden], s[:, hidden:2 * hidden], s[:, 3 * hidden:]
        c = f * c + i * np.tanh(z[:, 2 * hidden:3 * hidden])
        h = o * np.tanh(c)
        hs[t], zs, cs = h, zs + [z], cs + [c]
    if not save:
        return np.stack(hs + [c])
    return np.concatenate([np.stack(hs), np.stack(zs).reshape(-1, *h0.shape), np.stack(cs)])


def _grad_ref(np, h0, c0, w, out, g, reverse=False, bias=True):
    """Backpropagation through time from the saved gates and states, as NumPy reads it."""
    steps, hidden = out.shape[0] // 6, w.shape[1]
    hs, zs, cs = out[:steps], out[steps:5 * steps].reshape(steps, -1, 4 * hidden), \
        out[5 * steps:]
    order = list(_order(steps, reverse))
    dt = out.dtype
    dgx, dh, dc = np.zeros(zs.shape, dt), np.zeros(h0.shape, dt), np.zeros(h0.shape, dt)
    dw, db = np.zeros(w.shape, dt), np.zeros(4 * hidden, dt)
    for k in range(steps - 1, -1, -1):
        t, z = order[k], zs[k]
        s = 1 / (1 + np.exp(-z))
        i, f, o = s[:, :hidden], s[:, hidden:2 * hidden], s[:, 3 * hidden:]
        gg, tc = np.tanh(z[:, 2 * hidden:3 * hidden]), np.tanh(cs[k])
        dh = g[t] + dh
        dc = dc + g[5 * steps + k] + dh * o * (1 - tc * tc)
        c_prev = cs[k - 1] if k else c0
        dz = np.concatenate([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - gg * gg), dh * tc * o * (1 - o)], axis=-1)
        dz = dz + g[steps + 4 * k:steps + 4 * k + 4].reshape(dz.shape)
        dgx[t] = dz
        dw, db = dw + dz.T @ (hs[order[k - 1]] if k else h0), db + dz.sum(0)
        dh, dc = dz @ w, dc * f
    parts = [dgx.reshape(-1, hidden), dh, dc, dw] + ([db.reshape(4, hidden)] if bias else [])
    return np.concatenate(parts)


_SEQ = ((3, 2, 8), (2, 2), (2, 2), (8, 2))
_BAD = (r"lstm_seq: input gates \(3, 2, 8\) must be \(T, N, 4H\) for states h0 \(2, 3\) and "
        r"c0 \(2, 3\) \(N, H\), w_hh \(8, 2\) \(4H, H\)")
LSTM_SEQ = register(
    "lstm_seq", _infer, _kernel, _vjp, category="other",
    samples=(Sample(_SEQ + ((8,),)), Sample(_SEQ, {"reverse": True}),
             Sample(((4, 3, 12), (3, 3), (3, 3), (12, 3), (12,)), {"save": False}),
             Sample(((1, 1, 4), (1, 1), (1, 1), (4, 1)), {"reverse": True, "save": False}),
             Sample(((3, 2, 8), (2, 3), (2, 3), (8, 2)), match=_BAD)),
    ref=_ref)
LSTM_SEQ_GRAD = register(
    "lstm_seq_grad", _grad_infer, _grad_kernel, None, category="other",
    samples=(Sample(((2, 2), (2, 2), (8, 2), (18, 2, 2), (18, 2, 2)), grad=False),
             Sample(((2, 2), (2, 2), (8, 2), (12, 2, 2), (12, 2, 2)),
                    {"reverse": True, "bias": False}, grad=False),
             Sample(((2, 2), (2, 2), (8, 2), (13, 2, 2), (13, 2, 2)),
                    match=r"lstm_seq_grad: the forward's result \(13, 2, 2\) must be")),
    ref=_grad_ref)
LSTM_SEQ.decompose = _composite


def lstm_seq(gx, h0, c0, w_hh, b_hh=None, reverse=False, save=True):
    """T LSTM steps from the input gates gx (T, N, 4H), the state h0, c0 (N, H) and w_hh
    (4H, H) (b_hh (4H,) or None), packed (6T, N, H) (save) or (T + 1, N, H): see the module
    docstring."""
    b = () if b_hh is None else (b_hh,)
    return bind(LSTM_SEQ, gx, h0, c0, w_hh, *b, reverse=bool(reverse), save=bool(save))


def lstm_seq_grad(h0, c0, w_hh, out, g, reverse=False, bias=True):
    """lstm_seq's gradient for g from its saved result out, packed in rows of width H."""
    return bind(LSTM_SEQ_GRAD, h0, c0, w_hh, out, g, reverse=bool(reverse), bias=bool(bias))


LSTM_SEQ.fn, LSTM_SEQ_GRAD.fn = lstm_seq, lstm_seq_grad
