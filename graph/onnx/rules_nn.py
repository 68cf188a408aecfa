"""Reader rules for network layers: softmax, Gemm, Conv, pooling, normalisation, TopK, ..."""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .rules_math import arg, scalar


# -- softmax family: before version 13 the input is flattened to 2-d at `axis` (default 1) --
def _hardmax(x, axis):
    hot = ops.one_hot(ops.argmax(x, axis=-1), x.shape[-1], dtype=np.dtype(x.dtype).name)
    return hot


def _last(x, axis, fn):
    """fn over the last axis, applied along `axis` by moving it there and back."""
    nd = len(x.shape)
    axis %= nd
    if axis == nd - 1:
        return fn(x, -1)
    perm = [i for i in range(nd) if i != axis] + [axis]
    back = list(np.argsort(perm))
    return ops.transpose(fn(ops.transpose(x, axes=tuple(perm)), -1), axes=tuple(back))


def _softmax_2d(fn):
    def rule(r, node, ins, at):
        x = arg(r, ins[0])
        nd = len(x.shape)
        axis = at.get("axis", 1) % max(nd, 1)
        if None in x.shape[axis:]:
            r.fail(node, f"the dims from axis {axis} on must be known, got {x.shape}")
        lead = x.shape[:axis]
        rest = int(np.prod(x.shape[axis:]))
        flat = ops.reshape(x, (-1 if None in lead else int(np.prod(lead)), rest))
        return [ops.reshape(fn(flat, -1), tuple(-1 if d is None else d for d in x.shape))]
    return rule


def _softmax_axis(fn):
    def rule(r, node, ins, at):
        return [_last(arg(r, ins[0]), at.get("axis", -1), fn)]
    return rule


def _softmax(x, axis):
    return ops.softmax(x, axis=axis)


def _log_softmax(x, axis):
    return ops.log_softmax(x, axis=axis)


# -- dense ----------------------------------------------------------------------------------
def _gemm(r, node, ins, at):
    a, b = arg(r, ins[0]), arg(r, ins[1])
    if at.get("transA", 0):
        a = ops.transpose(a, axes=(1, 0))
    if at.get("transB", 0):
        b = ops.transpose(b, axes=(1, 0))
    y = ops.matmul(a, b)
    alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
    if alpha != 1.0:
        y = y * scalar(y, alpha)
    if len(ins) > 2 and ins[2] is not None:
        c = arg(r, ins[2])
        y = y + (c if beta == 1.0 else c * scalar(c, beta))
    return [y]


def _einsum(r, node, ins, at):
    return [ops.einsum(*[arg(r, v) for v in ins], equation=at["equation"].replace(" ", ""))]


# -- windows ----------------------------------------------------------------------------------
def _pads(r, node, at, x, kernel, strides, dil):
    """Explicit (begin..., end...) pads, auto_pad resolved from the known spatial dims."""
    nd = len(kernel)
    mode = at.get("auto_pad", "NOTSET") or "NOTSET"
    if mode in ("NOTSET",):
        return list(at.get("pads", [0] * 2 * nd))
    if mode == "VALID":
        return [0] * 2 * nd
    sizes = x.shape[2:]
    if None in sizes:
        r.fail(node, f"auto_pad={mode} needs the spatial dims known, got {x.shape}")
    begin, end = [], []
    for d, k, s, dl in zip(sizes, kernel, strides, dil):
        out = -(-d // s)
        total = max((out - 1) * s + (k - 1) * dl + 1 - d, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return begin + end


def _window(r, node, at, x, kernel):
    nd = len(kernel)
    if nd not in (1, 2):
        r.fail(node, f"{nd}-d windows are not supported (dualgrad has 1-d and 2-d)")
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    pads = _pads(r, node, at, x, kernel, strides, dil)
    if len(strides) != nd or len(dil) != nd or len(pads) != 2 * nd or len(x.shape) != nd + 2:
        r.fail(node, f"kernel_shape {kernel}, strides {strides}, dilations {dil} and pads "
                     f"{pads} do not fit a {nd}-d window over input {x.shape}")
    if min(kernel + strides + dil) < 1 or min(pads) < 0:
        r.fail(node, f"kernel_shape {kernel}, strides {strides} and dilations {dil} must be "
                     f"positive, pads {pads} not negative")
    return strides, dil, pads


def _as_2d(x, nd):
    return x if nd == 2 else ops.expand_dims(x, axis=2)


def _pad_begin_end(x, pads, nd):
    pw = ((0, 0), (0, 0)) + tuple((pads[i], pads[i + nd]) for i in range(nd))
    return ops.pad(x, pw) if any(pads) else x


def _conv(r, node, ins, at):
    x, w = arg(r, ins[0]), arg(r, ins[1])
    if np.dtype(x.dtype) == np.float16:
        r.fail(node, "float16 convolution is not supported (dualgrad's unfold has no float16)")
    kernel = list(at.get("kernel_shape", w.shape[2:]))
    nd = len(kernel)
    strides, dil, pads = _window(r, node, at, x, kernel)
    if nd == 1:
        x, w = ops.expand_dims(x, axis=2), ops.expand_dims(w, axis=2)
        strides, dil = [1] + strides, [1] + dil
        pads = [0, pads[0], 0, pads[1]]
    sym = pads[:2] == pads[2:]
    if not sym:
        x = _pad_begin_end(x, pads, 2)
    b = arg(r, ins[2]) if len(ins) > 2 and ins[2] is not None else None
    y = ops.conv2d(x, w, b, stride=tuple(strides), padding=tuple(pads[:2]) if sym else 0,
                   dilation=tuple(dil), groups=at.get("group", 1))
    return [ops.squeeze(y, axis=2) if nd == 1 else y]


def _pool(kind):
    def rule(r, node, ins, at):
        if len(node.output) > 1 and node.output[1]:
            r.fail(node, "the Indices output is not supported")
        x = arg(r, ins[0])
        kernel = list(at["kernel_shape"])
        nd = len(kernel)
        strides, dil, pads = _window(r, node, at, x, kernel)
        if nd == 1:
            x = ops.expand_dims(x, axis=2)
            kernel, strides, dil, pads = [1] + kernel, [1] + strides, [1] + dil, \
                [0, pads[0], 0, pads[1]]
        ceil = bool(at.get("ceil_mode", 0))
        if kind == "avg" and any(d != 1 for d in dil):
            r.fail(node, f"dilations {dil} in AveragePool")
        wide = any(2 * p > (k - 1) * d + 1 for p, k, d in zip(pads, kernel + kernel, dil + dil))
        if pads[:2] != pads[2:] or wide:
            if ceil:
                r.fail(node, f"ceil_mode with pads {pads} (asymmetric, or over half the window)")
            y = _pool_padded(x, kind, kernel, strides, dil, pads,
                             bool(at.get("count_include_pad", 0)))
        elif kind == "max":
            y = ops.max_pool2d(x, tuple(kernel), tuple(strides), padding=tuple(pads[:2]),
                               dilation=tuple(dil), ceil_mode=ceil)
        else:
            y = ops.avg_pool2d(x, tuple(kernel), tuple(strides), padding=tuple(pads[:2]),
                               ceil_mode=ceil,
                               count_include_pad=bool(at.get("count_include_pad", 0)))
        return [ops.squeeze(y, axis=2) if nd == 1 else y]
    return rule


def _pool_padded(x, kind, kernel, strides, dil, pads, count_pad):
    """A pool over explicitly padded input: -inf pads for max, zero pads for mean (divided by
    the count of real cells unless count_include_pad)."""
    pw = ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3]))
    if kind == "max":
        xp = ops.pad(x, pw, value=scalar(x, -np.inf))
        return ops.max_pool2d(xp, tuple(kernel), tuple(strides), dilation=tuple(dil))
    y = ops.avg_pool2d(ops.pad(x, pw), tuple(kernel), tuple(strides))
    if count_pad:
        return y
    ones = ops.pad(ops.ones_like(x), pw)
    return y / ops.avg_pool2d(ones, tuple(kernel), tuple(strides))


def _global(fn):
    def rule(r, node, ins, at):
        x = arg(r, ins[0])
        return [fn(x, axis=tuple(range(2, len(x.shape))), keepdims=True)]
    return rule


# -- normalisation ----------------------------------------------------------------------------
def _batch_norm(r, node, ins, at):
    if any(o for o in node.output[1:]) or at.get("training_mode", 0):
        r.fail(node, "training-mode batch normalisation (batch statistics, running-mean "
                     "outputs) is not supported; only inference")
    x, scale, b, mean, var = [arg(r, v) for v in ins[:5]]
    return [ops.batch_norm(x, mean, var, scale, b, eps=at.get("epsilon", 1e-5))]


def _channels(x, v):
    return ops.reshape(v, (1, -1) + (1,) * (len(x.shape) - 2))


def _instance_norm(r, node, ins, at):
    x, scale, b = [arg(r, v) for v in ins]
    axes = tuple(range(2, len(x.shape)))
    mu = ops.mean(x, axis=axes, keepdims=True)
    var = ops.mean((x - mu) * (x - mu), axis=axes, keepdims=True)
    y = (x - mu) / ops.sqrt(var + scalar(var, at.get("epsilon", 1e-5)))
    return [y * _channels(x, scale) + _channels(x, b)]


def _normalize(rms):
    """LayerNormalization (Y, Mean, InvStdDev) and RMSNormalization (Y) over the dims from
    `axis` on, computed in `stash_type` and cast back before the scale and bias."""
    def rule(r, node, ins, at):
        x = arg(r, ins[0])
        nd = len(x.shape)
        axes = tuple(range(at.get("axis", -1) % nd, nd))
        dt = np.dtype(x.dtype)
        work = r.dtype(at.get("stash_type", 1), node, "attribute 'stash_type'")
        xw = ops.cast(x, work.name) if work != dt else x
        eps = scalar(xw, at.get("epsilon", 1e-5))
        if rms:
            inv = scalar(xw, 1) / ops.sqrt(ops.mean(xw * xw, axis=axes, keepdims=True) + eps)
            y, mu = xw * inv, None
        else:
            mu = ops.mean(xw, axis=axes, keepdims=True)
            d = xw - mu
            inv = scalar(xw, 1) / ops.sqrt(ops.mean(d * d, axis=axes, keepdims=True) + eps)
            y = d * inv
        y = (ops.cast(y, dt.name) if work != dt else y) * arg(r, ins[1])
        if len(ins) > 2 and ins[2] is not None:
            y = y + arg(r, ins[2])
        return [y] if rms else [y, mu, inv]
    return rule


# -- losses ---------------------------------------------------------------------------------
def _nll_of(r, node, logp, target, weight, at):
    """-logp[n, target[n], ...] weighted, with ignore_index, reduced as `reduction` says."""
    t = ops.cast(target, "int64") if np.dtype(target.dtype) != np.int64 else target
    w = None if weight is None else arg(r, weight)
    mask = None
    if "ignore_index" in at:
        mask = ops.ne(t, scalar(t, at["ignore_index"]))
        t = ops.where(mask, t, scalar(t, 0))
    picked = ops.squeeze(ops.gather(logp, ops.expand_dims(t, axis=1), axis=1), axis=1)
    wt = ops.take(w, t, axis=0) if w is not None else None
    if mask is not None:
        m = ops.cast(mask, np.dtype(logp.dtype).name)
        wt = m if wt is None else wt * m
    loss = -picked if wt is None else -(picked * wt)
    how = at.get("reduction", "mean")
    if how == "none":
        return loss
    if how == "sum":
        return ops.sum(loss, axis=None)
    if how != "mean":
        r.fail(node, f"reduction={how!r}")
    if wt is None:
        return ops.mean(loss, axis=None)
    return ops.sum(loss, axis=None) / ops.sum(wt, axis=None)


def _nll(r, node, ins, at):
    w = ins[2] if len(ins) > 2 else None
    return [_nll_of(r, node, arg(r, ins[0]), arg(r, ins[1]), w, at)]


def _softmax_ce(r, node, ins, at):
    logp = ops.log_softmax(arg(r, ins[0]), axis=1)
    w = ins[2] if len(ins) > 2 else None
    return [_nll_of(r, node, logp, arg(r, ins[1]), w, at), logp]


def _lp_norm(r, node, ins, at):
    x = arg(r, ins[0])
    p = at.get("p", 2)
    axis = at.get("axis", -1)
    n = ops.norm(x, ord=p, axis=axis, keepdims=True)
    zero = ops.eq(n, scalar(n, 0))
    return [ops.where(zero, scalar(x, 0), x / ops.where(zero, scalar(n, 1), n))]


def _mvn(r, node, ins, at):
    x = arg(r, ins[0])
    axes = tuple(at.get("axes", [0, 2, 3]))
    mu = ops.mean(x, axis=axes, keepdims=True)
    var = ops.mean((x - mu) * (x - mu), axis=axes, keepdims=True)
    return [(x - mu) / (ops.sqrt(var) + scalar(var, 1e-9))]


def _lrn(r, node, ins, at):
    x = arg(r, ins[0])
    size = at["size"]
    alpha, beta, bias = at.get("alpha", 1e-4), at.get("beta", 0.75), at.get("bias", 1.0)
    sq = x * x
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = ops.pad(sq, ((0, 0), (lo, hi)) + ((0, 0),) * (len(x.shape) - 2))
    c = x.shape[1]
    total = ops.slice_(padded, index=(slice(None), slice(0, c)))
    for k in range(1, size):
        total = total + ops.slice_(padded, index=(slice(None), slice(k, k + c)))
    return [x / ops.pow(scalar(x, bias) + scalar(x, alpha / size) * total, scalar(x, beta))]


# -- dropout: inference, or a zero ratio ------------------------------------------------------
def _dropout_1(r, node, ins, at):
    """Versions 1 and 6: training mode unless is_test (default 0); 7 and 10: inference."""
    if not at.get("is_test", 0) and at.get("ratio", 0.5):
        r.fail(node, "training-mode dropout (is_test=0, random) is not supported")
    return _dropped(r, ins[0], node)


def _dropout_7(r, node, ins, at):
    return _dropped(r, ins[0], node)


def _dropout_12(r, node, ins, at):
    training = len(ins) > 2 and ins[2] is not None and \
        bool(r.known(ins[2], "training_mode", node).reshape(-1)[0])
    ratio = 0.5 if len(ins) < 2 or ins[1] is None else \
        float(r.known(ins[1], "ratio", node).reshape(-1)[0])
    if training and ratio != 0:
        r.fail(node, f"training-mode dropout with ratio {ratio} (random) is not supported")
    return _dropped(r, ins[0], node)


def _dropped(r, x, node):
    mask = np.ones(tuple(x.shape), bool) if None not in x.shape else \
        ops.eq(ops.zeros_like(arg(r, x)), scalar(x, 0))
    return [x, mask]


# -- top-k ----------------------------------------------------------------------------------
def _topk_of(r, node, x, k, axis, largest):
    x = arg(r, x)
    axis %= len(x.shape)
    d = x.shape[axis]
    if d is not None and k > d:
        r.fail(node, f"k={k} is larger than dim {axis} ({d})")
    idx = ops.argsort(x, axis=axis, descending=largest)
    idx = ops.slice_(idx, index=(slice(None),) * axis + (slice(0, k),))
    return [ops.gather(x, idx, axis=axis), ops.cast(idx, "int64")]


def _topk_1(r, node, ins, at):
    return _topk_of(r, node, ins[0], at["k"], at.get("axis", -1), True)


def _topk_10(r, node, ins, at):
    k = r.ints(ins[1], "k", node)[0]
    if not at.get("sorted", 1):
        r.fail(node, "sorted=0 (an unspecified order) is not supported")
    return _topk_of(r, node, ins[0], k, at.get("axis", -1), bool(at.get("largest", 1)))


TABLE = {
    "Softmax": {1: _softmax_2d(_softmax), 13: _softmax_axis(_softmax)},
    "LogSoftmax": {1: _softmax_2d(_log_softmax), 13: _softmax_axis(_log_softmax)},
    "Hardmax": {1: _softmax_2d(_hardmax), 13: _softmax_axis(_hardmax)},
    "Gemm": {1: _gemm}, "Einsum": {12: _einsum},
    "Conv": {1: _conv}, "MaxPool": {1: _pool("max")}, "AveragePool": {1: _pool("avg")},
    "GlobalAveragePool": {1: _global(ops.mean)}, "GlobalMaxPool": {1: _global(ops.max)},
    "BatchNormalization": {1: _batch_norm}, "InstanceNormalization": {1: _instance_norm},
    "LayerNormalization": {17: _normalize(False)}, "RMSNormalization": {23: _normalize(True)},
    "NegativeLogLikelihoodLoss": {12: _nll}, "SoftmaxCrossEntropyLoss": {12: _softmax_ce}, "LpNormalization": {1: _lp_norm},
    "MeanVarianceNormalization": {9: _mvn}, "LRN": {1: _lrn},
    "Dropout": {1: _dropout_1, 7: _dropout_7, 12: _dropout_12},
    "TopK": {1: _topk_1, 10: _topk_10},
}
