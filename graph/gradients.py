"""`gradients(ys, xs)`: new nodes built from the op library's gradient rules.

The walk is `ops.autodiff.backprop`, the one reverse-mode walker (eager uses it too); each
rule's op calls land here as graph nodes, named `gradients/<forward node>_grad/...` and
tagged with the forward node they differentiate, so a run-time error in a gradient node
names the forward op and the line that built it.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (3,))
>>> (dx,) = graph.gradients(graph.reduce_sum(x * x), [x])
>>> with graph.Session() as s:
...     s.run(dx, {x: [1.0, 2.0, 3.0]})
array([2., 4., 6.], dtype=float32)
"""
from __future__ import annotations

import contextlib

from dualgrad import ops
from dualgrad.ops.autodiff import backprop
from dualgrad.ops.rules import inexact

from .core import Tensor, gradient_of

__all__ = ["gradients", "node_of"]


def _call_arg(t):
    """The argument the forward call saw: a weak Python scalar stays a scalar, so each rule
    takes the same path as in eager (e.g. x ** 2 -> 2 * x)."""
    if t.node.type == "const" and t.spec.weak is not None:
        return t.spec.weak
    return t


def node_of(t):
    """(op, inputs, attrs) of the node that produced t, or None for a leaf."""
    if not isinstance(t, Tensor):
        return None
    node = t.node
    if node.op.vjp is None:
        return None
    return node.op, tuple(_call_arg(i) for i in node.inputs), node.attrs


def _reaching(ys, xs):
    """ids of tensors on some path from an x to a y: only those need a gradient."""
    targets = {id(x) for x in xs}
    memo = {}
    order = ops.autodiff.toposort(ys, node_of_all)
    for t in order:
        node = t.node
        memo[id(t)] = id(t) in targets or node.op.vjp is not None and any(
            memo.get(id(i), False) for i in node.inputs)
    return {k for k, v in memo.items() if v}


def node_of_all(t):
    """Like node_of, but through every node (for reachability, not for rules)."""
    return (None, t.node.inputs, None) if isinstance(t, Tensor) else None


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None):
    """d(sum of ys)/d(x) for each x in xs, as new tensors (None where x does not reach ys).

    colocate_gradients_with_ops, gate_gradients, aggregation_method: TF1's placement and
    scheduling switches; they do not change the values, and dualgrad places nothing.

    grad_ys: the incoming gradients (default: ones shaped like each y).
    stop_gradients: tensors treated as constants.
    """
    ys, xs = _as_list(ys), _as_list(xs)
    for t in ys + xs:
        if not isinstance(t, Tensor):
            raise TypeError(f"gradients: expected graph tensors, got {t!r}")
    g = ys[0].graph
    stops = {id(t) for t in _as_list(stop_gradients or [])}
    live = _reaching(ys, xs) - stops if xs else set()

    def needs_grad(v):
        return isinstance(v, Tensor) and id(v) in live and inexact(v.dtype)

    with g.name_scope(name) as scope:
        if grad_ys is None:
            grad_ys = [None] * len(ys)
        grad_ys = [ops.ones_like(y) if gy is None else gy for y, gy in zip(ys, _as_list(grad_ys))]

        @contextlib.contextmanager
        def vjp_context(v):
            with gradient_of(v.node), v.graph.name_scope(f"{scope}{v.node.name}_grad/"):
                yield

        acc = backprop(ys, grad_ys, node_of, needs_grad, stop=stops, vjp_context=vjp_context)
    out = []
    for x in xs:
        entry = acc.get(id(x))
        out.append(None if entry is None or not needs_grad(x) else entry[1])
    return out


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]
