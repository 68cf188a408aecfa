"""Run the workloads column by column and collect every figure into one plain dict.

For each workload every column is built (build time), called once (first-call time: trace,
optimise, compile, JIT), then all columns that run are timed side by side
(`timing.time_group`). Figures are per unit: per training step, or per op for dispatch.
"""
from __future__ import annotations

import datetime
import os
import platform
import time

from ..threads import blas_core, blas_limit
from .isolate import TORCH_COLUMNS, busy_core, torch_cells
from .timing import build_cell, fill_stats, one_line, time_group, timed
from .workloads import COLUMNS, DEFAULT_COLUMNS, MODEL_NAMES, Skip, workloads

SETTINGS = {False: {"repeat": 8, "target_s": 0.05, "passes": 2},
            True: {"repeat": 3, "target_s": 0.005, "passes": 1}}


def _report_dict(report):
    if report is None:
        return None
    passes = []
    for p in getattr(report, "passes", []) or []:
        get = p.get if isinstance(p, dict) else (lambda k, d=None, p=p: getattr(p, k, d))
        summary = getattr(p, "summary", None)
        passes.append({"name": get("name", "?"), "nodes_before": get("nodes_before"),
                       "nodes_after": get("nodes_after"),
                       "details": summary() if callable(summary) else str(get("details", ""))})
    return {"nodes_before": getattr(report, "nodes_before", None),
            "nodes_after": getattr(report, "nodes_after", None),
            "seconds": getattr(report, "seconds", None), "passes": passes,
            "text": str(report)}


def run_workload(w, columns, settings, progress=None) -> dict:
    cells, fns = {}, {}
    for col in COLUMNS:
        if col not in columns:
            cells[col] = {"status": "skipped", "note": "not selected"}
            continue
        if col in TORCH_COLUMNS:
            continue     # NOTE: timed in a process of their own (isolate.py), merged in later
        if progress:
            progress(f"{w.name}: building {col}")
        fn, cells[col] = build_cell(w, col)
        if fn is not None:
            fns[col] = fn
    if progress:
        progress(f"{w.name}: timing {', '.join(fns) or 'nothing'}")
    try:
        stats = time_group(fns, settings["repeat"], settings["target_s"], settings["passes"])
    except Exception as e:  # noqa: BLE001 - a step that fails on a later call
        stats = {}
        for col in fns:
            cells[col].update(status="error", note=one_line(e))
    for col, st in stats.items():
        fill_stats(cells[col], st, w.unit_div)
    return {"name": w.name, "kind": w.kind, "description": w.description, "size": w.size,
            "unit": w.unit, "columns": cells,
            "optimizer_report": _report_dict(w.optimizer_report())}


def _speedups(res):
    for w in res:
        base = w["columns"].get("eager", {}).get("median_ms")
        for cell in w["columns"].values():
            if base and cell.get("median_ms"):
                cell["speedup_vs_eager"] = base / cell["median_ms"]


def _table(names, quick, columns, settings, progress):
    """Every workload in this process, then the PyTorch columns in a child process."""
    results = [run_workload(w, columns, settings, progress) for w in workloads(names, quick)]
    if progress and any(c in columns for c in TORCH_COLUMNS):
        progress("PyTorch columns (own process)")
    for w in results:
        w["columns"].update(torch_cells([w["name"]], quick, columns, settings).get(w["name"], {}))
    _speedups(results)
    return results


def _arithmetic(results, settings):
    """FLOPs per step of each model and the fraction of the sgemm rate each column reaches."""
    from .arith import model_flops, sgemm_gflops
    settings["sgemm_gflops_1thread"] = rate = sgemm_gflops()
    for w in results:
        if w["name"] not in MODEL_NAMES:
            continue
        try:
            w["flops"] = flops = model_flops(w["name"])
        except Exception as e:  # noqa: BLE001 - a missing jax leaves the figure out
            w["flops_note"] = one_line(e)
            continue
        for cell in w["columns"].values():
            if flops and cell.get("median_ms"):
                cell["sgemm_fraction"] = flops / (cell["median_ms"] * 1e-3 * rate * 1e9)


def _profiles(results, names, quick):
    from .profile import profile_step
    for w in workloads(names, quick):
        if w.kind != "model":
            continue
        out = next(r for r in results if r["name"] == w.name)
        out["profile"] = {}
        for col in ("eager", "graph", "graph_opt", "compiled"):
            try:
                out["profile"][col] = profile_step(w, col)
            except Exception as e:  # noqa: BLE001 - a column that cannot run has no profile
                out["profile"][col] = {"error": one_line(e)}


def _add_loaded(results, loaded):
    """Each cell gets the loaded run's median and the growth factor (loaded / unloaded)."""
    for w, lw in zip(results, loaded):
        for col, cell in w["columns"].items():
            lc = lw["columns"].get(col, {})
            if cell.get("median_ms") and lc.get("median_ms"):
                cell["loaded_median_ms"] = lc["median_ms"]
                cell["load_growth"] = lc["median_ms"] / cell["median_ms"]


def run_bench(names, quick=False, columns=DEFAULT_COLUMNS, progress=None, blas_threads=1,
              load=False, profile=False) -> dict:
    """Every figure of one run, as a JSON-ready dict (see docs/benchmarks.md).

    blas_threads: NumPy's BLAS threads during the run (0: the library's default). One by
    default: on a 2-core machine a second OpenBLAS thread fights jax's, torch's and numba's
    thread pools (and other processes) for the cores, and these workloads' matrices are
    small enough that one thread is as fast — see docs/benchmarks.md.
    load: after the table, run it again with a process spinning on the last core, and give
    each cell its loaded median and growth factor. profile: split each model step's time
    (profile.py) per dualgrad column.
    """
    from dualgrad.compiler.memory import pin_malloc
    # NOTE: every column runs with glibc's thresholds pinned (see docs/benchmarks.md, Method), so a
    # large temporary is recycled rather than page-faulted in afresh, whoever allocates it.
    settings = {**SETTINGS[bool(quick)], "blas_threads": blas_threads or "default",
                "malloc": pin_malloc()}
    load_before = _loadavg()
    t0 = time.perf_counter()
    machine = machine_description()
    with blas_limit(blas_threads):
        results = _table(names, quick, columns, settings, progress)
        machine["loadavg_after"] = _loadavg()
        _arithmetic(results, settings)
        if profile:
            _profiles(results, names, quick)
        if load:
            machine["loadavg_before_loaded"] = _loadavg()
            with busy_core() as (core, _pid):
                settings["busy_core"] = core
                loaded = _table(names, quick, columns, settings, progress)
            machine["loadavg_after_loaded"] = _loadavg()
            _add_loaded(results, loaded)
    machine["loadavg_before"] = load_before
    return {"dualgrad_bench": 1,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "quick": bool(quick), "settings": settings, "columns": list(COLUMNS),
            "machine": machine, "workloads": results, "total_s": time.perf_counter() - t0}


def _loadavg():
    """1-minute load average: on a 2-core machine, above ~2 means others share the cores."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


# -- the machine ---------------------------------------------------------------------------------
def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2 ** 20, 1)
    except OSError:
        pass
    return None


def _version(mod):
    try:
        m = __import__(mod)
    except Exception:  # noqa: BLE001 - absent or broken: reported as not installed
        return None
    return getattr(m, "__version__", "?")


def machine_description() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "usable_cores": usable,
            "memory_gib": _mem_gib(), "os": platform.platform(),
            "python": platform.python_version(),
            "numpy": _version("numpy"), "numba": _version("numba"), "jax": _version("jax"),
            "torch": _version("torch"), "blas_kernels": blas_core()}
