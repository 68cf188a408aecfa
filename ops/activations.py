"""More activations, losses and normalisations, as compositions of primitives (torch's
definitions, including the gradient at the kinks: where torch's derivative at a boundary
takes one side, the `where` condition here takes the same side)."""
from __future__ import annotations

import numpy as np

from .core import Sample, fmt_shape, located, spec_of
from .composite import (_reduce_loss, _shape, bool_as_other, clamp, composite, in_opmath,
                        logical_and, moments, norm)
from .elementwise import (abs, exp, log, maximum, minimum, sigmoid, softplus, stop_gradient,
                          tanh, where)  # noqa: A004
from .reduce import sum as sum_
from .rules import broadcast, is_bfloat16
from .shape import broadcast_like, broadcast_to, reshape, slice_

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


# -- activations ------------------------------------------------------------------------------
@composite(samples=(Sample(((3, 4),)), Sample(((5,),), {"negative_slope": 0.2})),
           ref=lambda np, x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope))
def leaky_relu(x, negative_slope=0.01):
    return where(x > 0, x, x * negative_slope)


@composite(samples=(Sample(((3, 4),)), Sample(((5,),), {"alpha": 0.5})),
           ref=lambda np, x, alpha=1.0: np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0))
                                                                   - 1)))
def elu(x, alpha=1.0):
    # NOTE: exp of min(x, 0): the branch not taken must not overflow into the gradient
    return where(x > 0, x, (exp(minimum(x, 0.0)) - 1.0) * alpha)


@composite(samples=(Sample(((3, 4),)),),
           ref=lambda np, x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA *
                                                    (np.exp(np.minimum(x, 0)) - 1)))
def selu(x):
    return elu(x, _SELU_ALPHA) * _SELU_SCALE


@composite(samples=(Sample(((3, 4),), {"alpha": 2.0}),),
           ref=lambda np, x, alpha=1.0: np.where(x > 0, x, alpha * (np.exp(
               np.minimum(x, 0) / alpha) - 1)))
def celu(x, alpha=1.0):
    return where(x > 0, x, (exp(minimum(x, 0.0) / alpha) - 1.0) * alpha)


@composite(samples=(Sample(((3, 4),), domain=(-2, 2)),
                    Sample(((5,),), {"min_val": -0.5, "max_val": 0.5})),
           ref=lambda np, x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val))
def hardtanh(x, min_val=-1.0, max_val=1.0):
    """clamp(x, min_val, max_val); gradient 1 strictly inside, 0 outside and at the bounds.
    Integer tensors stay integer, clamped to the bounds truncated to integers (as torch)."""
    if np.dtype(spec_of(x).dtype).kind in "iu":
        return clamp(x, int(min_val), int(max_val))
    inside = logical_and(x > min_val, x < max_val)
    return where(inside, x, stop_gradient(clamp(x, min_val, max_val)))


@composite(samples=(Sample(((3, 4),), domain=(-8, 8)),),
           ref=lambda np, x: np.clip(x, 0, 6))
def relu6(x):
    return hardtanh(x, 0, 6)   # NOTE: int bounds: an integer x stays integer


@composite(samples=(Sample(((3, 4),), domain=(-5, 5)),),
           ref=lambda np, x: np.clip(x + 3, 0, 6) / 6)
def hardsigmoid(x):
    return hardtanh(x + 3.0, 0.0, 6.0) / 6.0


@composite(samples=(Sample(((3, 4),), domain=(-5, 5)),),
           ref=lambda np, x: x * np.clip(x + 3, 0, 6) / 6)
def hardswish(x):
    return x * hardsigmoid(x)


@composite(samples=(Sample(((3, 4),)),), ref=lambda np, x: x / (1 + np.abs(x)))
def softsign(x):
    return x / (abs(x) + 1.0)


@composite(samples=(Sample(((3, 4),)),),
           ref=lambda np, x: x * np.tanh(np.logaddexp(0, x)))
def mish(x):
    return x * tanh(softplus(x))


@composite(samples=(Sample(((3, 4),)),), ref=lambda np, x: -np.logaddexp(0, -x))
def logsigmoid(x):
    return -softplus(-x)


@composite(samples=(Sample(((3, 4),)),), ref=lambda np, x: x - np.tanh(x))
def tanhshrink(x):
    return x - tanh(x)


def _halves_ref(np, x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-b))


@composite(samples=(Sample(((3, 4),)), Sample(((4, 3),), {"dim": 0}),
                    Sample(((3, 5),), match=r"glu: halving dimension -1 of \(3, 5\)")),
           ref=_halves_ref)
def glu(x, dim=-1):
    """a * sigmoid(b) for the two halves a, b of x along dim."""
    xs = _shape(x)
    n = xs[dim]
    if n is not None and n % 2:
        raise located(f"glu: halving dimension {dim} of {fmt_shape(xs)} must be even, "
                       f"got size {n}")
    ax = dim % len(xs)
    first = tuple(slice(None) for _ in range(ax))
    a = slice_(x, index=first + (slice(0, n // 2),))
    b = slice_(x, index=first + (slice(n // 2, n),))
    return a * sigmoid(b)


def _prelu_weight(x, weight):
    ws, xs = _shape(weight), _shape(x)
    if len(ws) > 1:
        raise located(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                      f"ndim = {len(ws)}")
    if not ws or ws[0] == 1:
        # NOTE: one value acts as a scalar: the result keeps x's shape, a 0-d x's too
        return reshape(weight, ()) if ws else weight
    if not xs:
        raise located("prelu: Not allow zero-dim input tensor.")
    channels = xs[1] if len(xs) >= 2 else 1
    if channels is not None and ws[0] is not None and channels != ws[0]:
        raise located(f"prelu: weight {fmt_shape(ws)} has {ws[0]} parameters but input "
                      f"{fmt_shape(xs)} has {channels} channels (dim 1)")
    return reshape(weight, (ws[0],) + (1,) * (len(xs) - 2)) if len(xs) >= 2 else weight


@composite(samples=(Sample(((2, 3, 4), (3,))), Sample(((5,), (1,))), Sample(((), (1,))),
                    Sample(((2, 3), (2,)), match="has 2 parameters but input")),
           ref=lambda np, x, w: np.where(x > 0, x, x * (w.reshape((-1,) + (1,) * (x.ndim - 2))
                                                        if w.size > 1 else w.reshape(()))))
def prelu(x, weight):
    """x where x > 0, else weight * x; weight has one value or one per channel (dim 1)."""
    return where(x > 0, x, x * _prelu_weight(x, weight))


# -- losses -----------------------------------------------------------------------------------
def _check_pair(name, x, t):
    xs, ts = _shape(x), _shape(t)
    if None not in xs and None not in ts and xs != ts:
        raise located(f"{name}: input {fmt_shape(xs)} and target {fmt_shape(ts)} must have "
                       f"the same shape")


def _loss_ref(kind):
    def ref(np, x, t, reduction="mean", **kw):
        d = np.abs(x - t)
        beta = kw.get("beta", kw.get("delta", 1.0))
        if kind == "l1":
            loss = d
        elif kind == "smooth_l1":
            loss = np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
        else:
            loss = np.where(d < beta, 0.5 * d * d, beta * (d - 0.5 * beta))
        return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)
    return ref


@composite(samples=(Sample(((3, 4), (3, 4))), Sample(((5,), (5,)), {"reduction": "sum"}),
                    Sample(((3,), (4,)), match="must have the same shape")),
           ref=_loss_ref("l1"))
def l1_loss(input, target, reduction="mean"):  # noqa: A002 - torch's names
    _check_pair("l1_loss", input, target)
    return _reduce_loss(abs(input - target), reduction)


@composite(samples=(Sample(((3, 4), (3, 4))), Sample(((5,), (5,)), {"beta": 0.5,
                                                                     "reduction": "sum"})),
           ref=_loss_ref("smooth_l1"))
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):  # noqa: A002
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (torch's; beta=0 is the L1)."""
    _check_pair("smooth_l1_loss", input, target)
    input, target = bool_as_other(input, target)
    d = abs(input - target)
    if beta == 0:
        return _reduce_loss(d, reduction)
    return _reduce_loss(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


@composite(samples=(Sample(((3, 4), (3, 4))), Sample(((5,), (5,)), {"delta": 0.5,
                                                                     "reduction": "none"})),
           ref=_loss_ref("huber"))
def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (torch.nn.HuberLoss)."""
    _check_pair("huber_loss", input, target)
    input, target = bool_as_other(input, target)
    if is_bfloat16(spec_of(input).dtype):
        # NOTE: torch's bfloat16 kernel rounds delta and each step to bfloat16; its float16
        # one computes in float32 and rounds once
        return _reduce_loss(_huber(input, target, np.asarray(delta, spec_of(input).dtype)), reduction)
    return _reduce_loss(_huber_opmath(input, target, delta), reduction)


def _huber(x, t, delta):
    d = abs(x - t)
    return where(d < delta, 0.5 * d * d, (d - 0.5 * delta) * delta)


_huber_opmath = in_opmath(_huber)


def _kl_ref(np, x, t, reduction="mean", log_target=False):
    loss = np.exp(t) * (t - x) if log_target else \
        np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - x), 0 * x)
    if reduction == "batchmean":
        return np.sum(loss) / x.shape[0]
    return {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](loss)


@composite(samples=(Sample(((3, 4), (3, 4)), {"reduction": "batchmean"}, domain=(0.1, 1)),
                    Sample(((5,), (5,)), {"log_target": True, "reduction": "sum"})),
           ref=_kl_ref)
def kl_div(input, target, reduction="mean", log_target=False):  # noqa: A002
    """Pointwise target * log(target) - target * input (torch's xlogy form), input being
    log-probabilities (torch's argument order): target * log(target) is 0 where target is 0,
    so a zero target beside a finite input adds 0, beside -inf nan, and a negative target
    gives nan, as torch's. reduction='batchmean' divides the sum by the batch size, the
    mathematically proper KL divergence."""
    if log_target:
        loss = exp(target) * (target - input)
    else:
        nz = target != 0
        loss = where(nz, target * log(where(nz, target, 1.0)), 0.0) - target * input
    if reduction == "batchmean":
        xs = _shape(input)
        return sum_(loss) / (xs[0] if xs else 1)
    return _reduce_loss(loss, reduction)


# -- normalisation and distances --------------------------------------------------------------
def _gn_ref(np, x, weight=None, bias=None, num_groups=1, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps))
    y = y.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


@composite(samples=(Sample(((2, 6, 3, 2), (6,), (6,)), {"num_groups": 3}),
                    Sample(((2, 4, 5),), {"num_groups": 4}),
                    Sample(((2, 6, 3),), {"num_groups": 4}, match="divisible by num_groups")),
           ref=_gn_ref)
@in_opmath
def group_norm(x, weight=None, bias=None, num_groups=1, eps=1e-5):
    """Normalise (N, C, ...) over each group of C / num_groups channels and the other dims,
    then scale and shift per channel (torch.nn.GroupNorm)."""
    xs = _shape(x)
    if len(xs) < 2 or (xs[1] is not None and xs[1] % num_groups):
        raise located(f"group_norm: channels of input {fmt_shape(xs)} must be divisible by "
                       f"num_groups={num_groups}")
    rest = int(np.prod(xs[2:], dtype=np.int64)) if len(xs) > 2 else 1
    g = reshape(x, (-1, num_groups, xs[1] // num_groups * rest))
    m, v = moments(g, (2,), keepdims=True)
    y = reshape((g - m) / (v + eps) ** 0.5, (-1,) + tuple(xs[1:]))
    shape = (1, xs[1]) + (1,) * (len(xs) - 2)
    if weight is not None:
        y = y * reshape(weight, shape)
    if bias is not None:
        y = y + reshape(bias, shape)
    return y


@composite(samples=(Sample(((3, 4),)), Sample(((2, 3, 4),), {"p": 1, "dim": -1})),
           ref=lambda np, x, p=2.0, dim=1, eps=1e-12: x / np.maximum(
               np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1 / p), eps))
def normalize(x, p=2.0, dim=1, eps=1e-12):
    """x / max(||x||_p along dim, eps) (torch.nn.functional.normalize)."""
    return x / maximum(norm(x, ord=p, axis=dim, keepdims=True), eps)


def _cosine_ref(np, a, b, dim, eps):
    return np.sum(a / np.maximum(np.linalg.norm(a, axis=dim, keepdims=True), eps) *
                  b / np.maximum(np.linalg.norm(b, axis=dim, keepdims=True), eps), axis=dim)


def _broadcast_pair(x1, x2):
    s1, s2 = _shape(x1), _shape(x2)
    if s1 == s2:
        return x1, x2
    shape = broadcast("cosine_similarity", spec_of(x1), spec_of(x2))
    if None in shape:       # NOTE: a dim known at run time only: the product has the shape
        like = x1 * x2
        return broadcast_like(x1, like), broadcast_like(x2, like)
    return broadcast_to(x1, shape=shape), broadcast_to(x2, shape=shape)


@composite(samples=(Sample(((3, 4), (3, 4))), Sample(((2, 3), (1, 3)), {"dim": -1}),
                    Sample(((1, 2, 3), (2, 1, 3)), {"dim": -2})),
           ref=lambda np, a, b, dim=1, eps=1e-8: _cosine_ref(np, *np.broadcast_arrays(a, b),
                                                             dim, eps))
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along dim, as torch computes it."""
    x1, x2 = _broadcast_pair(x1, x2)      # NOTE: torch's norms are of the broadcast inputs
    a = x1 / maximum(norm(x1, ord=2, axis=dim, keepdims=True), eps)
    b = x2 / maximum(norm(x2, ord=2, axis=dim, keepdims=True), eps)
    return sum_(a * b, axis=dim)


@composite(samples=(Sample(((3, 4), (3, 4))), Sample(((3, 4), (3, 4)), {"p": 1.0,
                                                                         "keepdim": True})),
           ref=lambda np, a, b, p=2.0, eps=1e-6, keepdim=False: np.sum(
               np.abs(a - b + eps) ** p, axis=-1, keepdims=keepdim) ** (1 / p))
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (torch.nn.functional.pairwise_distance)."""
    return norm(x1 - x2 + eps, ord=p, axis=-1, keepdims=keepdim)

