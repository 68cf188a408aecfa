"""Reverse-mode differentiation over any DAG of op applications, shared by both engines.

The eager engine walks its tape with it (`Tensor.backward`); the graph engine walks graph
nodes with it (`gradients`). Each value exposes its producer through `node_of(value)`, which
returns `(op, inputs, attrs)` or None for a leaf. Gradients are built with op calls, so in
eager mode they are computed, and in graph mode they become new nodes.
"""
from __future__ import annotations

import numpy as np


def toposort(outputs, node_of, needs_grad=lambda v: True):
    """Values reachable from `outputs` through producers, inputs before users."""
    return [v for v, _, _ in _walk(outputs, node_of, needs_grad, leaves=True)]


def _walk(outputs, node_of, needs_grad, leaves=False, first_input_first=False):
    """Depth-first walk: [(value, node, needs)] with inputs before users.

    Each producer is asked for once (node_of may build a tuple, or raise for a freed tape) and
    `needs` - which inputs need a gradient - is computed once, here, and reused by backprop.
    Leaves (node None) are listed only when `leaves` is true. With `first_input_first`, an
    op's first input is explored first, so in reverse the side inputs (a layer's weight
    behind its transpose) come right after their user, not at the very end.
    """
    order, seen = [], set()
    append, seen_add = order.append, seen.add
    stack = [(v, None, None) for v in outputs]
    pop, push = stack.pop, stack.append
    while stack:
        v, node, needs = pop()
        if node is not None:            # all of v's inputs are listed: v comes next
            append((v, node, needs))
            continue
        if id(v) in seen:
            continue
        seen_add(id(v))
        node = node_of(v)
        if node is None:
            if leaves:
                append((v, None, ()))
            continue
        inputs = node[1]
        needs = tuple(map(needs_grad, inputs))
        push((v, node, needs))
        pairs = zip(inputs, needs)
        for inp, need in (reversed(list(pairs)) if first_input_first else pairs):
            if need and id(inp) not in seen:
                push((inp, None, None))
    return order


def backprop(outputs, grads, node_of, needs_grad, **kw):
    """`_backprop`, without the broadcast warning of rules.warn_outer (gradient rules
    broadcast on purpose, and their line would be the backward() call) and without NumPy's
    floating-point warnings (a gradient of inf or nan comes out silently, as torch's)."""
    from .core import quiet_broadcast
    with quiet_broadcast(), np.errstate(all="ignore"):   # NOTE: inf and nan as torch's
        return _backprop(outputs, grads, node_of, needs_grad, **kw)


def _backprop(outputs, grads, node_of, needs_grad, *, stop=None, vjp_context=None,
              on_leaf=None, on_done=None, add_into=None, check=None):
    """Propagate `grads` (one per output) back through producers.

    Returns {id(value): (value, gradient)} for every value reached that needs a gradient.
    `needs_grad(v)` says whether v can carry one (a float value that requires grad);
    `stop` (a set of ids) marks values whose gradient is wanted but not propagated further;
    `vjp_context(value)` may wrap each rule's call (the graph engine uses it to tag gradient
    nodes with the forward op they differentiate).
    `on_leaf(value, gradient)` is called for each leaf (a value without producer) as soon as
    its gradient is complete, i.e. after the last rule that feeds it, while the walk goes on
    (DDP starts averaging a layer's gradients while earlier layers still differentiate).
    `on_done(value)` is called for each value with a producer as soon as its rule has run;
    that value's gradient is then dropped from the result and the walk lets go of its entry,
    so arrays no longer needed are freed as the walk goes on and later rules reuse warm
    memory, as torch's engine does (eager frees its tape entries there; graph.gradients
    wants inner values' gradients and passes none).
    `add_into(total, g, at=None)` may add g into a running total (at index `at` of it: an op
    with `grad_at`) in place (True) or decline (False):
    it is offered only totals this walk made (`prev + g`) and has not handed on, i.e. whose
    only reference is its own table, so an in-place sum changes nothing anyone else holds
    (eager, when it records no graph: a weight used at every step of an RNN sums 50
    gradients into one array instead of making 49).
    `check(op, in_grads)` sees each rule's results as they come (eager's anomaly mode).
    """
    if stop:
        def node_of(u, _inner=node_of):
            return None if id(u) in stop else _inner(u)
    acc = {}
    for v, g in zip(outputs, grads):
        _accumulate(acc, v, g)
    private = set()   # ids of the values whose running total this walk alone holds
    order = _walk(outputs, node_of, needs_grad, first_input_first=on_leaf is not None)
    uses = None if on_leaf is None else _leaf_uses(order)
    pop = order.pop   # NOTE: popped, not iterated: a finished entry is not kept alive here
    while order:
        v, node, needs = pop()
        entry = acc.get(id(v))
        op, inputs, attrs = node[0], node[1], node[2]   # eager entries carry a 4th field
        if entry is not None and op.vjp is not None and True in needs and \
                not _added_at(op, entry[1], inputs, attrs, acc, private, add_into):
            if vjp_context is None:
                in_grads = op.vjp(entry[1], *inputs, out=v, needs=needs, **attrs)
            else:
                with vjp_context(v):
                    in_grads = op.vjp(entry[1], *inputs, out=v, needs=needs, **attrs)
            if check is not None:
                check(op, in_grads)
            for inp, need, g in zip(inputs, needs, in_grads):
                if need and g is not None:   # NOTE: _accumulate inlined (a frame per edge)
                    k = id(inp)
                    prev = acc.get(k)
                    if prev is None:
                        acc[k] = (inp, g)
                        if add_into is not None and op.grad_at is not None:
                            private.add(k)      # NOTE: a new full-size array of its own
                    elif k not in private or not add_into(prev[1], g):
                        acc[k] = (inp, prev[1] + g)
                        if add_into is not None:
                            private.add(k)
        private.discard(id(v))      # NOTE: v's total was handed to its rule: no longer private
        if on_done is not None and entry is not None:
            del acc[id(v)]
            on_done(v)
        if uses:
            _release(uses, inputs, needs, acc, on_leaf)
    return acc


def _added_at(op, g, inputs, attrs, acc, private, add_into):
    """An op whose gradient lands at one index of input 0 (op.grad_at: a slice) adds g there
    into input 0's running total, when this walk alone holds that total: no full-size
    gradient is built (an RNN's 50 steps sliced from one (T, B, 4H) projection). False: the
    rule runs as usual."""
    if op.grad_at is None or add_into is None:
        return False
    k = id(inputs[0])
    prev = acc.get(k)
    return prev is not None and k in private and add_into(prev[1], g, op.grad_at(**attrs))


def _leaf_uses(order):
    """id(leaf) -> how many walked entries take it as an input that needs a gradient."""
    inner = {id(v) for v, _, _ in order}
    uses = {}
    for _, node, needs in order:
        for inp, need in zip(node[1], needs):
            if need and id(inp) not in inner:
                uses[id(inp)] = uses.get(id(inp), 0) + 1
    return uses


def _release(uses, inputs, needs, acc, on_leaf):
    """Count down the leaves among inputs; report each whose last user has run."""
    for inp, need in zip(inputs, needs):
        k = id(inp)
        if need and k in uses:
            uses[k] -= 1
            if uses[k] == 0 and k in acc:
                on_leaf(inp, acc[k][1])


def _accumulate(acc, v, g):
    prev = acc.get(id(v))
    acc[id(v)] = (v, g if prev is None else prev[1] + g)
