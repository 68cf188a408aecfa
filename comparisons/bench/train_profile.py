"""Where a training step's time goes at the sizes people train (issue 35), and how it compares.

    python -m dualgrad.comparisons.bench.train_profile                  # time, print a table
    python -m dualgrad.comparisons.bench.train_profile --write docs/profile-train.md

Each (model, column) runs in a fresh process of its own with every thread pool at one thread
(`OMP_NUM_THREADS`, `MKL_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `NUMBA_NUM_THREADS`, set only in
the child's environment), columns alternating over the rounds; a cell is the best of the
rounds' medians. Columns: `torch` (PyTorch eager, one thread), `eager` (dualgrad.eager) and
`compiled` (`compiler.compile` of the same step). The models are `train_models.py`'s (the
realistic bench tier's), one text for both libraries; `--scale` other than 1 runs its TINY
sizes. The sgemm rate is a float32 1024x1024 product timed the same way in each dualgrad
child (NumPy's OpenBLAS on one thread).

Each child pins glibc's malloc thresholds (`compiler.pin_malloc`, as `dualgrad bench` does), so
large temporaries are recycled rather than page-faulted in afresh each step. Step times are
the process's CPU time per step (`time.process_time`), not wall time: on a shared machine a
one-thread process's wall time counts the time other processes held its core (the wall
medians are kept in the cells as `wall_ms`).

With `--write`, each dualgrad column is also profiled in its process (first round), by CPU
time: kernel time against the rest (`profile.kernel_share`: the registry's kernels, or the
plan's steps, wrapped in timers), the kernels taking most time, and cProfile's functions with
the most time of their own.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time

MODELS = ("mlp", "cnn", "gpt", "lstm")
COLUMNS = ("torch", "eager", "compiled")
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                               "NUMBA_NUM_THREADS")}


def _sgemm_rate():
    import numpy as np
    a = np.random.default_rng(0).standard_normal((1024, 1024), np.float32)
    a @ a
    best = min(_timed(lambda: a @ a, time.process_time) for _ in range(5))
    return 2 * 1024 ** 3 / best


def _timed(fn, clock=time.perf_counter):
    t = clock()
    fn()
    return clock() - t


def _make(name, column, scale):
    from .train_models import SIZES, TINY, build
    size = TINY[name] if scale != 1 else SIZES[name]
    if column == "torch":
        import torch
        torch.set_num_threads(1)
        return build(torch, name, size)
    from dualgrad import eager
    return build(eager, name, size, compiled=column == "compiled")


def _cprofile_top(fn, calls, n=8):
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    st = pstats.Stats(prof)
    rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:n]
    return [(f"{os.path.basename(f)}:{line}({func})", tt * 1e3 / calls, nc / calls)
            for (f, line, func), (cc, nc, tt, ct, callers) in rows]


def child(spec):
    """Runs in the fresh process: times one column, optionally profiles it; returns a dict."""
    from dualgrad.compiler.memory import pin_malloc
    pin_malloc()   # NOTE: as `dualgrad bench` does for every column it times
    name, column, scale = spec["name"], spec["column"], spec["scale"]
    t = time.perf_counter()
    fn = _make(name, column, scale)
    fn()
    out = {"first_s": time.perf_counter() - t}
    fn()
    walls, cpus = [], []
    for _ in range(spec["steps"]):
        c = time.process_time()
        walls.append(_timed(fn))
        cpus.append(time.process_time() - c)
    out["wall_ms"] = 1e3 * statistics.median(walls)
    out["step_ms"] = 1e3 * statistics.median(cpus)
    if column != "torch":
        from ..threads import blas_core
        out["sgemm"], out["blas_core"] = _sgemm_rate(), blas_core()
    if spec.get("profile") and column != "torch":
        from .profile import kernel_share
        out["profile"] = kernel_share(lambda col: _make(name, col, scale), column, spec["steps"])
        out["cprofile"] = _cprofile_top(fn, spec["steps"])
    return out


def run_cell(name, column, steps, scale, profile=False, timeout=1200):
    env = {**os.environ, **ONE_THREAD}
    spec = dict(name=name, column=column, steps=steps, scale=scale, profile=profile)
    cmd = [sys.executable, "-m", "dualgrad.comparisons.bench.train_profile", "--child",
           json.dumps(spec)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if res.returncode:
        raise RuntimeError(f"{name}/{column} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(models=MODELS, columns=COLUMNS, rounds=2, steps=8, scale=1, profile=False):
    """{model: {column: best cell over the rounds}}; columns alternate within each round."""
    cells = {m: {} for m in models}
    for r in range(rounds):
        for m in models:
            for c in columns:
                cell = run_cell(m, c, steps, scale, profile=profile and r == 0)
                old = cells[m].get(c)
                if old is None or cell["step_ms"] < old["step_ms"]:
                    cell = {**(old or {}), **cell}
                    cells[m][c] = cell
                elif "profile" in cell:
                    old.update(profile=cell["profile"], cprofile=cell["cprofile"])
    return cells


def table(cells, scale=1):
    from .train_models import SIZES, TINY, flops
    lines = ["| model | PyTorch ms | eager ms (x torch) | compiled ms (x torch) | "
             "share of sgemm rate: torch / eager / compiled |", "|---|---|---|---|---|"]
    for m, row in cells.items():
        rate = max(c.get("sgemm", 0) for c in row.values()) or float("nan")
        f = flops(m, TINY[m] if scale != 1 else SIZES[m])
        tm = row.get("torch", {}).get("step_ms", float("nan"))
        ms = {c: row.get(c, {}).get("step_ms", float("nan")) for c in COLUMNS}
        share = " / ".join(f"{100 * f / (ms[c] * 1e-3) / rate:.0f}%" for c in COLUMNS)
        lines.append(f"| {m} | {tm:.1f} | {ms['eager']:.1f} ({ms['eager'] / tm:.2f}x) | "
                     f"{ms['compiled']:.1f} ({ms['compiled'] / tm:.2f}x) | {share} |")
    cores = sorted({c.get("blas_core") or "?" for row in cells.values() for c in row.values()
                    if "sgemm" in c})
    lines.append(f"\nNumPy's OpenBLAS ran its {' / '.join(cores)} kernels in dualgrad's columns.")
    return "\n".join(lines)


def profile_text(cells):
    out = []
    for m, row in cells.items():
        for c in ("eager", "compiled"):
            p = row.get(c, {}).get("profile")
            if not p:
                continue
            out.append(f"\n### {m}, {c}: step {p['step_ms']:.1f} ms CPU with timers = kernels "
                       f"{p['kernel_ms']:.1f} ({p['calls']:.0f} calls) + the rest "
                       f"{p['step_ms'] - p['kernel_ms']:.1f} (Python, tape, plan, optimiser)\n")
            out.append("| kernel | ms per step | calls per step |\n|---|---|---|")
            out += [f"| {k} | {ms:.2f} | {n:.0f} |" for k, ms, n in p["top"]]
            out.append("\n| function (cProfile, own time) | ms per step | calls per step |\n"
                       "|---|---|---|")
            out += [f"| `{k}` | {ms:.2f} | {n:.0f} |" for k, ms, n in row[c]["cprofile"]]
    return "\n".join(out)


def _main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--columns", default=",".join(COLUMNS))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--scale", type=float, default=1, help="other than 1: the TINY sizes")
    ap.add_argument("--write")
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return
    cells = measure(a.models.split(","), a.columns.split(","), a.rounds, a.steps, a.scale,
                    profile=bool(a.write))
    text = table(cells, a.scale)
    print(text)
    if a.write:
        prof = profile_text(cells)
        print(prof)
        with open(a.write, "w") as f:
            f.write(_DOC_HEAD.format(rounds=a.rounds, steps=a.steps) + text +
                    "\n\n## Profiles\n" + prof + "\n")


_DOC_HEAD = """# Training steps at realistic sizes: timings and profile

Generated by `python -m dualgrad.comparisons.bench.train_profile --write docs/profile-train.md`
(the method is that module's docstring: each model and column in a fresh one-thread process
with malloc pinned, CPU time per step, best median of {rounds} rounds of {steps} steps; the
models are `comparisons/bench/train_models.py`, one text run on PyTorch and on dualgrad.eager).
Figures were taken on a shared 2-core machine with other work running, so ratios within a run
matter more than absolute times; the share of the sgemm rate divides the step's matmul and
convolution FLOPs per second by a 1024x1024 float32 product's, measured in the same process.

"""

if __name__ == "__main__":
    _main()
