"""`tensor_util.constant_value` and `smart_cond` (tensorflow.python.framework / layers.utils):
what TF1 library code asks of a tensor while building a graph.

>>> from dualgrad import graph as tf
>>> x = tf.placeholder(tf.float32, [2, 3])
>>> tf.python.framework.tensor_util.constant_value(tf.shape(x) * 2).tolist()
[4, 6]
>>> tf.python.framework.tensor_util.constant_value(x) is None
True
"""
from __future__ import annotations

import numpy as np

from .control_flow import cond
from .array_ops import RANK, SHAPE, SIZE
from .core import Tensor
from .plan import node_kernel

__all__ = ["constant_value", "smart_cond"]

# NOTE: ops whose value is their input's static shape: folded from the shape alone
_FROM_SHAPE = (SHAPE, SIZE, RANK)


def constant_value(tensor, partial=False):
    """The value of `tensor` if it can be computed while building (constants, static shapes,
    and stateless ops over them), else None; the graph is not run. TF folds a fixed list of
    ops (Shape, Cast, Pack, ..., no arithmetic), so where TF answers None for `shape(x) * 2`
    this gives the value: code that asks has a static and a dynamic path computing the same."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor!r} is not a Tensor")
    return _fold(tensor, {})


def _fold(t, memo):
    key = id(t)
    if key not in memo:
        memo[key] = _compute(t, memo)
    return memo[key]


def _compute(t, memo):
    node = t.node
    kernel, stateful = node_kernel(node)
    if node.op in _FROM_SHAPE:
        x = node.inputs[0]
        dims = None if x.shape is None else tuple(x.shape)
        if dims is None or any(d is None for d in dims):
            return None
        return np.asarray(kernel(np.zeros(dims, np.dtype(x.dtype))))
    if node.type in ("placeholder", "placeholder_with_default") or node.op.stateful:
        return None
    if stateful:   # NOTE: variables, queues, tables, random draws: values of a Session
        return None
    args = [_fold(i, memo) for i in node.inputs]
    if any(a is None for a in args):
        return None
    try:
        out = kernel(*args)
    except Exception:  # noqa: BLE001 - not computable now means None, as TF's
        return None
    out = out[node.outputs.index(t)] if isinstance(out, tuple) else out
    return np.asarray(out)


def smart_cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() or false_fn() at once when pred is a Python bool or a tensor whose value is
    known now; a graph cond otherwise."""
    if isinstance(pred, Tensor):
        value = constant_value(pred)
        if value is None:
            return cond(pred, true_fn, false_fn, name=name)
        pred = bool(value)
    elif not isinstance(pred, (bool, np.bool_, int)):
        raise TypeError(f"`pred` must be a Tensor, or a Python bool, or 1 or 0. Found instead: "
                        f"{type(pred).__name__}")
    return true_fn() if pred else false_fn()
