"""Packaging and layering: one import root, and a library that stays out of the user's way.

Each import runs in a fresh interpreter so that what other tests imported does not leak
into ``sys.modules``. The arrows of docs/architecture.md must hold at load time: ``ops``
imports neither engine, ``eager`` imports neither ``graph`` nor ``compiler``, and ``graph``
loads without ``eager`` or ``compiler`` (its one call into ``compiler`` is a late import).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENGINES = ["ops", "eager", "graph", "compiler", "comparisons"]

# subpackage -> subpackages it must not pull in when imported on its own
FORBIDDEN = {
    "ops": ["eager", "graph", "compiler", "comparisons"],
    "eager": ["graph", "compiler", "comparisons"],
    "graph": ["eager", "compiler", "comparisons"],
}


def _python(code: str, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def _loaded_after(statement: str) -> set[str]:
    """Modules loaded (as dotted names) after `statement` in a clean interpreter."""
    proc = _python(f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))")
    assert proc.returncode == 0, f"`{statement}` failed in a fresh interpreter:\n{proc.stderr}"
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name", ENGINES)
def test_each_engine_imports_under_the_root(name):
    assert f"dualgrad.{name}" in _loaded_after(f"from dualgrad import {name}")


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_import_layering(name):
    loaded = _loaded_after(f"from dualgrad import {name}")
    leaked = sorted(m for m in FORBIDDEN[name] if f"dualgrad.{m}" in loaded)
    assert not leaked, f"dualgrad.{name} also imported {leaked} at load time"


def test_import_dualgrad_is_cheap_and_lazy():
    loaded = _loaded_after("import dualgrad; assert dualgrad.__version__")
    assert not {"numba", "jax", "dualgrad.ops", "dualgrad.eager"} & loaded
    loaded = _loaded_after("import dualgrad; dualgrad.graph.Graph")   # attribute access loads it
    assert "dualgrad.graph" in loaded and "numba" not in loaded


def test_version_is_the_projects():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    import dualgrad
    assert dualgrad.__version__ == meta["version"] == "0.2.0"


@pytest.mark.parametrize("name", ENGINES)
def test_a_bare_engine_import_fails_loudly_instead_of_loading_a_second_copy(name):
    proc = _python(f"import {name}")     # cwd is the repository root, where the folders are
    assert proc.returncode != 0
    assert f"from dualgrad import {name}" in proc.stderr


def test_every_subpackage_is_listed_in_pyproject():
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {"dualgrad"}
    for top in ENGINES:
        for d in (REPO / top).rglob("__init__.py"):
            rel = d.parent.relative_to(REPO).as_posix().replace("/", ".")
            if "__pycache__" not in rel:
                on_disk.add(f"dualgrad.{rel}")
    assert set(tool["packages"]) == on_disk
    assert tool["package-dir"] == {"dualgrad": "dualgrad",
                                   **{f"dualgrad.{t}": t for t in ENGINES}}


def test_no_source_file_imports_a_bare_engine():
    bare = re.compile(r"^\s*(?:>>> )?(?:import|from) (ops|eager|graph|compiler|comparisons)\b",
                      re.M)
    hits = []
    for top in ENGINES + ["tests", "dualgrad"]:
        for f in (REPO / top).rglob("*.py"):
            if f != Path(__file__).resolve():     # USER_SCRIPT below imports the user's own
                hits += [f"{f.relative_to(REPO)}: {m.group(0).strip()}"
                         for m in bare.finditer(f.read_text())]
    for f in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        hits += [f"{f.relative_to(REPO)}: {m.group(0).strip()}"
                 for m in bare.finditer(f.read_text())]
    assert not hits, hits


def _foreign_private_imports(path: Path, package: str) -> list[str]:
    """Imports in `path` (under `package`) of an underscore name from another package."""
    import ast
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] == "dualgrad" and len(parts) > 1 and parts[1] != package:
                hits += [f"{path.relative_to(REPO)}:{node.lineno}: from {node.module} import "
                         f"{a.name}" for a in node.names if a.name.startswith("_")
                         and not a.name.startswith("__")]
    return hits


def test_no_module_imports_another_packages_private_names():
    """The owner of a thing gives it a public name (eager.is_grad_enabled, ops.core.tracing,
    Session.variable_values) instead of another package reaching for its underscores."""
    hits = []
    for top in ENGINES:
        for f in (REPO / top).rglob("*.py"):
            hits += _foreign_private_imports(f, top)
    assert not hits, hits


USER_SCRIPT = """
import graph, ops, compiler, eager          # the user's own modules, beside the script
assert graph.MINE and ops.MINE and compiler.MINE and eager.MINE
import numpy as np
from dualgrad import eager as torch, graph as tf, compiler as dc
import dualgrad.eager.nn as nn

model = nn.Linear(3, 2)
fast = dc.compile(model)
x = torch.ones(4, 3)
print("eager", tuple(fast(x).shape))
p = tf.placeholder(tf.float32, (None, 3))
with tf.Session() as s:
    print("graph", s.run(tf.reduce_sum(p * 2.0), {p: np.ones((2, 3))}))
try:
    torch.ones(2, 3) @ torch.ones(4, 5)
except torch.ShapeError as e:
    print("error", e)
"""


def test_a_users_folder_with_graph_ops_compiler_eager_py_breaks_nothing(tmp_path):
    home = tmp_path / "ops"              # a user folder called ops/ is user code too
    home.mkdir()
    for name in ("graph", "ops", "compiler", "eager"):
        (home / f"{name}.py").write_text("MINE = True\n")
    script = home / "train.py"
    script.write_text(USER_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], cwd=home, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "eager (4, 2)" in proc.stdout and "graph 12.0" in proc.stdout
    line = USER_SCRIPT.splitlines().index("    torch.ones(2, 3) @ torch.ones(4, 5)") + 1
    assert f"train.py:{line}" in proc.stdout, proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out),
                           str(REPO)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob("dualgrad-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_installs_one_top_level_name_with_every_source_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"dualgrad"}
    for top in ENGINES:
        for f in (REPO / top).rglob("*.py"):
            if "__pycache__" not in f.parts:
                assert f"dualgrad/{f.relative_to(REPO).as_posix()}" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "dualgrad = dualgrad.comparisons.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


@pytest.mark.slow
def test_a_plain_install_has_no_bare_engine_names_and_the_cli_works(wheel, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target",
                           str(target), str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # NOTE: PYTHONPATH puts the plain install ahead of this checkout's editable finder.
    env = {"PYTHONPATH": str(target)}
    for name in ENGINES:
        p = _python(f"import {name}", cwd=tmp_path, env=env)
        assert p.returncode != 0 and "No module named" in p.stderr, (name, p.stderr)
    p = _python("""
        import sys, dualgrad
        from dualgrad.comparisons.cli import main
        assert dualgrad.__file__.startswith(%r), dualgrad.__file__
        sys.exit(main(["--help"]))
    """ % str(target), cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert "tour" in p.stdout and "train" in p.stdout
    p = _python("""
        from dualgrad import eager
        print(float((eager.ones(2, 3) * 2).sum()))
    """, cwd=tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "12.0", p.stderr


def test_eager_tensor_stays_the_function_after_every_submodule_is_imported():
    # NOTE: importing a submodule sets it as an attribute of its package; a module named
    # eager/tensor.py would replace the function eager.tensor(...) the moment it is imported
    import importlib
    import pkgutil
    import types

    from dualgrad import eager as eager_pkg
    for info in pkgutil.walk_packages(eager_pkg.__path__, "dualgrad.eager."):
        if "distributed" not in info.name:   # NOTE: needs mpi4py, an optional extra
            importlib.import_module(info.name)
    assert isinstance(eager_pkg.tensor, types.FunctionType)
    assert eager_pkg.tensor([1.0, 2.0]).shape == (2,)
