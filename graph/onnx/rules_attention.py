"""Reader rule for ONNX's Attention (version 23 on): scaled dot-product attention over
the registry's matmul and softmax, with its masks, causal frontier, key/value cache and
grouped heads. What it does not read (the qk_matmul_output output, nonpad_kv_seqlen,
sliding windows) is refused by name."""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .rules_math import arg, scalar


def _heads(x, n):
    """(B, S, n*D) -> (B, n, S, D)."""
    b, s, hd = x.shape
    y = ops.reshape(x, (-1 if b is None else b, s, n, hd // n))
    return ops.transpose(y, axes=(0, 2, 1, 3))


def _opt(ins, k):
    return ins[k] if len(ins) > k and ins[k] is not None else None


def _refusals(r, node, ins, at):
    if len(node.output) > 3 and node.output[3]:
        r.fail(node, "the qk_matmul_output output is not supported")
    if _opt(ins, 6) is not None:
        r.fail(node, "nonpad_kv_seqlen is not supported")
    if at.get("left_window_size", -1) >= 0 or at.get("right_window_size", -1) >= 0:
        r.fail(node, "sliding-window attention is not supported")
    if (_opt(ins, 4) is None) != (_opt(ins, 5) is None):
        r.fail(node, "past_key and past_value must come together")


def _bias(r, q, kv_len, mask, causal, offset):
    """The additive bias (0 or -inf, plus a float mask), or None."""
    dt = np.dtype(q.dtype).name
    bias = None
    if mask is not None:
        short = kv_len - mask.shape[-1]
        if mask.dtype == np.bool_:
            mask = ops.where(mask, scalar(q, 0), scalar(q, -np.inf))
        if short > 0:
            pw = ((0, 0),) * (len(mask.shape) - 1) + ((0, short),)
            mask = ops.pad(mask, pw, value=scalar(q, -np.inf))
        bias = ops.cast(mask, dt) if np.dtype(mask.dtype) != np.dtype(dt) else mask
    if causal:
        sq = q.shape[2]
        allowed = np.arange(kv_len)[None, :] <= np.arange(sq)[:, None] + offset
        tri = np.where(allowed, 0, -np.inf).astype(dt)
        bias = tri if bias is None else bias + tri
    return bias


def _attention(r, node, ins, at):
    _refusals(r, node, ins, at)
    q, k, v = arg(r, ins[0]), arg(r, ins[1]), arg(r, ins[2])
    three_d = len(q.shape) == 3
    if three_d:
        q = _heads(q, at["q_num_heads"])
        k, v = _heads(k, at["kv_num_heads"]), _heads(v, at["kv_num_heads"])
    past_k, past_v = _opt(ins, 4), _opt(ins, 5)
    offset = 0
    if past_k is not None:
        offset = past_k.shape[2]
        k = ops.concat(arg(r, past_k), k, axis=2)
        v = ops.concat(arg(r, past_v), v, axis=2)
    present_k, present_v = k, v
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk:
        if hq % hk:
            r.fail(node, f"{hq} query heads do not group over {hk} key/value heads")
        k = _repeat_heads(k, hq // hk)
        v = _repeat_heads(v, hq // hk)
    scale = at.get("scale", 1.0 / np.sqrt(q.shape[3]))
    s = scalar(q, np.sqrt(scale))
    qk = ops.matmul(q * s, ops.transpose(k * s, axes=(0, 1, 3, 2)))
    if at.get("softcap", 0.0) > 0:
        c = scalar(qk, at["softcap"])
        qk = ops.tanh(qk / c) * c
    mask = _opt(ins, 3)
    bias = _bias(r, q, k.shape[2], None if mask is None else arg(r, mask),
                 bool(at.get("is_causal", 0)), offset)
    if bias is None:
        p = ops.softmax(qk, axis=-1)
    else:
        qk = qk + bias
        top = ops.max(qk, axis=-1, keepdims=True)
        dead = ops.eq(top, scalar(top, -np.inf))      # NOTE: a fully masked row gives 0
        safe = ops.where(dead, scalar(qk, 0), qk)
        p = ops.where(dead, scalar(qk, 0), ops.softmax(safe, axis=-1))
    y = ops.matmul(p, v)
    if three_d:
        b, h, sq, dv = y.shape
        y = ops.reshape(ops.transpose(y, axes=(0, 2, 1, 3)), (-1 if b is None else b, sq, h * dv))
    return [y, present_k, present_v]


def _repeat_heads(x, n):
    """[h0, h0, h1, h1, ...]: each head repeated n times, interleaved."""
    b, h, s, d = x.shape
    y = ops.broadcast_to(ops.expand_dims(x, axis=2), shape=(b, h, n, s, d))
    return ops.reshape(y, (b, h * n, s, d))


TABLE = {"Attention": {23: _attention}}
