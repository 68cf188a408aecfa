"""The project's import graph read from its source, for the tests of layering and cycles.

A module is named by its dotted path below the import root (`eager.core`, `ops`); imports
are resolved whether absolute (`dualgrad.ops.core`) or relative (`from .. import ops`).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ops", "eager", "graph", "compiler", "comparisons")


def modules(root=ROOT, packages=PACKAGES) -> dict:
    """{dotted module name: path} for every source file of the packages."""
    mods = {}
    for package in packages:
        for path in (Path(root) / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def imports(name, path, mods):
    """(imported project module, made inside a function or block?) for each import in a file."""
    tree = ast.parse(Path(path).read_text())
    top = set(map(id, tree.body))
    is_pkg = Path(path).name == "__init__.py"
    for node in ast.walk(tree):
        found = set()
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".")
                base = parts[: len(parts) - (node.level - (1 if is_pkg else 0))]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = (node.module or "").removeprefix("dualgrad.")
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                found.add(full if full in mods else module)
        elif isinstance(node, ast.Import):
            found = {a.name.removeprefix("dualgrad.") for a in node.names}
        for dep in found:
            if dep in mods and dep != name:
                yield dep, id(node) not in top


def import_graph(root=ROOT, packages=PACKAGES) -> dict:
    """{module: set of the project modules it imports, at any depth of the file}."""
    mods = modules(root, packages)
    return {m: {d for d, _ in imports(m, p, mods)} for m, p in mods.items()}
