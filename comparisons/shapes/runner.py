"""Run the shape-bug catalogue in every mode, each file in its own process, and judge the errors.

    python -m dualgrad.comparisons.shapes [BUG ...]        # the same as `dualgrad shapes`

The catalogue is the files in `bugs/`: `<bug>_eager.py` and `<bug>_graph.py`, each a small
training script with its bug on the line marked `# BUG`. Compiled mode runs the eager file
with its `loss_fn` wrapped in `compiler.compile` (see bugs/__init__.py). Every (bug, mode)
runs `python -m dualgrad.comparisons.shapes.harness` in a subprocess with a timeout, so one crash or hang does not end the run; the child
reports one JSON line (see harness.py), never a pickle.

>>> from dualgrad.comparisons.shapes import runner
>>> [b.name for b in runner.catalogue()][:2]
['attn_heads', 'attn_mask']
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .harness import DIGITS_ENV, MARK, MODES, SOURCE, bug_line, save_digits

BUGS_DIR = Path(__file__).resolve().parent / "bugs"
ROOT = BUGS_DIR.parents[2]
TIMEOUT = 120.0


@dataclass
class Bug:
    name: str
    title: str
    files: dict = field(default_factory=dict)     # mode -> Path

    def line(self, mode) -> int | None:
        return bug_line(self.files[mode]) if mode in self.files else None


def _title(path: Path) -> str:
    import ast
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.strip().splitlines()[0].rstrip(".") if doc.strip() else path.stem


def catalogue() -> list[Bug]:
    """Every bug in `bugs/`, by name, with the file each mode runs (compiled: the eager one)."""
    bugs: dict[str, Bug] = {}
    for path in sorted(BUGS_DIR.glob("*_*.py")):
        for mode in MODES:
            if path.stem.endswith(f"_{SOURCE[mode]}"):
                name = path.stem[:-len(SOURCE[mode]) - 1]
                bug = bugs.setdefault(name, Bug(name, ""))
                bug.files[mode] = path
                if mode == "eager" or not bug.title:
                    bug.title = _title(path)
    return [bugs[k] for k in sorted(bugs)]


def find(names) -> list[Bug]:
    """The catalogue entries called `names` (all of them when names is empty)."""
    bugs = catalogue()
    if not names:
        return bugs
    by_name = {b.name: b for b in bugs}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise KeyError(f"no bug called {', '.join(unknown)} in the catalogue; known: "
                       f"{', '.join(by_name)}")
    return [by_name[n] for n in names]


# -- running -------------------------------------------------------------------------------------
def run_one(bug: Bug, mode: str, timeout=TIMEOUT, env=None) -> dict:
    """Run one bug file in a fresh Python and return its record (see harness.run_file)."""
    base = {"bug": bug.name, "mode": mode, "title": bug.title}
    path = bug.files.get(mode)
    if path is None:
        return {**base, "status": "missing", "phase": "n/a",
                "reason": f"no {bug.name}_{SOURCE[mode]}.py in the catalogue"}
    env = {**os.environ, **(env or {})}
    cmd = [sys.executable, "-m", "dualgrad.comparisons.shapes.harness", str(path), mode]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**base, "status": "timeout", "phase": "timeout", "file": str(path),
                "bug_line": bug.line(mode), "seconds": time.perf_counter() - t0,
                "reason": f"no result within {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return {**base, **json.loads(line[len(MARK):])}
    return {**base, "status": "crashed", "phase": "crashed", "file": str(path),
            "bug_line": bug.line(mode), "returncode": proc.returncode,
            "reason": (proc.stderr.strip().splitlines() or ["no output"])[-1],
            "stderr": proc.stderr[-4000:]}


def run(bugs=None, modes=MODES, jobs=None, timeout=TIMEOUT, progress=None) -> list[dict]:
    """Records for every (bug, mode), run `jobs` at a time (default: one per CPU)."""
    bugs = catalogue() if bugs is None else bugs
    todo = [(b, m) for b in bugs for m in modes]
    jobs = jobs or max(1, min(len(todo), os.cpu_count() or 1))

    with tempfile.TemporaryDirectory(prefix="dualgrad-shapes-") as tmp:
        # NOTE: the digits are loaded once here, not in every child (see harness.preload)
        shared = os.path.join(tmp, "digits.npz")
        save_digits(shared)

        def one(item):
            rec = judge(run_one(*item, timeout=timeout, env={DIGITS_ENV: shared}))
            if progress:
                progress(rec)
            return rec
        with ThreadPoolExecutor(jobs) as pool:
            return list(pool.map(one, todo))


# -- judging ------------------------------------------------------------------------------------
def judge(rec: dict) -> dict:
    """Add `line_verdict` and `quality` to a record.

    line_verdict: "bug line" (the message names the # BUG line), "other line N" (it names
    a different line of the user's file), "framework" (it names no user line, or only
    framework files), or "-" when nothing was raised.
    quality: "good" (names the op, the shapes and the bug line), "downstream" (a clear
    error, but at a later line the bug flowed into), "framework failure" (a raw NumPy or
    internal error, no op or shapes, or no user line), "silent" or "-".
    """
    if rec.get("status") == "unexplored":   # check mode: a branch it could not explore
        rec["line_verdict"] = "bug line" if rec["msg_points_to_bug"] else \
            f"other line {rec['msg_line']}"
        rec["quality"] = "not explored"
        return rec
    if rec.get("status") != "raised":
        rec["line_verdict"] = "-"
        rec["quality"] = "silent" if rec.get("status") == "silent" else "-"
        return rec
    if rec["msg_points_to_bug"]:
        verdict = "bug line"
    elif rec.get("msg_line") is not None:
        verdict = f"other line {rec['msg_line']}"
    else:
        verdict = "framework"
    clear = rec["names_op"] and rec["names_shapes"]
    rec["line_verdict"] = verdict
    rec["quality"] = ("good" if clear and verdict == "bug line" else
                      "downstream" if clear and verdict != "framework" else
                      "framework failure")
    return rec

