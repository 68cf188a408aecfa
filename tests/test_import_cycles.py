"""Import cycles between the project's modules, in every package, counting imports made
inside functions too (a late import that only dodges a cycle is still a cycle).

A cycle works only while some module happens to be imported first; tests/ops/test_imports.py
keeps ops/ free of them. Elsewhere a cycle that had to stay would be a row of KNOWN_CYCLES,
with its reason (none is left): a new cycle, or a known one that grows, fails here, and so
does a row whose cycle is gone (the table only shrinks). docs/architecture.md ("Import
cycles") says so.
"""
from __future__ import annotations

import sys

from tests.imports import PACKAGES, ROOT, import_graph

KNOWN_CYCLES: dict = {}   # {frozenset of modules: why the cycle is still there}; none left


def import_cycles(root=ROOT, packages=PACKAGES):
    """The strongly connected components (of more than one module) of the import graph."""
    graph = import_graph(root, packages)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_no_new_import_cycle():
    new = [sorted(c) for c in import_cycles() if c not in KNOWN_CYCLES]
    assert not new, f"new or changed import cycles (break them; see KNOWN_CYCLES): {new}"


def test_every_known_cycle_still_exists():
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in import_cycles()]
    assert not gone, f"these cycles are broken: delete their rows from KNOWN_CYCLES: {gone}"


def test_the_finder_finds_a_cycle_through_a_late_import(tmp_path):
    pkg = tmp_path / "eager"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n")
    assert import_cycles(tmp_path, ("eager",)) == [frozenset({"eager.a", "eager.b"})]
