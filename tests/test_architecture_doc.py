"""docs/architecture.md states facts the code can check: which package imports which, and the
order of the optimiser's passes. These tests read them from the page and from the code."""
from __future__ import annotations

import re

from dualgrad.compiler.passes import PASSES
from tests.imports import PACKAGES, ROOT, imports, modules

PAGE = (ROOT / "docs" / "architecture.md").read_text()


def _code_edges():
    """{(package, other package): [(late?, file)]} for every import between packages."""
    mods, edges = modules(), {}
    for name, path in mods.items():
        for dep, late in imports(name, path, mods):
            package, other = name.split(".")[0], dep.split(".")[0]
            if other != package:
                edges.setdefault((package, other), []).append((late, path))
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
