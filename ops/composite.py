"""Ops defined as compositions of primitives (softmax, gelu, layer_norm, conv2d, …).

Written once with op calls, so both engines get them, and their gradients come from the
primitives' rules. Each has samples and a NumPy-API reference, like a primitive.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
from .rules import floating, ints_fit

from .core import (Sample, ShapeError, fmt_shape, located, spec_of, user_frame, user_stacklevel,
                   where_str)
from .elementwise import cast, copy, eq, erf, exp, log, ne, sqrt, stop_gradient, tanh, where
from .losses import softmax_cross_entropy
from .nn import matmul, matmul_nt, one_hot, rand_like, unfold
from .reduce import count, max as max_, static_count, sum as sum_
from .symbolic import fixing
from .rules import (broadcast, dims_match, norm_axes, norm_axis, quiet_broadcast,
                    torch_opmath_dtype)
from .shape import (concat, expand_dims, pad, reshape, reverse, slice_, squeeze, take,
                    transpose, zeros_like)


@dataclass(frozen=True)
class Composite:
    name: str
    fn: object
    samples: tuple = ()
    ref: object = None


COMPOSITES: dict[str, Composite] = {}


_ACTIVE: list[str] = []   # the composites running now, outermost first


def current_composite():
    """The outermost composite being run (or built, in a graph) right now, or None.

    The graph engine stores it on each node it builds, so a run-time error in `mul` can say
    it is part of the user's `cross_entropy` call.
    """
    return _ACTIVE[0] if _ACTIVE else None


def composite(samples=(), ref=None):
    def deco(fn):
        name = fn.__name__

        @functools.wraps(fn)
        def run(*args, **kwargs):
            _ACTIVE.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                _ACTIVE.pop()
        COMPOSITES[name] = Composite(name, run, tuple(samples), ref)
        return run
    return deco


def in_opmath(fn):
    """fn computing in the wider dtype PyTorch's CPU kernels use for its operands' dtype
    (`rules.torch_opmath_dtype`: float32 for float16), its result rounded back once: a float16
    softmax or mean agrees with torch's to float16's last bit, not a few bits worse. It acts
    when the positional tensor operands (a conv's input, weight and bias; `2 % x`'s x) are all
    of one half dtype; Python and NumPy numbers stay as they are, and operands of mixed dtypes
    are left to fn's promotion."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        dts = {np.dtype(a.dtype) for a in args if _operand(a)}
        dt = dts.pop() if len(dts) == 1 else None
        if dt is None or torch_opmath_dtype(dt) == dt:
            return fn(*args, **kwargs)
        wide = torch_opmath_dtype(dt)
        return cast(fn(*[cast(a, wide) if _operand(a) else a for a in args], **kwargs), dt)
    return run


def _operand(a):
    """A tensor operand (an array, eager or graph tensor), not a number."""
    return hasattr(a, "dtype") and hasattr(a, "shape") and not isinstance(a, np.generic)


def _shape(x):
    """x's shape; a list or a number (TF takes them as constants) is read as NumPy reads it."""
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)




# -- reductions -------------------------------------------------------------------------------
@composite(samples=(Sample(((3, 4),), {"axis": 1}), Sample(((2, 3, 4),), {"axis": (0, 2),
                                                                           "keepdims": True}),
                    Sample(((3, 4),), {"axis": None})),
           ref=lambda np, x, axis=None, keepdims=False: np.mean(x, axis=axis, keepdims=keepdims))
@in_opmath
def mean(x, axis=None, keepdims=False):
    """Mean over `axis` (all elements by default)."""
    s = sum_(x, axis=axis, keepdims=keepdims)
    n = static_count(_shape(x), axis)
    if n is not None:
        return s * (1.0 / n) if n else s / count(x, axis=axis)
    return s / count(x, axis=axis)


@composite(samples=(Sample(((3, 4),), {"axis": 1}),),
           ref=lambda np, x, axis=None, keepdims=False: np.min(x, axis=axis, keepdims=keepdims))
def min(x, axis=None, keepdims=False):  # noqa: A001 - torch's name
    """Minimum over `axis`, as -max(-x); bool, unsigned and narrow integer inputs go through
    float64 (exact for them), where -x would wrap (-(-128) is -128 in int8, -x of uint8 wraps)."""
    dt = getattr(x, "dtype", None)
    if dt is not None and np.dtype(dt).kind in "biu" and np.dtype(dt).itemsize < 8:
        wide = cast(x, np.dtype(np.float64))
        return cast(-max_(-wide, axis=axis, keepdims=keepdims), np.dtype(dt))
    return -max_(-x, axis=axis, keepdims=keepdims)


@composite(samples=(Sample(((3, 4),), {"axis": 1}), Sample(((3, 4),), {"axis": None,
                                                                        "keepdims": True})),
           ref=lambda np, x, axis=None, keepdims=False: np.var(x, axis=axis, keepdims=keepdims))
def var(x, axis=None, keepdims=False):
    """Biased variance (divides by N), as layer norm uses."""
    xc = x - mean(x, axis=axis, keepdims=True)
    return mean(xc * xc, axis=axis, keepdims=keepdims)


def _lse_ref(np, x, axis=-1, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    r = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return r if keepdims else np.squeeze(r, axis=axis)


@composite(samples=(Sample(((3, 5),), {"axis": -1}), Sample(((2, 3, 4),), {"axis": 1,
                                                                            "keepdims": True})),
           ref=_lse_ref)
@in_opmath
def logsumexp(x, axis=-1, keepdims=False):
    """log(sum(exp(x))) over `axis`, shifted by the (gradient-free) max for stability; a row
    holding +inf gives +inf and an all -inf row gives -inf (as torch)."""
    m = _finite_max(x, axis)
    r = m + log(sum_(exp(x - m), axis=axis, keepdims=True))
    return r if keepdims else squeeze(r, axis=axis)


def _finite_max(x, axis):
    """The row max as a gradient-free shift, 0 where it is infinite (inf - inf is nan)."""
    from .elementwise import abs as abs_, lt
    m = _shift(x, axis)
    return where(lt(abs_(m), np.inf), m, 0.0)


def _shift(x, axis):
    """The gradient-free row max the softmax family subtracts; -inf over an empty axis
    (where max alone raises), so softmax of a (3, 0) tensor is empty, as torch's is."""
    initial = -np.inf if floating(spec_of(x).dtype) else None
    return stop_gradient(max_(x, axis=axis, keepdims=True, initial=initial))


def _softmax_ref(np, x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@composite(samples=(Sample(((3, 5),), {"axis": -1}), Sample(((2, 3, 4),), {"axis": 1}),
                    Sample(((4,),), {"axis": 0})), ref=_softmax_ref)
@in_opmath
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) over `axis`, shifted by the max for stability."""
    e = exp(x - _shift(x, axis))
    return e / sum_(e, axis=axis, keepdims=True)


@composite(samples=(Sample(((3, 5),), {"axis": -1}), Sample(((2, 3, 4),), {"axis": 1})),
           ref=lambda np, x, axis=-1: x - _lse_ref(np, x, axis=axis, keepdims=True))
@in_opmath
def log_softmax(x, axis=-1):
    """(x - max) - log(sum(exp(x - max))) over `axis`: exact at large logits (x - lse(x)
    would round lse(x) at the size of x first)."""
    z = x - _finite_max(x, axis)
    return z - log(sum_(exp(z), axis=axis, keepdims=True))


@composite(samples=(Sample(((3, 4),), {"axis": 1}, grad=False),),
           ref=lambda np, x, axis=None, keepdims=False: np.argmin(x, axis=axis,
                                                                  keepdims=keepdims))
def argmin(x, axis=-1, keepdims=False):
    """Index of the minimum along `axis`, as the argmax of x in reverse order: -x for floats;
    for integers an order reversal that cannot wrap (-(-128) is -128 in int8, -x of a uint8
    wraps): -1 - x, or max - x for unsigned; logical_not for bools (TF1's ArgMin takes them)."""
    from .reduce import argmax
    kind = spec_of(x).dtype.kind
    if kind == "b":
        return argmax(logical_not(x), axis=axis, keepdims=keepdims)
    if kind == "u":
        return argmax(np.iinfo(spec_of(x).dtype).max - x, axis=axis, keepdims=keepdims)
    return argmax(-1 - x if kind == "i" else -x, axis=axis, keepdims=keepdims)


@composite(samples=(Sample(((3, 4),)), Sample(((3, 4),), {"axis": 1, "keepdims": True}),
                    Sample(((5,),), {"ord": 1})),
           ref=lambda np, x, ord=2, axis=None, keepdims=False: np.sum(
               np.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord))
@in_opmath
def norm(x, ord=2, axis=None, keepdims=False):  # noqa: A002 - numpy's name
    """The vector p-norm over `axis` (all elements by default): ord 2 (or "fro"), 1, any
    other p, negative too, (sum |x|^p)^(1/p), inf (max |x|), -inf (min |x|), 0 (the count of
    nonzeros, its gradient zero), as torch's vector norms."""
    from .elementwise import abs as abs_
    if ord == 1:
        return sum_(abs_(x), axis=axis, keepdims=keepdims)
    if ord in (math.inf, -math.inf):
        return (max_ if ord > 0 else min)(abs_(x), axis=axis, keepdims=keepdims)
    if ord == 0:    # NOTE: x * 0 is taken only where x is 0: the count, with torch's zero gradient
        return sum_(where(ne(x, 0.0), 1.0, x * 0.0), axis=axis, keepdims=keepdims)
    if ord == "fro" or isinstance(ord, (int, float)) and ord > 0:
        # NOTE: the root's gradient at 0 is inf (and inf * 0 nan); torch's there is 0. The
        # masks test != 0, not > 0, so that a NaN propagates
        p = 2 if ord == "fro" else ord
        if p == 2:
            s = sum_(x * x, axis=axis, keepdims=keepdims)
        else:   # NOTE: |x|^p's gradient at 0 is nan for p < 1; torch's is 0
            ax = abs_(x)
            nz = ne(ax, 0.0)
            s = sum_(where(nz, where(nz, ax, 1.0) ** float(p), 0.0), axis=axis,
                     keepdims=keepdims)
        pos = ne(s, 0.0)
        s = where(pos, s, 1.0)
        return where(pos, sqrt(s) if p == 2 else s ** (1.0 / p), 0.0)
    if isinstance(ord, (int, float)) and ord < 0:   # NOTE: a zero element makes it 0, as torch
        ax = abs_(x)
        nz = ne(ax, 0.0)
        s = sum_(where(nz, where(nz, ax, 1.0) ** float(ord), math.inf), axis=axis,
                 keepdims=keepdims)
        return s ** (1.0 / ord)
    raise ValueError(f"norm: ord must be a number, inf, -inf or 'fro', got {ord!r}")


# -- small elementwise compositions: one definition for eager's and graph's names ------------
@composite(samples=(Sample(((3, 4),)), Sample(((),))), ref=lambda np, x: np.square(x))
def square(x):
    """x * x (torch.square, tf.square); a bool tensor squares as int64, as torch's pow."""
    if np.dtype(spec_of(x).dtype) == np.bool_:
        x = cast(x, np.int64)
    return x * x


@composite(samples=(Sample(((3, 4),), domain=(0.2, 3.0)),), ref=lambda np, x: 1 / np.sqrt(x))
def rsqrt(x):
    """1 / sqrt(x) (torch.rsqrt, tf.math.rsqrt)."""
    return 1.0 / sqrt(x)


@composite(samples=(Sample(((3, 4),), {"min": -0.5, "max": 0.5}), Sample(((3, 4),), {"min": 0.0}),
                    Sample(((3, 4), (4,), (3, 1)))),
           ref=lambda np, x, min=None, max=None: np.clip(x, min, max))
def clamp(x, min=None, max=None):  # noqa: A002 - torch's names
    """max(x, min) then min(., max), either bound optional (torch.clamp, tf.clip_by_value).
    A Python int bound outside x's integer dtype is refused (torch raises for it too), never
    wrapped around as arithmetic's operands are (rules.as_operand)."""
    from .elementwise import maximum, minimum
    dt = np.dtype(getattr(x, "dtype", np.float64))
    for b in (min, max):
        if dt.kind in "iu" and type(b) is int and not ints_fit((b,), dt):
            raise RuntimeError(f"clamp: the bound {b} cannot be converted to {dt} without "
                               f"overflow (torch's error too); cast the tensor to a wider "
                               f"dtype first")
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def _require_bool(name, *xs):
    for x in xs:
        dt = getattr(x, "dtype", None)
        if dt is not None and np.dtype(dt) != np.bool_:
            raise TypeError(f"{name}: needs bool tensors, got {np.dtype(dt)} for shape "
                            f"{fmt_shape(tuple(x.shape))}")


_BOOLS = (np.array([[True, False, True]]), np.array([[False], [True]]))


@composite(samples=(Sample((_BOOLS[0],), grad=False),), ref=lambda np, x: np.logical_not(x))
def logical_not(x):
    """Elementwise not of a bool tensor (torch's ~, tf.logical_not)."""
    _require_bool("logical_not", x)
    return eq(x, False)


@composite(samples=(Sample(_BOOLS, grad=False),), ref=lambda np, x, y: np.logical_and(x, y))
def logical_and(x, y):
    _require_bool("logical_and", x, y)
    return where(x, y, False)


@composite(samples=(Sample(_BOOLS, grad=False),), ref=lambda np, x, y: np.logical_or(x, y))
def logical_or(x, y):
    _require_bool("logical_or", x, y)
    return where(x, True, y)


# -- activations ------------------------------------------------------------------------------
_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu_ref(np, x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x * x * x)))
    if np.__name__ == "numpy":   # NOTE: NumPy has no erf; the jax oracle uses jax's own
        def erf_(v):
            return np.vectorize(math.erf)(v).astype(v.dtype)
    else:
        import jax.scipy.special as jss
        erf_ = jss.erf
    return 0.5 * x * (1 + erf_(x / math.sqrt(2.0)))


@composite(samples=(Sample(((3, 4),), {"approximate": "tanh"}),
                    Sample(((3, 4),), {"approximate": "none"})), ref=_gelu_ref)
def gelu(x, approximate="none"):
    """GELU; `approximate='tanh'` is the tanh form (torch's names)."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tanh(_GELU_C * (x + 0.044715 * x ** 3)))
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


@composite(samples=(Sample(((3, 4),)),), ref=lambda np, x: x / (1 + np.exp(-x)))
def silu(x):
    """x * sigmoid(x) (also called swish)."""
    from .elementwise import sigmoid
    return x * sigmoid(x)


# -- normalisation and layers -----------------------------------------------------------------
def _ln_ref(np, x, weight=None, bias=None, eps=1e-5, normalized_ndim=1):
    axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
    mu = np.mean(x, axis=axes, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(v + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@composite(samples=(Sample(((4, 6), (6,), (6,))), Sample(((2, 3, 5), (5,), (5,))),
                    Sample(((2, 3, 4), (3, 4), (3, 4)), {"normalized_ndim": 2})),
           ref=_ln_ref)
@in_opmath
def layer_norm(x, weight=None, bias=None, eps=1e-5, normalized_ndim=1):
    """Normalise over the last `normalized_ndim` dims, then scale and shift."""
    nd = len(_shape(x))
    axes = tuple(range(nd - normalized_ndim, nd))
    if weight is not None and None not in _shape(x) and _shape(weight) != _shape(x)[nd - normalized_ndim:]:
        raise located(f"layer_norm: weight {fmt_shape(_shape(weight))} does not match the "
                         f"normalized shape {fmt_shape(_shape(x)[nd - normalized_ndim:])} of "
                         f"input {fmt_shape(_shape(x))}")
    xc = x - mean(x, axis=axes, keepdims=True)
    y = xc / sqrt(mean(xc * xc, axis=axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


@composite(samples=(Sample(((4, 3), (5, 3), (5,))), Sample(((2, 4, 3), (5, 3))),
                    Sample(((4, 3), (5, 4)),
                           match=r"linear: input \(4, 3\) has 3 features but weight \(5, 4\) "
                                 r"expects 4 \(weight is \(out_features, in_features\)\)")),
           ref=lambda np, x, w, b=None: x @ w.T + (0 if b is None else b))
def linear(x, weight, bias=None):
    """x @ weight.T + bias, with torch's weight layout (out_features, in_features)."""
    xs, ws = _shape(x), _shape(weight)
    if len(ws) != 2 or not xs:
        raise located(f"linear: expects a 2-d weight (out_features, in_features) and an input "
                         f"with features last, got input {fmt_shape(xs)}, weight {fmt_shape(ws)}")
    if xs[-1] is not None and ws[1] is not None and xs[-1] != ws[1]:
        raise located(f"linear: input {fmt_shape(xs)} has {xs[-1]} features but weight "
                         f"{fmt_shape(ws)} expects {ws[1]} (weight is (out_features, "
                         f"in_features)){fixing(xs[-1], ws[1])}")
    y = matmul_nt(x, weight)   # NOTE: one op call each way, not matmul and transpose
    return y if bias is None else y + bias


# -- batch normalisation ----------------------------------------------------------------------
def _moments_ref(np, x, axes, keepdims=False):
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else axes
    return np.mean(x, axis=axes, keepdims=keepdims), np.var(x, axis=axes, keepdims=keepdims)


# NOTE: the generated tests compare one output, so moments' forward and gradient are tested
# in tests/ops/test_moments.py (and through batch_norm's samples); here only its error
@composite(samples=(Sample(((4, 3),), {"axes": (2,)},
                           match=r"moments: axis 2 is out of range for 2-d input of \(4, 3\)"),),
           ref=_moments_ref)
def moments(x, axes, keepdims=False):
    """(mean, biased variance) of x over `axes`, as TF's tf.nn.moments.

    >>> import numpy as np
    >>> from dualgrad import ops
    >>> m, v = ops.moments(np.array([[1., 2.], [3., 6.]]), axes=(0,))
    >>> m.tolist(), v.tolist()
    ([2.0, 4.0], [1.0, 4.0])
    """
    ax = norm_axes("moments", tuple(axes) if isinstance(axes, (list, tuple)) else axes,
                   len(_shape(x)), _shape(x), frontend=True)
    return mean(x, axis=ax, keepdims=keepdims), var(x, axis=ax, keepdims=keepdims)


def _bn_ref(np, x, mean, var, weight=None, bias=None, eps=1e-5):
    def put(a):
        return a if a.ndim == x.ndim else a.reshape((1, -1) + (1,) * (x.ndim - 2))
    y = (x - put(mean)) / np.sqrt(put(var) + eps)
    y = y if weight is None else y * put(weight)
    return y if bias is None else y + put(bias)


def _on_channels(name, x, stat, what):
    """A (C,) statistic reshaped onto axis 1 of x; a full-rank one is used as given."""
    xs, ss = _shape(x), _shape(stat)
    if len(ss) == len(xs):
        return stat
    c = xs[1]
    if len(ss) != 1 or (c is not None and ss[0] is not None and ss[0] != c):
        raise located(f"{name}: {what} {fmt_shape(ss)} must have shape ({c},) (one value per "
                       f"channel, dim 1) or the rank of input {fmt_shape(xs)}")
    return reshape(stat, (1, -1) + (1,) * (len(xs) - 2))


@composite(samples=(Sample(((4, 3), (3,), (3,), (3,), (3,)), domain=(0.1, 2.0)),
                    Sample(((2, 3, 4, 4), (3,), (3,), (3,), (3,)), {"eps": 1e-3},
                           domain=(0.1, 2.0)),
                    Sample(((2, 3, 5), (3,), (3,)), domain=(0.1, 2.0)),
                    Sample(((1, 1), (1,), (1,), (1,), (1,)), domain=(0.1, 2.0)),
                    Sample(((2, 3, 4, 4), (1, 3, 1, 1), (1, 3, 1, 1)), domain=(0.1, 2.0)),
                    Sample(((4, 3), (4,), (3,)), domain=(0.1, 2.0),
                           match=r"batch_norm: mean \(4,\) must have shape \(3,\) .* input "
                                 r"\(4, 3\)")),
           ref=_bn_ref)
def batch_norm(x, mean, var, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias, with statistics per channel (dim 1).

    x is (N, C) or (N, C, ...); mean, var, weight, bias are (C,) — or of x's rank, then they
    broadcast as given (what `moments(..., keepdims=True)` returns). Training-mode statistics
    and running averages are the engines' business (eager nn.BatchNorm2d, graph.layers).
    """
    if len(_shape(x)) < 2:
        raise located(f"batch_norm: expects an input (N, C, ...), got {fmt_shape(_shape(x))}")
    mean, var = _on_channels("batch_norm", x, mean, "mean"), _on_channels("batch_norm", x,
                                                                           var, "var")
    y = (x - mean) / sqrt(var + eps)
    if weight is not None:
        y = y * _on_channels("batch_norm", x, weight, "weight")
    if bias is not None:
        y = y + _on_channels("batch_norm", x, bias, "bias")
    return y


# -- losses -----------------------------------------------------------------------------------
def _ce_ref(np, logits, target, reduction="mean", ignore_index=None, label_smoothing=0.0):
    m = np.max(logits, axis=-1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True))
    c = logits.shape[-1]
    valid = (target != (-1 if ignore_index is None else ignore_index))[..., None] | \
        (ignore_index is None)
    oh = np.where(target[..., None] == np.arange(c), 1.0 - label_smoothing, 0.0)
    t = np.where(valid, oh + label_smoothing / c, 0.0).astype(logits.dtype)
    loss = -np.sum(t * logp, axis=-1)
    if reduction == "mean":
        return np.sum(loss) / np.sum(valid).astype(logits.dtype)
    return np.sum(loss) if reduction == "sum" else loss


@composite(samples=(Sample(((4, 5), np.array([0, 4, 2, 2]))),
                    Sample(((3, 2, 4), np.array([[0, 1], [3, 3], [2, 0]])), {"reduction": "sum"}),
                    Sample(((4, 5), np.array([0, -100, 2, 2])), {"ignore_index": -100}),
                    Sample(((4, 5), np.array([0, 4, 3, 2])), {"label_smoothing": 0.1,
                                                              "ignore_index": 3}),
                    Sample(((4, 5), np.array([[0], [4], [2], [2]])),
                           match=r"cross_entropy: target \(4, 1\) must have shape \(4,\)")),
           ref=_ce_ref)
def cross_entropy(logits, target, reduction="mean", weight=None, ignore_index=None,
                  label_smoothing=0.0):
    """Softmax cross-entropy from logits (..., C) and integer class targets (...), or class
    probabilities (..., C), with torch's per-class `weight`, `ignore_index` (class targets)
    and `label_smoothing`; 'mean' divides by the summed weight of the counted targets.
    ignore_index=None (the default here) ignores nothing; eager's F.cross_entropy passes
    PyTorch's -100."""
    ls, ts = _shape(logits), _shape(target)
    # NOTE: not getattr(target, "dtype", np.asarray(target).dtype): the default is evaluated
    # first, and a graph tensor refuses np.asarray
    t_dtype = np.dtype(target.dtype if hasattr(target, "dtype") else np.asarray(target).dtype)
    if t_dtype.kind in "iu":
        if not dims_match(ts, ls[:-1]):
            raise located(f"cross_entropy: target {fmt_shape(ts)} must have shape "
                             f"{fmt_shape(ls[:-1])} (class indices) for logits {fmt_shape(ls)}")
    elif ts != ls:
        raise located(f"cross_entropy: probability target {fmt_shape(ts)} must have the "
                         f"shape of logits {fmt_shape(ls)}")
    if weight is None and not label_smoothing and t_dtype.kind in "iu":
        if ignore_index is None or not _may_ignore(target, ignore_index):
            target = one_hot(target, ls[-1], dtype=logits.dtype)
            return _reduce_loss(softmax_cross_entropy(logits, target), reduction)
        # NOTE: some target may be ignore_index (or, traced, may be: its values are not known):
        # the primitive on the other rows, 0 for those (as torch), 'mean' over the counted ones
        keep = ne(target, ignore_index)
        hot = one_hot(where(keep, target, 0), ls[-1], dtype=logits.dtype)
        loss = where(keep, softmax_cross_entropy(logits, hot), 0.0)
        if reduction == "mean":
            return sum_(loss) / sum_(cast(keep, logits.dtype))
        return _reduce_loss(loss, reduction)
    return _weighted_ce(logits, target, t_dtype, reduction, weight, ignore_index,
                        label_smoothing)


def _may_ignore(target, ignore_index):
    """False when no target can equal ignore_index (-100 with ordinary class indices)."""
    arr = getattr(target, "_array", target)
    if isinstance(arr, np.ndarray):
        return bool(np.any(arr == ignore_index))
    return True        # a graph tensor: its values are not known yet


def _weighted_ce(logits, target, t_dtype, reduction, weight, ignore_index, eps):
    return _weighted_nll(log_softmax(logits, axis=-1), target, t_dtype, reduction, weight,
                         ignore_index, eps)


def _weighted_nll(logp, target, t_dtype, reduction, weight, ignore_index, eps):
    """The cross-entropy of log-probabilities logp (..., C) (classes last) with targets:
    torch's weight, ignore_index and label smoothing `eps`."""
    c = _shape(logp)[-1]
    dt = logp.dtype
    if t_dtype.kind in "iu":
        if ignore_index is None:
            hot = one_hot(target, c, dtype=dt)
            valid = sum_(hot, axis=-1, keepdims=True)          # ones, shaped (..., 1)
        else:
            valid = cast(expand_dims(ne(target, ignore_index), axis=-1), dt)
            hot = one_hot(where(ne(target, ignore_index), target, 0), c, dtype=dt) * valid
        t = (hot * (1.0 - eps) + eps / c) * valid if eps else hot
        denom = sum_(hot * weight) if weight is not None else sum_(valid)
    else:
        t = target * (1.0 - eps) + eps / c if eps else target
        denom = count(sum_(t, axis=-1))
    wt = t * weight if weight is not None else t
    loss = -_weighted_sum(wt, logp, -1)
    if reduction == "mean":
        return sum_(loss) / denom
    return _reduce_loss(loss, reduction)


def _weighted_sum(w, logp, axis):
    """sum(w * logp) where a -inf log-probability with weight 0 (a masked class) adds 0, not
    0 * -inf = nan, as in torch."""
    return sum_(where(ne(w, 0.0), w * logp, 0.0), axis=axis)


def _reduce_loss(loss, reduction):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum_(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


@composite(samples=(Sample(((4, 3), (4, 3))), Sample(((5,), (5,)), {"reduction": "sum"}),
                    Sample(((4, 8, 3), (4, 7, 3)),
                           match=r"mse_loss: input \(4, 8, 3\) and target \(4, 7, 3\) do not "
                                 r"broadcast: dimension -2 is 7 vs 8")),
           ref=lambda np, a, b, reduction="mean": (np.mean if reduction == "mean" else np.sum)(
               (a - b) ** 2))
def mse_loss(input, target, reduction="mean"):  # noqa: A002 - torch's argument name
    """Mean (or sum) of squared differences; warns when the shapes would broadcast."""
    si, st = _shape(input), _shape(target)
    if si != st:
        # NOTE: the loss's own words, not those of the `sub` inside it
        try:
            out = broadcast("mse_loss", spec_of(input), spec_of(target))
        except ShapeError as e:
            raise located(f"mse_loss: input {fmt_shape(si)} and target {fmt_shape(st)} do not "
                           f"broadcast: {str(e).rsplit(': ', 1)[-1]}") from None
        # NOTE: the silent (N,) vs (N, 1) -> (N, N) bug; torch warns here too.
        warnings.warn(f"mse_loss: target {fmt_shape(st)} differs from input {fmt_shape(si)}; "
                      f"they broadcast to {fmt_shape(out)}, which is likely a bug (at "
                      f"{where_str(user_frame())})", UserWarning, stacklevel=user_stacklevel())
        with quiet_broadcast():   # NOTE: warned above, in the loss's own words
            d = input - target
    else:
        d = input - target
    return _reduce_loss(d * d, reduction)


def _nll_ref(np, lp, t, reduction="mean"):
    ax = 1 if lp.ndim >= 2 else 0
    hit = np.expand_dims(t, ax) == np.arange(lp.shape[ax]).reshape((-1,) + (1,) * (lp.ndim - ax - 1))
    loss = -np.sum(np.where(hit, lp, 0.0), axis=ax)
    return np.mean(loss) if reduction == "mean" else np.sum(loss) if reduction == "sum" else loss


@composite(samples=(Sample(((4, 5), np.array([0, 4, 2, 2]))),
                    Sample(((5,), np.array(3)), {"reduction": "none"}),
                    Sample(((2, 3, 4), np.array([[0, 1, 2, 2], [1, 1, 0, 2]])),
                           {"reduction": "sum"}),
                    Sample(((4, 5), np.array([[0], [4], [2], [2]])),
                           match=r"nll_loss: target \(4, 1\) must have shape \(4,\)")),
           ref=_nll_ref)
def nll_loss(log_probs, target, reduction="mean", weight=None, ignore_index=None):
    """Negative log-likelihood of integer class targets, classes in dim 1 as torch:
    log_probs (N, C) or (N, C, d1, ...) with target (N,) or (N, d1, ...); (C,) with ().
    torch's per-class `weight` and `ignore_index` ('mean' divides by the summed weight of the
    counted targets); ignore_index=None ignores nothing (eager's F.nll_loss passes -100)."""
    ls, ts = _shape(log_probs), _shape(target)
    ax = 1 if len(ls) >= 2 else 0
    want = ls[:1] + ls[2:] if len(ls) >= 2 else ()
    if not ls or not dims_match(ts, want) or ls[ax] is None:
        raise located(f"nll_loss: target {fmt_shape(ts)} must have shape {fmt_shape(want)} "
                       f"(class indices) for input {fmt_shape(ls)} (classes in dim 1, known)")
    if weight is not None or ignore_index is not None and _may_ignore(target, ignore_index):
        last = log_probs if len(ls) <= 2 else \
            transpose(log_probs, axes=(0,) + tuple(range(2, len(ls))) + (1,))
        return _weighted_nll(last, target, np.dtype(target.dtype), reduction, weight,
                             ignore_index, 0.0)
    hit = one_hot(target, ls[ax], dtype=log_probs.dtype)         # classes last
    if len(ls) > 2:
        hit = transpose(hit, axes=(0, len(ls) - 1) + tuple(range(1, len(ls) - 1)))
    return _reduce_loss(-_weighted_sum(hit, log_probs, ax), reduction)


def _same_shape(name, x, t):
    xs, ts = _shape(x), _shape(t)
    if not dims_match(xs, ts):
        raise located(f"{name}: target {fmt_shape(ts)} must have the shape of input "
                       f"{fmt_shape(xs)}")


def _bce_logits_ref(np, x, t, reduction="mean"):
    loss = np.maximum(x, 0) - x * t + np.log(1 + np.exp(-np.abs(x)))
    return np.mean(loss) if reduction == "mean" else np.sum(loss) if reduction == "sum" else loss


@composite(samples=(Sample(((4, 3), (4, 3))), Sample(((), ()), {"reduction": "none"}),
                    Sample(((1,), (1,)), {"reduction": "sum"}),
                    Sample(((4, 3), (4, 1)),
                           match=r"binary_cross_entropy_with_logits: target \(4, 1\) must "
                                 r"have the shape of input \(4, 3\)")),
           ref=_bce_logits_ref)
def binary_cross_entropy_with_logits(logits, target, reduction="mean"):
    """Sigmoid cross-entropy softplus(x) - x*t (softplus: max(x, 0) + log(1 + exp(-|x|)))."""
    # NOTE: softplus's rule gives sigmoid(x) - t at x = 0 too, as torch and TF; max(x, 0) and
    # |x| differentiated apart gave 1 - t there
    from .elementwise import softplus
    _same_shape("binary_cross_entropy_with_logits", logits, target)
    loss = softplus(logits) - logits * target
    return _reduce_loss(loss, reduction)


def _bce_ref(np, p, t, reduction="mean"):
    loss = -(t * np.maximum(np.log(p), -100.0) + (1 - t) * np.maximum(np.log(1 - p), -100.0))
    return np.mean(loss) if reduction == "mean" else np.sum(loss) if reduction == "sum" else loss


@composite(samples=(Sample(((4, 3), (4, 3)), domain=(0.05, 0.95)),
                    Sample(((), ()), {"reduction": "none"}, domain=(0.05, 0.95)),
                    Sample(((1, 2), (1, 2)), {"reduction": "sum"}, domain=(0.05, 0.95)),
                    Sample(((4,), (3,)), domain=(0.05, 0.95),
                           match=r"binary_cross_entropy: target \(3,\) must have the shape "
                                 r"of input \(4,\)")),
           ref=_bce_ref)
def binary_cross_entropy(p, target, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) from probabilities; logs clamped at -100 as torch."""
    from .elementwise import maximum
    _same_shape("binary_cross_entropy", p, target)
    loss = -(target * maximum(log(p), -100.0) + (1.0 - target) * maximum(log(1.0 - p), -100.0))
    return _reduce_loss(loss, reduction)


# -- structure --------------------------------------------------------------------------------
@composite(samples=(Sample(((2, 3), (2, 3)), {"axis": 0}), Sample(((2, 3), (2, 3), (2, 3)),
                                                                   {"axis": -1}),
                    Sample(((2, 3), (3, 3)), {"axis": 0},
                           match=r"stack: all tensors must have the same shape, got "
                                 r"\(2, 3\), \(3, 3\)")),
           ref=lambda np, *xs, axis=0: np.stack(xs, axis=axis))
def stack(*xs, axis=0):
    """Join same-shaped tensors along a new `axis`."""
    shapes = [_shape(x) for x in xs]
    if any(len(s) != len(shapes[0]) or any(a is not None and b is not None and a != b
                                           for a, b in zip(s, shapes[0])) for s in shapes):
        raise located(f"stack: all tensors must have the same shape, got "
                       f"{', '.join(fmt_shape(s) for s in shapes)}")
    a = norm_axis("stack", axis, len(shapes[0]) + 1, frontend=True)
    return concat(*[expand_dims(x, axis=a) for x in xs], axis=a)


@composite(samples=(Sample(((3, 4),), {"axis": 1}), Sample(((2, 3, 4),), {"axis": 0}),
                    Sample(((2, 3),), {"axis": -1}), Sample(((2, 3, 4),), {"axis": (0, 2)})),
           ref=lambda np, x, axis: np.flip(x, axis))
def flip(x, axis):
    """Reverse the order of elements along `axis` (an int or a tuple, as torch.flip's dims):
    a new tensor, as torch's (reverse alone is a negative-step view)."""
    return copy(reverse(x, axis))


def _band(x, k, lower, name):
    shape = _shape(x)
    if len(shape) < 2 or None in shape[-2:]:
        raise located(f"{name}: needs at least 2 dims with the last two known, got "
                       f"{fmt_shape(shape)}")
    keep = (np.tril if lower else np.triu)(np.ones(shape[-2:], dtype=bool), k)
    return where(keep, x, zeros_like(x))     # NOTE: x's dtype, bool and integers too


@composite(samples=(Sample(((4, 4),)), Sample(((2, 3, 5),), {"diagonal": 1}),
                    Sample(((4,),), match="needs at least 2 dims")),
           ref=lambda np, x, diagonal=0: np.tril(x, diagonal))
def tril(x, diagonal=0):
    """Zero the elements above the `diagonal`-th diagonal of the last two dims."""
    return _band(x, diagonal, True, "tril")


@composite(samples=(Sample(((4, 4),)), Sample(((2, 3, 5),), {"diagonal": -1})),
           ref=lambda np, x, diagonal=0: np.triu(x, diagonal))
def triu(x, diagonal=0):
    """Zero the elements below the `diagonal`-th diagonal of the last two dims."""
    return _band(x, diagonal, False, "triu")


@composite(samples=(Sample(((3, 4), np.array([[True, False, False, True]] * 3)),
                           {"value": -5.0}),
                    Sample(((2, 3), np.array([False, True, False])), {"value": 0.0})),
           ref=lambda np, x, mask, value: np.where(mask, value, x))
def masked_fill(x, mask, value):
    """x with `value` wherever the (broadcastable) boolean mask is True; x's dtype, as torch's
    (a float value into an integer tensor is truncated)."""
    dt = np.dtype(spec_of(x).dtype)
    value = cast(value, dt) if hasattr(value, "shape") else np.asarray(value).astype(dt)
    return where(mask, value, x)


@composite(samples=(Sample(((2, 3),), {"reps": (2, 1)}), Sample(((3,),), {"reps": (2, 2)}),
                    Sample(((2, 1, 2),), {"reps": (1, 3, 2)})),
           ref=lambda np, x, reps: np.tile(x, reps))
def tile(x, reps):
    """Repeat x `reps[i]` times along dim i (torch's Tensor.repeat, numpy's tile)."""
    shape = _shape(x)
    reps = tuple(int(r) for r in reps)
    if len(reps) < len(shape) or None in shape:
        raise located(f"tile: needs known dims and at least one repeat count per dim, "
                       f"got {fmt_shape(shape)} and reps {reps}")
    shape = (1,) * (len(reps) - len(shape)) + shape
    inter = tuple(d for pair in zip((1,) * len(shape), shape) for d in pair)
    wide = tuple(d for pair in zip(reps, shape) for d in pair)
    from .shape import broadcast_to
    y = broadcast_to(reshape(x, inter), shape=wide)
    return copy(reshape(y, tuple(r * d for r, d in zip(reps, shape))))   # NOTE: never a view


def split(x, split_size_or_sections, axis=0):
    """torch.split: pieces of size split_size (the last may be shorter) or of listed sizes."""
    shape = _shape(x)
    a = norm_axes("split", axis, len(shape))[0]
    n = shape[a]
    if isinstance(split_size_or_sections, int):
        if n is None:
            raise located(f"split: dimension {a} of {fmt_shape(shape)} is unknown; "
                             f"give the section sizes")
        sizes = [split_size_or_sections] * (n // split_size_or_sections)
        if n % split_size_or_sections:
            sizes.append(n % split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
        if n is not None and sum(sizes) != n:
            raise located(f"split: sections {sizes} add up to {sum(sizes)}, but dimension "
                             f"{a} of {fmt_shape(shape)} is {n}")
    out, start = [], 0
    for s in sizes:
        index = (slice(None),) * a + (slice(start, start + s),)
        out.append(slice_(x, index=index))
        start += s
    return out


@composite(samples=(Sample((np.array([1, 0, 3]), (4, 3))),), ref=lambda np, idx, w: w[idx])
def embedding(idx, weight):
    """Rows of `weight` (num_embeddings, dim) picked by integer indices in [0, num): a
    negative or bool index is refused, as torch."""
    return take(weight, idx, axis=0, negative=False)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p) (torch semantics)."""
    if not 0.0 <= p < 1.0:
        if p == 1.0 and training:
            return x * 0.0
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    keep = rand_like(x, dtype=x.dtype) >= p
    return where(keep, x * (1.0 / (1.0 - p)), 0.0)


