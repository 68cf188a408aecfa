"""Packaging and layering checks.

The five top-level packages must import, and the import arrows in
DESIGN.md must hold at load time: ``ops`` imports neither engine, ``eager``
imports neither ``graph`` nor ``compiler``, and ``graph`` loads without
``eager`` or ``compiler`` (its one call into ``compiler`` is a late import).

Each import runs in a fresh subprocess so that what other tests imported
does not leak into ``sys.modules``.

A package whose ``__init__.py`` does not exist yet is skipped (it has not
landed); one that exists but fails to import is a failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ["ops", "eager", "graph", "compiler", "comparisons"]

# package -> top-level packages it must not pull in when imported on its own
FORBIDDEN = {
    "ops": ["eager", "graph", "compiler", "comparisons"],
    "eager": ["graph", "compiler", "comparisons"],
    "graph": ["eager", "compiler", "comparisons"],
}


def _require_landed(name: str) -> None:
    if not (REPO / name / "__init__.py").is_file():
        pytest.skip(f"{name}/__init__.py does not exist yet: package {name!r} has not landed")


def _import_in_subprocess(name: str) -> list[str]:
    """Import `name` in a clean interpreter; return the top-level modules loaded."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({name!r})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        pytest.fail(f"`import {name}` failed in a fresh interpreter:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", PACKAGES)
def test_package_imports(name: str) -> None:
    _require_landed(name)
    loaded = _import_in_subprocess(name)
    assert name in loaded


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_import_layering(name: str) -> None:
    _require_landed(name)
    loaded = set(_import_in_subprocess(name))
    leaked = sorted(loaded & set(FORBIDDEN[name]))
    assert not leaked, (
        f"`import {name}` also imported {leaked}; DESIGN.md forbids {name} -> "
        f"{', '.join(FORBIDDEN[name])} imports at load time"
    )
