"""torch.fx.subgraph_rewriter: replace_pattern(gm, pattern, replacement) finds every
non-overlapping match of pattern's graph in gm's graph and puts replacement's graph in its
place.

>>> from dualgrad import eager
>>> from dualgrad.eager import fx
>>> gm = fx.symbolic_trace(lambda x: eager.relu(eager.neg(x)) + 1)
>>> def pattern(a):
...     return eager.relu(eager.neg(a))
>>> def replacement(a):
...     return eager.clamp(-a, min=0.0)
>>> len(fx.replace_pattern(gm, pattern, replacement))
1
>>> [n.name for n in gm.graph.nodes]
['x', 'neg_1', 'clamp', 'add', 'output']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..nn.module import Module
from .graph import Graph
from .graph_module import GraphModule, _copy_attr
from .node import Node


@dataclass
class Match:
    """One place the pattern matched: `anchor`, the pattern's node the match was found from
    (the one its output reads), and `nodes_map`, pattern node -> matched node."""
    anchor: Node
    nodes_map: dict[Node, Node] = field(default_factory=dict)


def _graph_of(p) -> Graph:
    if isinstance(p, GraphModule):
        return p.graph
    if isinstance(p, Graph):
        return p
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(p).graph


def _same_target(a: Node, b: Node) -> bool:
    if a.op != b.op:
        return False
    if a.op == "get_attr":
        return True   # NOTE: the pattern's attribute stands for any attribute, as in torch
    return a.target == b.target


class _Matcher:
    def __init__(self, pattern: Graph):
        self.pattern = pattern
        returned = pattern.output_node().args[0]
        if not isinstance(returned, Node) or returned.op == "placeholder":
            raise NotImplementedError("replace_pattern: the pattern must return one value "
                                      "computed from its inputs; patterns returning several "
                                      "values (or an input) are not supported by dualgrad")
        self.outputs = [returned]
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]

    def match(self, anchor: Node) -> Match | None:
        m = Match(self.outputs[0])
        if not self._node(self.outputs[0], anchor, m.nodes_map):
            return None
        inner = [p for p in m.nodes_map if p.op not in ("placeholder", "output")]
        for p in inner:   # NOTE: a matched node read outside the match cannot be removed
            g = m.nodes_map[p]
            if p is not self.outputs[0] and any(u not in m.nodes_map.values() for u in g.users):
                return None
        return m

    def _node(self, p: Node, g: Node, seen: dict) -> bool:
        if p in seen:
            return seen[p] is g
        if p.op == "placeholder":
            if g in seen.values():
                return False
            seen[p] = g
            return True
        if not _same_target(p, g) or len(p.args) != len(g.args) \
                or p.kwargs.keys() != g.kwargs.keys():
            return False
        trial = {**seen, p: g}   # NOTE: committed only if every argument matches
        if all(self._arg(a, b, trial) for a, b in zip(p.args, g.args)) and \
                all(self._arg(p.kwargs[k], g.kwargs[k], trial) for k in p.kwargs):
            seen.update(trial)
            return True
        return False

    def _arg(self, a, b, seen) -> bool:
        if isinstance(a, Node):
            return isinstance(b, Node) and self._node(a, b, seen)
        if isinstance(a, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and \
                all(self._arg(x, y, seen) for x, y in zip(a, b))
        return not isinstance(b, Node) and type(a) is type(b) and a == b


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule,
                    replacement: Callable | GraphModule) -> list[Match]:
    """Rewrite gm in place: each match of pattern (a function or GraphModule, traced) becomes
    a copy of replacement, fed the values the match's placeholders stood for; gm is
    recompiled. Returns the matches, in graph order."""
    pattern_graph, repl = _graph_of(pattern), _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    matches, taken = [], set()
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        m = matcher.match(n)
        if m is None:
            continue
        inner = {g for p, g in m.nodes_map.items() if p.op != "placeholder"}
        if inner & taken:
            continue
        taken |= inner
        matches.append(m)
    repl_placeholders = [n for n in repl.nodes if n.op == "placeholder"]
    for m in matches:
        inputs = [m.nodes_map[p] for p in matcher.placeholders]
        if len(inputs) != len(repl_placeholders):
            raise ValueError(f"replace_pattern: the pattern takes {len(inputs)} inputs but the "
                             f"replacement takes {len(repl_placeholders)}")
        anchor = m.nodes_map[m.anchor]
        with gm.graph.inserting_before(anchor):
            out = gm.graph.graph_copy(repl, dict(zip(repl_placeholders, inputs)))
        if isinstance(replacement, Module):
            for n in repl.nodes:
                if n.op in ("call_module", "get_attr"):
                    _copy_attr(replacement, gm, n.target)
        anchor.replace_all_uses_with(out)
        for p in reversed(list(pattern_graph.nodes)):
            g = m.nodes_map.get(p)
            if g is not None and p.op != "placeholder" and not g.users:
                gm.graph.erase_node(g)
    gm.recompile()
    return matches
