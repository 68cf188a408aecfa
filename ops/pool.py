"""Max pooling as two primitives: `max_pool` (each window's maximum) and `max_pool_grad` (the
gradient scattered to each window's maximum), both one numba loop over the windows.

NOTE: as a composite (unfold into windows, max over them; backward the max's rule: broadcast,
eq, cast, sum, div, mul and fold) the CNN's one max-pool cost 2 op calls forward and ~10
backward, ~0.2 ms of an eager step of ~1.1 ms. The gradient goes to the first maximum of each
window (in row-major window order), as torch's max_pool2d: ties do not share it. nan wins a
window as in torch (a later nan over an earlier one), padding counts as -inf, and the extra
bottom/right rows and columns that ceil_mode adds are padding too.

>>> import numpy as np
>>> from dualgrad import ops
>>> x = np.array([[[[1.0, 3.0], [3.0, 2.0]]]], np.float32)
>>> ops.max_pool(x, kernel=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1))
array([[[[3.]]]], dtype=float32)
>>> ops.max_pool_grad(x, np.ones((1, 1, 1, 1), np.float32), kernel=(2, 2), stride=(2, 2),
...                   padding=(0, 0), dilation=(1, 1))[0, 0]
array([[0., 1.],
       [0., 0.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from . import refs
from .composite import _shape
from .core import Sample, ShapeError, Spec, bind, fmt_shape, register, spec_of
from .elementwise import ne, where
from .index import gather
from .nn import pair
from .reduce import argmax, max_
from .rules import floating
from .shape import reshape, take


def _outs(hw, kernel, stride, padding, dilation, extra):
    return tuple(None if n is None else (n + 2 * p + e - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d, e in zip(hw, kernel, stride, padding, dilation, extra))


def _max_pool_infer(x, kernel, stride, padding, dilation, extra=(0, 0), **_):
    if x.ndim != 4:
        raise ShapeError(f"max_pool: expects a 4-d input (N, C, H, W), got {fmt_shape(x)}")
    ho, wo = _outs(x.shape[2:], kernel, stride, padding, dilation, extra)
    if (ho is not None and ho < 1) or (wo is not None and wo < 1):
        raise ShapeError(f"max_pool: input {fmt_shape(x)} is smaller than the window "
                         f"{tuple(kernel)} (padding {tuple(padding)}, dilation "
                         f"{tuple(dilation)})")
    return Spec(x.shape[:2] + (ho, wo), x.dtype)


def _max_pool_grad_infer(x, g, kernel, stride, padding, dilation, extra=(0, 0), **_):
    spec = _max_pool_infer(x, kernel, stride, padding, dilation, extra)
    if g.ndim != 4 or any(a is not None and b is not None and a != b
                          for a, b in zip(g.shape, spec.shape)):
        raise ShapeError(f"max_pool_grad: gradient {fmt_shape(g)} must have the shape of the "
                         f"pooled output {fmt_shape(spec.shape)} of {fmt_shape(x)}")
    return Spec(x.shape, g.dtype)


def _geometry(x, kernel, stride, padding, dilation, extra):
    """(kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo); the attrs are pairs (`max_pool` makes them)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (eh, ew) = kernel, stride, padding, dilation, extra
    _, _, h, w = x.shape
    ho = (h + 2 * ph + eh - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw + ew - dw * (kw - 1) - 1) // sw + 1
    if ho < 1 or wo < 1:
        raise ValueError("the window does not fit")   # NOTE: the shape rule says why
    return kh, kw, sh, sw, ph, pw, dh, dw, ho, wo


def _max_pool_kernel(x, kernel, stride, padding, dilation, extra=(0, 0)):
    from . import native
    x = np.asarray(x)
    geo = _geometry(x, kernel, stride, padding, dilation, extra)
    return native.max_pool(x, geo)


def _max_pool_grad_kernel(x, g, kernel, stride, padding, dilation, extra=(0, 0)):
    from . import native
    x, g = np.asarray(x), np.asarray(g)
    geo = _geometry(x, kernel, stride, padding, dilation, extra)
    if g.shape != x.shape[:2] + geo[-2:]:
        raise ValueError("the gradient is not the pooled output's shape")  # NOTE: the rule says
    return native.max_pool_grad(x, g, geo)


def _max_pool_vjp(g, x, out=None, needs=(True,), **attrs):
    return (max_pool_grad(x, g, **attrs),)


def _max_pool_grad_vjp(u, x, g, out=None, needs=(True, True), **attrs):
    """max_pool_grad is linear in g and piecewise constant in x: u read at each maximum."""
    if not needs[1]:
        return None, None
    xs = _shape(x)
    ho, wo = _outs(xs[2:], attrs["kernel"], attrs["stride"], attrs["padding"],
                   attrs["dilation"], attrs.get("extra", (0, 0)))
    picked = gather(reshape(u, (-1, xs[1], xs[2] * xs[3])), window_argmax(x, **attrs), axis=2)
    return None, reshape(picked, (-1, xs[1], ho, wo))


def window_argmax(x, kernel, stride, padding, dilation, extra=(0, 0)):
    """(N, C, Ho * Wo): each window's first maximum as a flat index into its channel's H * W
    (torch's return_indices)."""
    from . import native
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (pair(v) for v in (kernel, stride, padding,
                                                               dilation))
    _, c, h, w = _shape(x)
    ho, wo = _outs((h, w), (kh, kw), (sh, sw), (ph, pw), (dh, dw), extra)
    # NOTE: the windows read through max_pool's index map, where a padded slot repeats an
    # earlier inside one: padding is never picked, as in torch, whose scan starts at the
    # window's first inside position (padding with the dtype's minimum tied with an integer
    # input's minimum and could win)
    pos = native._pool_map(h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo)    # (Ho*Wo, K)
    cells, k = pos.shape
    vals = reshape(take(reshape(x, (-1, c, h * w)), pos.reshape(-1), axis=2), (-1, c, cells, k))
    at = argmax(vals, axis=-1)
    if floating(spec_of(x).dtype):    # NOTE: a later nan wins, as in torch and max_pool_grad
        last_nan = max_(where(ne(vals, vals), np.arange(k), -1), axis=-1)
        at = where(last_nan >= 0, last_nan, at)
    return take(pos.reshape(-1), at + np.arange(cells) * k, axis=0)


def window_stack(np, x, kernel, stride, padding, dilation, extra, fill):
    """Reference helper (NumPy or jax.numpy): (kh*kw, N, C, Ho, Wo), every window offset's
    strided slice of x padded with `fill`."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (pair(v) for v in (kernel, stride, padding,
                                                               dilation))
    ho, wo = _outs(x.shape[2:], (kh, kw), (sh, sw), (ph, pw), (dh, dw), extra)
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph + extra[0]), (pw, pw + extra[1])),
               constant_values=fill)
    return np.stack([x[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                       j * dw:j * dw + sw * (wo - 1) + 1:sw]
                     for i in range(kh) for j in range(kw)], axis=0)


def _max_pool_ref(np, x, kernel, stride, padding, dilation, extra=(0, 0)):
    return np.max(window_stack(np, x, kernel, stride, padding, dilation, extra, -np.inf),
                  axis=0)


def _max_pool_grad_ref(np_, x, g, kernel, stride, padding, dilation, extra=(0, 0)):
    """g scattered to each window's first maximum: the transpose of picking it."""
    vals = window_stack(np_, x, kernel, stride, padding, dilation, extra, -np_.inf)
    pos = window_stack(np, refs.positions(x.shape, 1), kernel, stride, padding, dilation,
                       extra, 0) - 1
    first = np.asarray(np_.argmax(vals, axis=0))[None]
    return refs.scatter(np_, g, np.take_along_axis(pos, first, axis=0)[0], x.shape)


_P = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0), "dilation": (1, 1)}
_Q = {"kernel": (3, 2), "stride": (2, 2), "padding": (1, 1), "dilation": (1, 2),
      "extra": (1, 0)}
MAX_POOL = register(
    "max_pool", _max_pool_infer, _max_pool_kernel, _max_pool_vjp, category="other",
    samples=(Sample(((2, 3, 4, 4),), _P),
             Sample(((1, 2, 5, 5),), {**_P, "kernel": (3, 3)}),
             Sample(((1, 2, 6, 7),), _Q),
             Sample(((2, 3, 4),), _P, match=r"max_pool: expects a 4-d input"),
             Sample(((1, 1, 1, 1),), _P, match="smaller than the window")),
    ref=_max_pool_ref)
MAX_POOL_GRAD = register(
    "max_pool_grad", _max_pool_grad_infer, _max_pool_grad_kernel, _max_pool_grad_vjp,
    category="other",
    samples=(Sample(((2, 3, 4, 4), (2, 3, 2, 2)), _P),
             Sample(((1, 2, 6, 7), (1, 2, 4, 4)), _Q),
             Sample(((2, 3, 4, 4), (2, 3, 3, 2)), _P, match=r"max_pool_grad: gradient "
                    r"\(2, 3, 3, 2\) must have the shape of the pooled output \(2, 3, 2, 2\)")),
    ref=_max_pool_grad_ref)


def max_pool(x, kernel, stride, padding, dilation, extra=(0, 0)):
    """Each window's maximum of an (N, C, H, W) input; kernel, stride, padding, dilation and
    extra (ceil_mode's bottom/right padding) are (height, width) pairs."""
    return bind(MAX_POOL, x, kernel=pair(kernel), stride=pair(stride), padding=pair(padding),
                dilation=pair(dilation), extra=pair(extra))


def max_pool_grad(x, g, kernel, stride, padding, dilation, extra=(0, 0)):
    """max_pool's gradient: g added at each window's first maximum, zeros elsewhere."""
    return bind(MAX_POOL_GRAD, x, g, kernel=pair(kernel), stride=pair(stride),
                padding=pair(padding), dilation=pair(dilation), extra=pair(extra))


MAX_POOL.fn, MAX_POOL_GRAD.fn = max_pool, max_pool_grad
