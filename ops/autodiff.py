"""Reverse-mode differentiation over any DAG of op applications, shared by both engines.

The eager engine walks its tape with it (`Tensor.backward`); the graph engine walks graph
nodes with it (`gradients`). Each value exposes its producer through `node_of(value)`, which
returns `(op, inputs, attrs)` or None for a leaf. Gradients are built with op calls, so in
eager mode they are computed, and in graph mode they become new nodes.
"""
from __future__ import annotations

from contextlib import nullcontext


def toposort(outputs, node_of, needs_grad=lambda v: True):
    """Values reachable from `outputs` through producers, inputs before users."""
    order, seen = [], set()
    stack = [(v, False) for v in outputs]
    while stack:
        v, done = stack.pop()
        if done:
            order.append(v)
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        stack.append((v, True))
        node = node_of(v)
        if node is not None:
            for inp in node[1]:
                if needs_grad(inp) and id(inp) not in seen:
                    stack.append((inp, False))
    return order


def backprop(outputs, grads, node_of, needs_grad, *, stop=None, vjp_context=None):
    """Propagate `grads` (one per output) back through producers.

    Returns {id(value): (value, gradient)} for every value reached that needs a gradient.
    `needs_grad(v)` says whether v can carry one (a float value that requires grad);
    `stop` (a set of ids) marks values whose gradient is wanted but not propagated further;
    `vjp_context(value)` may wrap each rule's call (the graph engine uses it to tag gradient
    nodes with the forward op they differentiate).
    """
    stop = stop or set()
    acc = {}
    for v, g in zip(outputs, grads):
        _accumulate(acc, v, g)
    for v in reversed(toposort(outputs, lambda u: None if id(u) in stop else node_of(u),
                               needs_grad)):
        entry = acc.get(id(v))
        node = None if id(v) in stop else node_of(v)
        if entry is None or node is None:
            continue
        op, inputs, attrs = node
        if op.vjp is None:
            continue
        needs = tuple(needs_grad(i) for i in inputs)
        if not any(needs):
            continue
        with (vjp_context(v) if vjp_context else nullcontext()):
            in_grads = op.vjp(entry[1], *inputs, out=v, needs=needs, **attrs)
        for inp, need, g in zip(inputs, needs, in_grads):
            if need and g is not None:
                _accumulate(acc, inp, g)
    return acc


def _accumulate(acc, v, g):
    prev = acc.get(id(v))
    acc[id(v)] = (v, g if prev is None else prev[1] + g)
