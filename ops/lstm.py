"""The LSTM cell's pointwise part as primitives: from the gates z = x W_ih^T + h W_hh^T + b
(..., 4H, torch's order i, f, g, o) and the state c (..., H),

    c' = lstm_cell_c(z, c) = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h' = lstm_cell_h(z, c') = sigmoid(o) * tanh(c')

each one kernel, and their gradients `lstm_cell_c_grad` / `lstm_cell_h_grad` one kernel each,
packed (..., 5H): the gradient for z, then the one for the state (the rules slice it).

NOTE: as a composite (one sigmoid over the four gates, four slices, tanh, mul, mul, add, tanh,
mul) an eager LSTM step cost ~11 op calls forward and ~15 backward (slice_grads, sums, the
activations' gradients); here 2 and 2 plus the views and the sums of the two gradients. The
values are the composite's: the same float operations in the same order (sigmoid as the
`sigmoid` kernel computes it, NumPy's exp and tanh). Each op carries its composite as
`decompose`: compile() traces that instead, so the optimiser sees elementwise ops it fuses
(with the rest of the step) as before.

>>> import numpy as np
>>> from dualgrad import ops
>>> z, c = np.zeros((1, 4), np.float32), np.ones((1, 1), np.float32)
>>> ops.lstm_cell_c(z, c)          # 0.5 * 1 + 0.5 * tanh(0)
array([[0.5]], dtype=float32)
>>> np.round(ops.lstm_cell_h(z, ops.lstm_cell_c(z, c)), 4)
array([[0.2311]], dtype=float32)
"""
from __future__ import annotations

import numpy as np
from .rules import floating

from .core import Sample, ShapeError, Spec, bind, fmt_shape, register
from .elementwise import sigmoid, tanh
from .rules import dims_match, result_dtype
from .shape import concat, slice_, zeros_like


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


# -- shape rules ------------------------------------------------------------------------------
def _hidden(z, c):
    """H from the state's last dim, or the gates' (4H); None when neither is known."""
    h = c.shape[-1] if c.ndim else None
    if h is None and z.ndim and z.shape[-1] is not None:
        h = z.shape[-1] // 4
    return h


def _infer(name, grad):
    def rule(z, c, *u, **_):
        h = _hidden(z, c)
        if z.ndim != c.ndim or not c.ndim or (h is not None and z.shape[-1] not in (None, 4 * h)) \
                or not dims_match(z.shape[:-1], c.shape[:-1]):
            raise ShapeError(f"{name}: gates {fmt_shape(z)} must be the state {fmt_shape(c)} "
                             f"with a last axis 4 times as long (i, f, g, o)")
        if u and not dims_match(u[0].shape, c.shape):
            raise ShapeError(f"{name}: gradient {fmt_shape(u[0])} must have the state's shape "
                             f"{fmt_shape(c)}")
        lead = tuple(b if a is None else a for a, b in zip(z.shape[:-1], c.shape[:-1]))
        dt = result_dtype(z, c, *u)
        last = None if h is None else 5 * h if grad else h
        return Spec(lead + (last,), dt if floating(dt) else
                    np.dtype(np.float32))
    return rule


# -- kernels ----------------------------------------------------------------------------------
def _kernel(name, grad):
    def run(z, c, *u):
        from . import native     # NOTE: on first use: importing dualgrad does not import numba
        fn = getattr(native, name)
        if _ready(z, c, u):      # NOTE: eager's case, 4 us less than the general path
            return fn(z, c, *u)
        z, c, u = np.asarray(z), np.asarray(c), [np.asarray(a) for a in u]
        h = c.shape[-1] if c.ndim else 0
        if not c.ndim or z.shape != c.shape[:-1] + (4 * h,) or any(a.shape != c.shape for a in u):
            raise ValueError("shapes")   # NOTE: the shape rule says why
        dt = np.result_type(z, c, *u)
        work = dt if dt in (np.float32, np.float64) else np.dtype(np.float32)
        z2, c2 = z.reshape(-1, 4 * h).astype(work, copy=False), c.reshape(-1, h).astype(work, copy=False)
        args = [z2, c2] + [a.reshape(-1, h).astype(work, copy=False) for a in u]
        out = fn(*args)
        out = out.reshape(c.shape[:-1] + out.shape[-1:])
        return out if not floating(dt) or dt == work else out.astype(dt)
    return run


def _ready(z, c, u):
    """2-d C-contiguous float32/float64 arrays of one dtype and the cell's shapes."""
    if type(z) is not np.ndarray or type(c) is not np.ndarray or c.ndim != 2 or \
            z.dtype is not c.dtype or c.dtype.char not in "fd" or \
            z.shape != (c.shape[0], 4 * c.shape[1]) or not z.flags.c_contiguous:
        return False
    return not u or (type(u[0]) is np.ndarray and u[0].dtype is c.dtype and
                     u[0].shape == c.shape)


# -- gradient rules ---------------------------------------------------------------------------
def _block(x, k, h):
    """Gate k's columns of x (..., n*h), indexed as the composite indexes them."""
    return slice_(x, index=(slice(None),) * (len(_shape(x)) - 1) + (slice(k * h, (k + 1) * h),))


def _size(z, c):
    h = _shape(c)[-1]
    h = _shape(z)[-1] // 4 if h is None and _shape(z)[-1] is not None else h
    if h is None:
        raise ShapeError(f"lstm_cell: the gradient needs the hidden size, unknown in gates "
                         f"{fmt_shape(_shape(z))} and state {fmt_shape(_shape(c))}")
    return h


def _unpack(p, h, needs):
    """The packed gradient (..., 5H) as (gradient for z, gradient for the state)."""
    lead = (slice(None),) * (len(_shape(p)) - 1)
    return (slice_(p, index=lead + (slice(0, 4 * h),)) if needs[0] else None,
            slice_(p, index=lead + (slice(4 * h, 5 * h),)) if needs[1] else None)


def _c_vjp(g, z, c, out=None, needs=(True, True), **_):
    return _unpack(lstm_cell_c_grad(z, c, g), _size(z, c), needs)


def _h_vjp(g, z, c, out=None, needs=(True, True), **_):
    return _unpack(lstm_cell_h_grad(z, c, g), _size(z, c), needs)


def _c_grad_vjp(v, z, c, u, out=None, needs=(True, True, True), **_):
    """Double backward of c' = sigmoid(f) c + sigmoid(i) tanh(g), from its gradient's blocks
    (u t a', u c b', u a t', 0, u b) with a, b the sigmoids, t the tanh, ' their derivative."""
    h = _size(z, c)
    a, b, t = sigmoid(_block(z, 0, h)), sigmoid(_block(z, 1, h)), tanh(_block(z, 2, h))
    vi, vf, vg, vc = _block(v, 0, h), _block(v, 1, h), _block(v, 2, h), _block(v, 4, h)
    da, db, dt = a * (1.0 - a), b * (1.0 - b), 1.0 - t * t
    dz = None
    if needs[0]:
        dzi = u * (vi * t * da * (1.0 - 2.0 * a) + vg * dt * da)
        dzf = u * (vf * c * db * (1.0 - 2.0 * b) + vc * db)
        dzg = u * (vi * da * dt - 2.0 * vg * a * t * dt)
        dz = concat(dzi, dzf, dzg, zeros_like(dzi), axis=-1)
    return (dz, vf * u * db if needs[1] else None,
            vi * t * da + vf * c * db + vg * a * dt + vc * b if needs[2] else None)


def _h_grad_vjp(v, z, c, u, out=None, needs=(True, True, True), **_):
    """Double backward of h' = sigmoid(o) tanh(c), whose gradient's blocks are
    (0, 0, 0, u T o', u o T') with o the sigmoid, T = tanh(c), ' their derivative."""
    h = _size(z, c)
    o, t = sigmoid(_block(z, 3, h)), tanh(c)
    vo, vc = _block(v, 3, h), _block(v, 4, h)
    do, dt = o * (1.0 - o), 1.0 - t * t
    dz = None
    if needs[0]:
        dzo = u * (vo * t * do * (1.0 - 2.0 * o) + vc * do * dt)
        zero = zeros_like(dzo)
        dz = concat(zero, zero, zero, dzo, axis=-1)
    return (dz, u * (vo * do * dt - 2.0 * vc * o * t * dt) if needs[1] else None,
            vo * t * do + vc * o * dt if needs[2] else None)


# -- composites (what compile() traces) and references -----------------------------------------
def _c_composite(z, c):
    h = _size(z, c)
    s = sigmoid(z)       # NOTE: one sigmoid over all four gates: the optimiser's CSE merges it
    return _block(s, 1, h) * c + _block(s, 0, h) * tanh(_block(z, 2, h))   # with lstm_cell_h's


def _h_composite(z, c):
    return _block(sigmoid(z), 3, _size(z, c)) * tanh(c)


def _gates_ref(np, z, h):
    s = 1 / (1 + np.exp(-z))
    return s[..., :h], s[..., h:2 * h], np.tanh(z[..., 2 * h:3 * h]), s[..., 3 * h:]


def _c_ref(np, z, c):
    i, f, g, _ = _gates_ref(np, z, c.shape[-1])
    return f * c + i * g


def _h_ref(np, z, c):
    return _gates_ref(np, z, c.shape[-1])[3] * np.tanh(c)


def _c_grad_ref(np, z, c, u):
    i, f, g, _ = _gates_ref(np, z, c.shape[-1])
    return np.concatenate([u * g * i * (1 - i), u * c * f * (1 - f), u * i * (1 - g * g),
                           np.zeros_like(u), u * f], axis=-1)


def _h_grad_ref(np, z, c, u):
    o, t = _gates_ref(np, z, c.shape[-1])[3], np.tanh(c)
    zero = np.zeros_like(u)
    return np.concatenate([zero, zero, zero, u * t * o * (1 - o), u * o * (1 - t * t)], axis=-1)


_BAD = r"gates \(4, 20\) must be the state \(4, 4\) with a last axis 4 times as long"
_FWD = (Sample(((4, 20), (4, 5))), Sample(((2, 3, 8), (2, 3, 2))), Sample(((8,), (2,))),
        Sample(((4, 20), (4, 4)), match=_BAD),
        Sample(((4, 20), (3, 5)), match=r"gates \(4, 20\) must be the state \(3, 5\)"))
_BWD = (Sample(((4, 20), (4, 5), (4, 5))), Sample(((2, 3, 8), (2, 3, 2), (2, 3, 2))),
        Sample(((4, 20), (4, 4), (4, 4)), match=_BAD),
        Sample(((4, 20), (4, 5), (4, 4)), match=r"gradient \(4, 4\) must have the state's "
                                                  r"shape \(4, 5\)"))
LSTM_CELL_C = register("lstm_cell_c", _infer("lstm_cell_c", False), _kernel("lstm_c", False),
                       _c_vjp, category="other", samples=_FWD, ref=_c_ref)
LSTM_CELL_H = register("lstm_cell_h", _infer("lstm_cell_h", False), _kernel("lstm_h", False),
                       _h_vjp, category="other", samples=_FWD, ref=_h_ref)
LSTM_CELL_C_GRAD = register("lstm_cell_c_grad", _infer("lstm_cell_c_grad", True),
                            _kernel("lstm_c_grad", True), _c_grad_vjp, category="other",
                            samples=_BWD, ref=_c_grad_ref)
LSTM_CELL_H_GRAD = register("lstm_cell_h_grad", _infer("lstm_cell_h_grad", True),
                            _kernel("lstm_h_grad", True), _h_grad_vjp, category="other",
                            samples=_BWD, ref=_h_grad_ref)
LSTM_CELL_C.decompose, LSTM_CELL_H.decompose = _c_composite, _h_composite


def lstm_cell_c(z, c):
    """The LSTM's new state sigmoid(f) * c + sigmoid(i) * tanh(g) from the gates z (..., 4H,
    in torch's order i, f, g, o) and the state c (..., H)."""
    return bind(LSTM_CELL_C, z, c)


def lstm_cell_h(z, c):
    """The LSTM's output sigmoid(o) * tanh(c) from the gates z (..., 4H) and the new state c."""
    return bind(LSTM_CELL_H, z, c)


def lstm_cell_c_grad(z, c, u):
    """lstm_cell_c's gradient for u, packed (..., 5H): for z (o's block zero), then for c."""
    return bind(LSTM_CELL_C_GRAD, z, c, u)


def lstm_cell_h_grad(z, c, u):
    """lstm_cell_h's gradient for u, packed (..., 5H): for z (i, f, g's blocks zero), then c."""
    return bind(LSTM_CELL_H_GRAD, z, c, u)


LSTM_CELL_C.fn, LSTM_CELL_H.fn = lstm_cell_c, lstm_cell_h
LSTM_CELL_C_GRAD.fn, LSTM_CELL_H_GRAD.fn = lstm_cell_c_grad, lstm_cell_h_grad
