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
from .core import Tensor
from .plan import node_kernel

__all__ = ["constant_value", "smart_cond"]

_STATIC = {"shape": lambda shape, node: np.array(shape, node.attrs.get("out_type", np.int32)),
           "size": lambda shape, node: np.array(int(np.prod(shape)),
                                                node.attrs.get("out_type", np.int32)),
           "rank": lambda shape, node: np.array(len(shape), np.int32)}


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
    if node.type in _STATIC:
        shape = node.inputs[0].shape
        dims = None if shape is None else tuple(shape)
        if dims is None or any(d is None for d in dims):
            return None
        return _STATIC[node.type](dims, node)
    if node.type in ("placeholder", "placeholder_with_default") or node.op.stateful:
        return None
    kernel, stateful = node_kernel(node)
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
