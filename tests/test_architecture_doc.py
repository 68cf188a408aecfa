"""docs/architecture.md states facts the code can check: which package imports which, and the
order of the optimiser's passes. These tests read them from the page and from the code."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from dualgrad.compiler.passes import PASSES

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "architecture.md").read_text()
PACKAGES = ("ops", "eager", "graph", "compiler", "comparisons")


def _imported_packages(path: Path, package: str):
    """(other package, is the import inside a function?) for every import in one file."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    depth = len(path.relative_to(ROOT / package).parts)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom) and node.level > depth:   # from .. import graph
            base = node.module.split(".")[0] if node.module else None
            names = [f"dualgrad.{base}"] if base else [f"dualgrad.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "dualgrad" and len(parts) > 1 and parts[1] in PACKAGES \
                    and parts[1] != package:
                yield parts[1], id(node) not in top, path


def _code_edges():
    edges = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for other, late, where in _imported_packages(path, package):
                edges.setdefault((package, other), []).append((late, where))
    return edges


def _page_table():
    """{package: (imports, {late import: the one file allowed})} from the layers table."""
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", PAGE, re.M)
    table = {}
    for package, cell in rows:
        if package not in PACKAGES:
            continue
        late = dict(re.findall(r"`(\w+)` late, from `([\w/.]+)` only", cell))
        eager_cell = re.sub(r"and `\w+` late, from `[\w/.]+` only", "", cell)
        table[package] = (set(re.findall(r"`(\w+)`", eager_cell)), late)
    return table


def test_the_layers_table_lists_every_package():
    assert set(_page_table()) == set(PACKAGES)


def test_every_import_between_packages_is_in_the_layers_table():
    table, wrong = _page_table(), []
    for (package, other), uses in _code_edges().items():
        imports, late = table[package]
        if other in imports:
            continue
        allowed = late.get(other)
        for is_late, where in uses:
            rel = where.relative_to(ROOT).as_posix()
            if not (is_late and rel == allowed):
                wrong.append(f"{rel} imports {other}")
    assert not wrong, "docs/architecture.md's layers table does not allow: " + "; ".join(wrong)


def test_every_arrow_in_the_layers_table_is_used():
    edges = _code_edges()
    for package, (imports, late) in _page_table().items():
        for other in imports | set(late):
            assert (package, other) in edges, f"the page says {package} imports {other}; it does not"


def test_the_page_lists_the_passes_in_the_order_they_run():
    listed = re.search(r"the passes in `passes/`, in their order: ([\w, ]+)\)", PAGE).group(1)
    assert [p.strip() for p in listed.split(",")] == [p.NAME for p in PASSES]
