"""ops/ imports: no cycle between its modules, and each module loads on its own imports.

A cycle (`elementwise` needing `shape` needing `elementwise`) works only while
`ops/__init__.py` happens to import the modules in the right order; these tests keep the
modules a DAG, so a helper both need lives below both (ops/core.py, ops/rules.py).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_import_cycles import import_cycles

OPS = Path(__file__).resolve().parents[2] / "ops"
MODULES = sorted(p.stem for p in OPS.glob("*.py") if p.stem != "__init__")


def test_ops_modules_import_no_cycle():
    cycles = import_cycles(packages=("ops",))
    assert not cycles, f"import cycle in ops/: {[sorted(c) for c in cycles]}"


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
