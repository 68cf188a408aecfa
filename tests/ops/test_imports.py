"""ops/ imports: no cycle between its modules, and each module loads on its own imports.

A cycle (`elementwise` needing `shape` needing `elementwise`) works only while
`ops/__init__.py` happens to import the modules in the right order; these tests keep the
modules a DAG, so a helper both need lives below both (ops/core.py, ops/rules.py).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

OPS = Path(__file__).resolve().parents[2] / "ops"
MODULES = sorted(p.stem for p in OPS.glob("*.py") if p.stem != "__init__")


def _imports(path: Path) -> set[str]:
    """The sibling modules a module imports (relative imports, at any depth of the file)."""
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            deps |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith("dualgrad.ops."):
            deps.add(node.module.split(".")[2])
    return deps & set(MODULES)


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph[m]):
            if state.get(d) == "open":
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d, path + [d])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_ops_modules_import_no_cycle():
    graph = {m: _imports(OPS / f"{m}.py") for m in MODULES}
    assert _cycle(graph) is None, f"import cycle in ops/: {' -> '.join(_cycle(graph))}"


def test_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


# NOTE: the package's __init__ is skipped (an empty package object stands in for it), so a
# module that only worked because __init__ had imported something before it fails here.
_ALONE = """
import importlib, importlib.util, sys, types
import dualgrad
spec = importlib.util.find_spec("dualgrad.ops")
pkg = types.ModuleType("dualgrad.ops")
pkg.__path__, pkg.__spec__ = spec.submodule_search_locations, spec
sys.modules["dualgrad.ops"] = pkg
importlib.import_module("dualgrad.ops." + sys.argv[1])
print("ok")
"""


@pytest.mark.parametrize("module", MODULES)
def test_each_ops_module_imports_alone(module):
    proc = subprocess.run([sys.executable, "-c", _ALONE, module], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
