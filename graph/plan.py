"""Execution plans: what `Session.run` executes, and what the optimiser (compiler/) produces.

A `Plan` is a flat, topologically ordered list of `Step`s over numbered value slots::

    Plan
      steps        list[Step], in execution order
      feed_slots   list[(placeholder Tensor, slot)]   fed values are written here first
      fetch_slots  list[int | None]                   one per flattened fetch; None for a
                                                      fetched node without outputs (an op)
      num_slots    int                                size of the value table
      run(state, feeds) -> list                       feeds: {placeholder Tensor: ndarray}

    Step
      node      the graph Node it executes. Errors are reported with node.name, node.type
                (node.op.name), node.loc, node.grad_of, node.op.infer and node.attrs. A fused
                step may carry a synthetic node: anything with those attributes (op may be None).
      kernel    callable: kernel(*arrays) -> ndarray (one output) or tuple (several);
                kernel(state, *arrays) when `stateful` is true
      inputs    tuple of slots read, in the kernel's argument order
      outputs   tuple of slots written (empty for a node without outputs)
      stateful  True for kernels that touch session state (variables, cond/while bodies,
                print): they receive the session's `RunState` first
      free      slots no longer needed after this step (dropped to release memory)

`node_kernel(node)` gives the (kernel, stateful) pair of any graph node, so an optimiser can build
steps for the nodes it keeps as they are and use its own kernels (e.g. numba-compiled fused
loops, with stateful=False) for the nodes it rewrites. A plan must not overwrite arrays it
has handed back from an earlier run, nor arrays in `state.variables`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .core import GRAPH_OPS, Tensor
from .errors import OpError, node_error, InvalidArgumentError, describe


@dataclass(slots=True)
class Step:
    node: object
    kernel: object
    inputs: tuple
    outputs: tuple
    stateful: bool = False
    free: tuple = ()


@dataclass
class Plan:
    steps: list
    feed_slots: list
    fetch_slots: list
    num_slots: int
    nodes: list = field(default_factory=list)   # the graph nodes this plan covers
    memory: object = None   # the optimiser's MemoryReport (compiler/plan_memory.py)

    _fn: object = field(default=None, repr=False, compare=False)
    _runs: int = field(default=0, repr=False, compare=False)

    def run(self, state, feeds):
        """Run the steps: interpreted on the first run, then as straight-line code generated
        for this plan (graph/planfn.py), which a plan run once never pays for."""
        fn = self._fn
        with np.errstate(all="ignore"):   # NOTE: inf and nan silently, as TF's kernels
            if fn is None:
                self._runs += 1
                if self._runs < 2:
                    return self.interpret(state, feeds)
                from .planfn import straight_line
                fn = self._fn = straight_line(self)
            return fn(state, feeds)

    def refresh(self):
        """Forget the generated code: call after changing `steps` in place."""
        self._fn = None

    def interpret(self, state, feeds):
        """Run the steps one by one (what the generated code does, step by step)."""
        vals = [None] * self.num_slots
        for t, slot in self.feed_slots:
            vals[slot] = feeds[t]
        ndarray = np.ndarray
        for step in self.steps:
            args = [vals[i] for i in step.inputs]
            try:
                out = step.kernel(state, *args) if step.stateful else step.kernel(*args)
            except OpError:
                raise
            except Exception as e:  # noqa: BLE001 - re-raised naming the node and its line
                raise node_error(step.node, args, e) from e
            outs = step.outputs
            if len(outs) == 1:
                vals[outs[0]] = out if type(out) is ndarray else np.asarray(out)
            elif outs:
                for slot, o in zip(outs, out):
                    vals[slot] = o if type(o) is ndarray else np.asarray(o)
            for slot in step.free:
                vals[slot] = None
        return [None if s is None else vals[s] for s in self.fetch_slots]

    def __len__(self):
        return len(self.steps)


def node_kernel(node):
    """(kernel, stateful) for one node: registry ops run their own kernel with their attrs."""
    gop = GRAPH_OPS.get(node.type)
    if gop is not None:
        return gop.make_kernel(node)
    kernel = node.op.kernel
    return (functools.partial(kernel, **node.attrs) if node.attrs else kernel), False


def needed_nodes(fetch_nodes, fed_ids=frozenset()):
    """Nodes the fetches depend on (data and control inputs), in creation (= topological)
    order; a fed placeholder's node is not needed (its value comes from the feed)."""
    seen, stack = {}, list(fetch_nodes)
    while stack:
        n = stack.pop()
        if id(n) in seen or n.type == "placeholder" and id(n.outputs[0]) in fed_ids:
            continue
        seen[id(n)] = n
        for t in n.inputs:
            if id(t) not in fed_ids and id(t.node) not in seen:
                stack.append(t.node)
        stack.extend(c for c in n.control_inputs if id(c) not in seen)
    return sorted(seen.values(), key=lambda n: n.id)


def fetch_nodes(fetches, fed=frozenset()):
    """The nodes whose runs give `fetches`; a fed tensor needs none (its value is the feed)."""
    return [f.node if isinstance(f, Tensor) else f for f in fetches
            if not (isinstance(f, Tensor) and id(f) in fed)]


def build_plan(fetches, feeds=()) -> Plan:
    """The unoptimised plan: every needed node as built, with its own kernel.

    fetches: Tensors and Nodes (one graph); feeds: the placeholder Tensors that will be fed.
    """
    fed = {id(t): t for t in feeds}
    nodes = needed_nodes(fetch_nodes(fetches, fed), frozenset(fed))
    slots: dict[int, int] = {}
    feed_slots = []
    for t in fed.values():
        slots[id(t)] = len(slots)
        feed_slots.append((t, slots[id(t)]))
    steps = []
    for n in nodes:
        if n.type == "placeholder" and "default" not in n.attrs:
            raise InvalidArgumentError(f"You must feed a value for placeholder {describe(n)}: "
                                       f"dtype {n.outputs[0].dtype.name}, shape "
                                       f"{_shape_str(n.outputs[0])}", node=n)
        kernel, stateful = node_kernel(n)
        ins = tuple(slots[id(t)] for t in n.inputs)
        for t in n.outputs:
            slots[id(t)] = len(slots)
        steps.append(Step(n, kernel, ins, tuple(slots[id(t)] for t in n.outputs), stateful))
    fetch_slots = [slots[id(f)] if isinstance(f, Tensor) else None for f in fetches]
    plan_frees(steps, set(fetch_slots))
    return Plan(steps, feed_slots, fetch_slots, len(slots), nodes)


def plan_frees(steps, keep):
    """Set each step's `free`: the slots (not in `keep`) it is the last reader of, and its
    own outputs that no step reads (dropped at once, not held to the end of the run)."""
    last = {}
    for i, s in enumerate(steps):
        for slot in s.inputs:
            last[slot] = i
        for slot in s.outputs:
            last.setdefault(slot, i)
    frees = [[] for _ in steps]
    for slot, i in last.items():
        if slot not in keep:
            frees[i].append(slot)
    for s, f in zip(steps, frees):
        s.free = tuple(f)


# -- a body's outputs as a function (cond branches, while_loop bodies) ----------------------------
class Function:
    """A callable view of a body: named inputs (placeholders) and outputs, run by a plan."""

    def __init__(self, body, inputs, outputs):
        self.body, self.inputs, self.outputs = body, list(inputs), list(outputs)
        self._plan = None

    def __call__(self, state, *arrays):
        if self._plan is None:
            self._plan = build_plan(self.outputs, self.inputs)
        return self._plan.run(state, dict(zip(self.inputs, arrays)))

    def __reduce__(self):
        raise TypeError("graph functions cannot be pickled; save the graph with graph.save()")


def _shape_str(t):
    from dualgrad.ops.core import fmt_shape
    return fmt_shape(t.spec)
