"""Pruning: drop every node the fetches do not need (through data and control inputs)."""
from __future__ import annotations

NAME = "prune"


def live_nodes(prog):
    seen, stack = set(), [n for n, _ in prog.fetches]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.extend(src for src, _ in n.inputs)
        stack.extend(n.controls)
    return seen


def dead_code(prog) -> int:
    """Remove unreachable nodes (fed placeholders stay: the plan writes feeds first)."""
    live = live_nodes(prog)
    before = len(prog.nodes)
    prog.nodes = [n for n in prog.nodes if id(n) in live or n.tag == "feed"]
    return before - len(prog.nodes)


def run(prog):
    return {"removed": dead_code(prog)}
