"""The optimiser's view of a graph: a `Program` of `INode`s with concrete shapes.

`from_graph` takes the nodes the fetches need (with the actual feed shapes, so every op's
shape rule is re-run with concrete dims), passes rewrite the program, and `to_plan` turns it
into a `graph.Plan` the Session executes. An IR node's `tag` says what it is:

- "op":    a registry primitive (pure): kernel + attrs, rewritable by every pass
- "const": a value known at optimisation time (graph constants, folded results)
- "feed":  a fed placeholder
- "graph": anything else (variables, assign, print, cond, while, random…): kept as built
- "fused": a group of elementwise ops and reductions compiled into one numba loop
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from dualgrad.ops.core import quiet_broadcast
from dualgrad import ops
from dualgrad.graph.plan import Plan, Step, build_plan, fetch_nodes, needed_nodes, node_kernel, plan_frees
from dualgrad.graph.core import Tensor as GTensor
from dualgrad.graph.variables import adopting_assign_kernel

from .plan_memory import adopts


class INode:
    __slots__ = ("tag", "op", "inputs", "attrs", "specs", "origin", "value", "controls",
                 "fused", "members", "id")

    def __init__(self, tag, op=None, inputs=(), attrs=None, specs=(), origin=None,
                 value=None, controls=()):
        self.tag, self.op, self.inputs = tag, op, list(inputs)
        self.attrs = attrs or {}
        self.specs, self.origin, self.value = list(specs), origin, value
        self.controls = list(controls)
        self.fused = None      # the FusedKernel of a "fused" node
        self.members = ()      # the INodes a fused node replaced (for the report/fallback)
        self.id = 0

    @property
    def name(self):
        return self.op.name if self.op is not None else self.tag

    @property
    def spec(self):
        return self.specs[0]

    def pure(self):
        return self.tag == "op" and not self.op.stateful and not self.controls

    def may_alias(self):
        return self.tag == "op" and self.op.may_alias

    def __repr__(self):
        return f"<{self.tag} {self.name} #{self.id}>"


def known(spec) -> bool:
    return None not in spec.shape


@dataclass
class Program:
    nodes: list            # INodes in topological order
    fetches: list          # (INode, index) for a fetched tensor, (INode, None) for a node
    feeds: list            # [(placeholder graph Tensor, INode)]
    memory_budget: object = None   # bytes (int) or a fraction of the peak (float): remat
    memory_target: tuple = (None, None)   # remat's (budget in bytes, peak without one)
    recomputed: int = 0                   # nodes remat added

    def users(self):
        """id(INode) -> list of (user INode, input position)."""
        out = {id(n): [] for n in self.nodes}
        for n in self.nodes:
            for k, (src, _) in enumerate(n.inputs):
                out[id(src)].append((n, k))
        return out

    def replace_uses(self, old, new):
        """Every use of value `old` (an (INode, index) pair) now reads `new`."""
        for n in self.nodes:
            n.inputs = [new if (src is old[0] and i == old[1]) else (src, i)
                        for src, i in n.inputs]
        self.fetches = [new if (f[0] is old[0] and f[1] == old[1]) else f for f in self.fetches]

    def count(self, tags=("op", "const", "fused", "graph")):
        return sum(1 for n in self.nodes if n.tag in tags)


class ReinferError(Exception):
    """A shape rule failed with the concrete feed shapes: run unoptimised, let it fail there."""


def from_graph(fetches, feed_specs) -> Program:
    """Build the Program for `fetches` (graph Tensors / Nodes) with fed placeholders' specs."""
    fed = {id(t): (t, s) for t, s in feed_specs.items()}
    gnodes = needed_nodes(fetch_nodes(fetches, fed), frozenset(fed))
    value = {}          # id(graph Tensor) -> (INode, index)
    by_node = {}        # id(graph Node) -> INode
    feeds = []
    for t, s in fed.values():
        n = INode("feed", specs=[s], origin=t.node)
        feeds.append((t, n))
        value[id(t)] = (n, 0)
    nodes = [n for _, n in feeds]
    for g in gnodes:
        if g.type == "placeholder":
            build_plan(fetches, [t for t, _ in fed.values()])   # raises the unfed error
        ins = [value[id(t)] for t in g.inputs]
        controls = [by_node[id(c)] for c in g.control_inputs if id(c) in by_node]
        n = _inode_for(g, ins, controls)
        by_node[id(g)] = n
        nodes.append(n)
        for i, t in enumerate(g.outputs):
            value[id(t)] = (n, i)
    fetch_refs = [value[id(f)] if isinstance(f, GTensor) else (by_node[id(f)], None)
                  for f in fetches]
    return Program(nodes, fetch_refs, feeds)


def _inode_for(g, ins, controls):
    if g.type == "const":
        v = g.attrs["value"]
        return INode("const", specs=[g.outputs[0].spec], origin=g, value=v, controls=controls)
    op = ops.REGISTRY.get(g.type)
    if op is not None and g.op is op and not op.stateful:
        specs_in = [src.specs[i] for src, i in ins]
        try:
            with quiet_broadcast():   # NOTE: warned when the graph was built
                spec = op.infer(*specs_in, **g.attrs)
        except ops.ShapeError as e:
            raise ReinferError(str(e)) from e
        return INode("op", op, ins, dict(g.attrs), [spec], origin=g, controls=controls)
    return INode("graph", g.op, ins, dict(g.attrs), [t.spec for t in g.outputs], origin=g,
                 controls=controls)


# -- lowering ---------------------------------------------------------------------------------
class SyntheticNode:
    """What a rewritten step reports in errors: the graph node it came from, renamed."""

    def __init__(self, name, op, attrs, origin, label=None):
        self.name, self.op, self.attrs = name, op, attrs
        self.loc = getattr(origin, "loc", None)
        self.grad_of = getattr(origin, "grad_of", None)
        self._type = label or (op.name if op is not None else "fused")

    @property
    def type(self):
        return self._type


def _origin_unchanged(n):
    g = n.origin
    return (g is not None and g.op is n.op and g.attrs == n.attrs
            and len(g.inputs) == len(n.inputs))


def to_plan(prog: Program) -> Plan:
    """A graph.Plan executing the program: one Step per node, slots freed after last use."""
    slots = {}
    feed_slots = []
    for t, n in prog.feeds:
        slots[(id(n), 0)] = len(slots)
        feed_slots.append((t, slots[(id(n), 0)]))
    steps = []
    for n in prog.nodes:
        if n.tag == "feed":
            continue
        node, kernel, stateful = _plan_step(n)
        ins = tuple(slots[(id(src), i)] for src, i in n.inputs)
        outs = []
        for i in range(len(n.specs)):
            slots[(id(n), i)] = len(slots)
            outs.append(slots[(id(n), i)])
        steps.append(Step(node, kernel, ins, tuple(outs), stateful))
    fetch_slots = [None if i is None else slots[(id(n), i)] for n, i in prog.fetches]
    plan_frees(steps, set(fetch_slots))
    gnodes = [n.origin for n in prog.nodes if n.origin is not None]
    return Plan(steps, feed_slots, fetch_slots, len(slots), gnodes)


def _constant(v):
    """The kernel of a constant; `constant_value` lets generated plans bind the value."""
    def kernel():
        return v
    kernel.constant_value = v
    return kernel


def _plan_step(n):
    if n.tag == "graph":
        kernel, stateful = node_kernel(n.origin)
        if adopts(n):
            kernel = adopting_assign_kernel(n.origin)
        return n.origin, kernel, stateful
    if n.tag == "const":
        v = n.value
        if v.flags.writeable:   # NOTE: a folded value: Session.run copies it only if read-only
            v = v.copy()
            v.flags.writeable = False
        name = n.origin.name if n.origin is not None and n.origin.type == "const" else \
            f"folded/{n.origin.name if n.origin is not None else 'const'}"
        return SyntheticNode(name, None, {}, n.origin, "const"), _constant(v), False
    if n.tag == "fused":
        return n.fused.node, n.fused, False
    if _origin_unchanged(n):
        kernel, _ = node_kernel(n.origin)
        return n.origin, kernel, False
    kernel = functools.partial(n.op.kernel, **n.attrs) if n.attrs else n.op.kernel
    name = n.origin.name if n.origin is not None else n.op.name
    return SyntheticNode(name, n.op, n.attrs, n.origin), kernel, False


def topo_sort(prog: Program):
    """Re-sort nodes after rewrites (inputs and controls before users); drop nothing."""
    order, state = [], {}
    for root in prog.nodes:
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                if state.get(id(n)) != 2:
                    state[id(n)] = 2
                    order.append(n)
                continue
            if state.get(id(n)):
                continue
            state[id(n)] = 1
            stack.append((n, True))
            for src, _ in reversed(n.inputs):
                if not state.get(id(src)):
                    stack.append((src, False))
            for c in n.controls:
                if not state.get(id(c)):
                    stack.append((c, False))
    prog.nodes = order
    for k, n in enumerate(order):
        n.id = k


def const_node(value, origin=None) -> INode:
    value = np.asarray(value)
    return INode("const", specs=[ops.Spec(value.shape, value.dtype)], origin=origin, value=value)
