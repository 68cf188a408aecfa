"""PyTorch's columns in a process of their own, and a busy process for `--load`.

PyTorch's OpenMP pool, numba's and OpenBLAS's fight for the cores when they share a process
(PyTorch's MLP step went from 0.2 ms to 31-138 ms in the mixed process), so the `torch` and
`torch_compile` columns run in a child process (`python -m
dualgrad.comparisons.bench.isolate`) that imports neither numba nor jax, with PyTorch on one
thread (`torch.set_num_threads(1)`, the figure the targets compare with). The child times
its columns with the same method and prints one JSON line.

`busy_core()` starts a process that spins on the last usable core for the `--load` run.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

from .timing import build_cell, fill_stats

TORCH_COLUMNS = ("torch", "torch_compile")


def torch_cells(names, quick, columns, settings):
    """{workload name: {column: cell}} for the PyTorch columns, measured in a child process."""
    wanted = [c for c in TORCH_COLUMNS if c in columns]
    if not wanted:
        return {}
    cmd = [sys.executable, "-m", "dualgrad.comparisons.bench.isolate", json.dumps(
        {"names": list(names), "quick": bool(quick), "columns": wanted,
         "settings": {k: settings[k] for k in ("repeat", "target_s", "passes")}})]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - the child's failure is a note, not a crash
        err = (locals().get("out") and out.stderr.strip().splitlines()[-1:]) or [repr(e)]
        note = f"PyTorch child process failed: {err[0][:200]}"
        return {n: {c: {"status": "error", "note": note} for c in wanted} for n in names}


def _child(spec):
    from dualgrad.compiler.memory import pin_malloc
    from .timing import time_group
    from .workloads import workloads
    pin_malloc()
    threads = None
    try:
        import torch
        torch.set_num_threads(1)
        threads = torch.get_num_threads()
    except ImportError:
        pass
    res = {}
    for w in workloads(spec["names"], spec["quick"]):
        cells, fns = {}, {}
        for col in spec["columns"]:
            fn, cells[col] = build_cell(w, col)
            if fn is not None:
                fns[col] = fn
        s = spec["settings"]
        for col, st in time_group(fns, s["repeat"], s["target_s"], s["passes"]).items():
            fill_stats(cells[col], st, w.unit_div)
            cells[col]["threads"] = threads
        res[w.name] = cells
    return res


@contextlib.contextmanager
def busy_core():
    """A process spinning on the last usable core while the block runs; yields (core, pid)."""
    core = max(os.sched_getaffinity(0))
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True:\n    pass\n"
    p = subprocess.Popen([sys.executable, "-c", code])   # NOTE: no preexec_fn: jax's threads
    try:
        for _ in range(500):                             # and fork do not mix
            if os.sched_getaffinity(p.pid) == {core}:
                break
            time.sleep(0.01)
        yield core, p.pid
    finally:
        p.kill()
        p.wait()


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1])), default=str))
