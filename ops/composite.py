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
from .rules import floating

from .core import (Sample, ShapeError, fmt_shape, located, spec_of, user_frame, user_stacklevel,
                   where_str)
from .elementwise import cast, copy, eq, erf, exp, log, ne, sqrt, stop_gradient, tanh, where
from .nn import matmul, matmul_nt, rand_like, unfold
from .reduce import count, max as max_, static_count, sum as sum_
from .symbolic import fixing
from .rules import (broadcast, dims_match, norm_axes, norm_axis, quiet_broadcast,
                    torch_int_scalar, torch_opmath_dtype)
from .shape import (concat, expand_dims, pad, reshape, reverse, slice_, squeeze, take,
                    zeros_like)


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
def log_softmax(x, axis=-1):
    """(x - max) - log(sum(exp(x - max))) over `axis`: exact at large logits (x - lse(x)
    would round lse(x) at the size of x first). float16 and bfloat16 compute in float32;
    over the last axis the sum and its log are each rounded to the dtype first, as torch's
    kernel for the last dim keeps them (its kernel for another dim rounds once)."""
    xs, dt = _shape(x), np.dtype(spec_of(x).dtype)
    wide = torch_opmath_dtype(dt)
    if wide == dt or not xs or norm_axis("log_softmax", axis, len(xs), frontend=True) != \
            len(xs) - 1:
        return _log_softmax(x, axis)
    z = cast(x, wide)
    z = z - _finite_max(z, axis)
    lse = log(cast(cast(sum_(exp(z), axis=axis, keepdims=True), dt), wide))
    return cast(z - cast(cast(lse, dt), wide), dt)


@in_opmath
def _log_softmax(x, axis):
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
    A Python int bound is read into x's integer dtype as torch reads it
    (rules.torch_int_scalar: uint8's -2 is 254, 300 is refused)."""
    from .elementwise import maximum, minimum
    dt = np.dtype(getattr(x, "dtype", np.float64))
    min, max = torch_int_scalar(min, dt), torch_int_scalar(max, dt)  # noqa: A001
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
def _reduce_loss(loss, reduction):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum_(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def bool_as_other(input, target):  # noqa: A002
    """A loss's bool target (or input) cast to the other's dtype, as torch's loss kernels read
    it: no bool enters the loss's subtraction, which refuses one."""
    di, dt = np.dtype(spec_of(input).dtype), np.dtype(spec_of(target).dtype)
    if dt.kind == "b" and di.kind != "b":
        return input, cast(target, di)
    if di.kind == "b" and dt.kind != "b":
        return cast(input, dt), target
    return input, target


@composite(samples=(Sample(((4, 3), (4, 3))), Sample(((5,), (5,)), {"reduction": "sum"}),
                    Sample(((4, 8, 3), (4, 7, 3)),
                           match=r"mse_loss: input \(4, 8, 3\) and target \(4, 7, 3\) do not "
                                 r"broadcast: dimension -2 is 7 vs 8")),
           ref=lambda np, a, b, reduction="mean": (np.mean if reduction == "mean" else np.sum)(
               (a - b) ** 2))
def mse_loss(input, target, reduction="mean"):  # noqa: A002 - torch's argument name
    """Mean (or sum) of squared differences; warns when the shapes would broadcast. A bool
    target (or input) counts as the other's dtype, as torch's kernel reads it (no bool enters
    the subtraction, which refuses one)."""
    input, target = bool_as_other(input, target)
    if _shape(input) != _shape(target):
        loss_broadcast("mse_loss", input, target)
        with quiet_broadcast():   # NOTE: warned above, in the loss's own words
            d = input - target
    else:
        d = input - target
    return _reduce_loss(d * d, reduction)


def loss_broadcast(name, input, target):  # noqa: A002
    """The shape a loss's input and target of different shapes broadcast to, with torch's
    warning (the silent (N,) vs (N, 1) -> (N, N) bug), in the loss's own words; a ShapeError
    naming the loss when they do not broadcast."""
    si, st = _shape(input), _shape(target)
    try:
        out = broadcast(name, spec_of(input), spec_of(target))
    except ShapeError as e:
        raise located(f"{name}: input {fmt_shape(si)} and target {fmt_shape(st)} do not "
                       f"broadcast: {str(e).rsplit(': ', 1)[-1]}") from None
    warnings.warn(f"{name}: target {fmt_shape(st)} differs from input {fmt_shape(si)}; they "
                  f"broadcast to {fmt_shape(out)}, which is likely a bug (at "
                  f"{where_str(user_frame())})", UserWarning, stacklevel=user_stacklevel())
    return out


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
    """Sigmoid cross-entropy (1 - t) x + softplus(-x), torch's (1 - t) x - log_sigmoid(x) in
    its order of rounding (softplus: max(x, 0) + log(1 + exp(-|x|)))."""
    # NOTE: softplus's rule gives sigmoid(x) - t at x = 0 too, as torch and TF; max(x, 0) and
    # |x| differentiated apart gave 1 - t there
    from .elementwise import softplus
    _same_shape("binary_cross_entropy_with_logits", logits, target)
    loss = (1.0 - target) * logits + softplus(-logits)
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


@composite(samples=(Sample(((5,),), {"shifts": (2,), "axes": (0,)}),
                    Sample(((3, 4),), {"shifts": (1, -5), "axes": (0, 1)}),
                    Sample(((2, 3),), {"shifts": (0,), "axes": (1,)})),
           ref=lambda np, x, shifts, axes: np.roll(x, shifts, axes))
def roll(x, shifts, axes):
    """Shift elements along each of `axes` by the matching entry of `shifts` (Python ints),
    wrapping around, as torch.roll and tf.roll: two slices joined, per axis (a shift of 0 or
    of the dim's size gives x's values in a new tensor)."""
    shape = _shape(x)
    if len(shifts) != len(axes):
        raise located(f"roll: shifts and axes must align, got {len(shifts)} shifts and "
                      f"{len(axes)} axes")
    out = x
    for s, d in zip(shifts, axes):
        d = norm_axis("roll", d, len(shape))
        n = shape[d]
        if n is None:
            raise located(f"roll: axis {d} of {fmt_shape(shape)} must be known to roll it")
        s = int(s) % n if n else 0
        if s:
            lead = (slice(None),) * d
            out = concat(slice_(out, index=lead + (slice(n - s, n),)),
                         slice_(out, index=lead + (slice(0, n - s),)), axis=d)
    return copy(out) if out is x else out


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


