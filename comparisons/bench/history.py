"""The machine-readable history of `dualgrad bench` runs (docs/benchmarks-history.json).

docs/benchmarks.md shows the latest run; every earlier one lives here as one small record:
when, at which commit, on what machine and settings, and each workload's median and fastest
repeat per column (ms per step), with the growth under `--load` where measured.

    dualgrad bench all --load --json bench.json --history docs/benchmarks-history.json
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

FIELDS = ("median_ms", "min_ms", "load_growth")


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10, cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def record(run: dict, commit: str | None = None, note: str = "") -> dict:
    """One history record from a run's JSON (what `--json` writes)."""
    workloads = {}
    for w in run["workloads"]:
        workloads[w["name"]] = {
            col: {k: cell[k] for k in FIELDS if cell.get(k) is not None}
            for col, cell in w["columns"].items() if cell.get("status") == "ok"}
    machine = run.get("machine", {})
    return {"date": run.get("date"), "commit": commit or run.get("commit") or _commit(),
            "quick": run.get("quick"), "settings": run.get("settings", {}),
            "machine": {k: machine.get(k) for k in ("cpu", "cores", "numpy", "numba", "jax",
                                                     "torch", "blas_kernels")},
            "note": note, "workloads": workloads}


def append(path, rec: dict) -> None:
    """Add `rec` to the history file at `path` (created if missing), written atomically."""
    path = Path(path)
    runs = json.loads(path.read_text()) if path.exists() else []
    if not isinstance(runs, list):
        raise ValueError(f"{path}: a benchmark history is a JSON list of runs")
    runs.append(rec)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(runs, indent=1) + "\n")
    os.replace(tmp, path)
