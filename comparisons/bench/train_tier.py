"""`dualgrad bench --size train`: the four models at the sizes people train, each column in a
process of its own.

Models and sizes are train_models.py's (MLP 784-1024-1024-10 b256, CNN 32-64-128 on 3x32x32
b64, GPT 2 blocks d256 T128 vocab 1000 b16, LSTM 128->256 T50 b64), all trained with Adam
from the same weights on the same batch. Columns:

    eager     the model text on dualgrad.eager
    opt       the TF1-style twin (train_graph.py) in Session(optimize=True)
    comp      the eager step through dualgrad.compiler.compile
    jax       the jitted twin (train_jax.py)
    torch1    the model text on PyTorch, torch.set_num_threads(1)
    torch     the same on PyTorch's default threads

Each (model, column) runs in a fresh process (`python -m dualgrad.comparisons.bench.train_tier
SPEC`), rounds alternate the columns (A B C ... A B C), so no column's thread pool (numba's,
XLA's, torch's OpenMP) slows another's step. A child builds the step (build_s), calls it once
(first_call_s: trace, optimise, compile, jit), times `steps` steps one by one, then measures
one more step's memory: the high-water mark of the allocations made during that step, above
what was allocated when it began (NumPy's allocations through tracemalloc for dualgrad;
PyTorch's allocator events through its profiler; for jax.jit, XLA's buffer assignment of the
compiled step: temporaries + outputs). The median of a column is the lower of its rounds'
medians. The 1-thread sgemm rate (NumPy float32 512^3, one BLAS thread) is measured in the
parent before and after, and the best is used; FLOPs per step are counted from the models'
matrix products and convolutions (train_models.flops).

The neighbour probe (`neighbour`, MLP and GPT) times a PyTorch step (on 1 thread, then on its
default threads) in one process, first before dualgrad has run anything, then each right
after a compiled dualgrad step: how much dualgrad's threads slow the user's other work once
its call has returned, and whether PyTorch still has the thread count it was given; then,
as a control, each right after a plain NumPy float32 512^3 product (NumPy's BLAS on its
default threads, no dualgrad code).
"""
from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import time

from . import train_models as M

COLUMNS = ("eager", "opt", "comp", "jax", "torch1", "torch")
HEADERS = {"eager": "dualgrad eager", "opt": "graph (optimize=True)", "comp": "compiled eager",
           "jax": "jax.jit", "torch1": "PyTorch, 1 thread", "torch": "PyTorch, default threads"}
NEIGHBOUR_MODELS = ("mlp", "gpt")


# -- the child: one column of one model ----------------------------------------------------------
def _make(col, name, size):
    if col in ("eager", "comp"):
        from dualgrad import eager
        return M.build(eager, name, size, compiled=col == "comp")
    if col == "opt":
        from . import train_graph
        return train_graph.make_step(name, size, optimize=True)
    if col == "jax":
        from . import train_jax
        return train_jax.make_step(name, size)
    import torch
    if col == "torch1":
        torch.set_num_threads(1)
    return M.build(torch, name, size)


def _traced_peak(step):
    """Bytes: high-water mark of NumPy's (and Python's) allocations during one step."""
    import tracemalloc
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _torch_peak(step):
    """Bytes: high-water mark of PyTorch's CPU allocations during one step (its profiler's
    memory timeline: tensors created minus destroyed, in order)."""
    import warnings
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler._memory_profiler import Action
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                     record_shapes=True, with_stack=True) as prof:
            step()
        timeline = prof._memory_profile().timeline
    cur = peak = 0
    for _t, action, _key, nbytes in timeline:
        cur += nbytes if action == Action.CREATE else -nbytes if action == Action.DESTROY else 0
        peak = max(peak, cur)
    return peak


def _peak(col, name, size, step):
    if col == "jax":
        from . import train_jax
        return train_jax.memory_bytes(name, size), "XLA buffer assignment: temporaries + outputs"
    if col.startswith("torch"):
        return _torch_peak(step), "PyTorch profiler memory timeline"
    return _traced_peak(step), "tracemalloc (NumPy + Python allocations)"


def _profile(col, name, size, calls):
    from .profile import profile_step

    class Shim:   # NOTE: profile_step builds the step itself through make(column)
        @staticmethod
        def make(_col):
            return _make(col, name, size)
    return profile_step(Shim, {"eager": "eager", "opt": "graph_opt", "comp": "compiled"}[col],
                        calls=calls)


def child(spec) -> dict:
    from dualgrad.compiler.memory import pin_malloc
    from ..threads import blas_limit
    pin_malloc()
    col, name, size = spec["column"], spec["model"], spec["size"]
    with blas_limit(spec.get("blas_threads", 1) if not col.startswith("torch") else 0):
        t0 = time.perf_counter()
        step = _make(col, name, size)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        loss = step()
        out = {"build_s": build_s, "first_call_s": time.perf_counter() - t0, "loss": loss}
        step()   # NOTE: some work is lazy until the second call (Adam's state, numba's pool)
        times = []
        for _ in range(spec["steps"]):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        out["times_ms"] = [t * 1e3 for t in times]
        if spec.get("memory"):
            out["peak_bytes"], out["peak_method"] = _peak(col, name, size, step)
        if spec.get("profile") and col in ("eager", "opt", "comp"):
            out["profile"] = _profile(col, name, size, spec.get("profile_calls", 5))
    if col.startswith("torch"):
        import torch
        out["threads"] = torch.get_num_threads()
    return out


def neighbour(spec) -> dict:
    """PyTorch step times (ms) in one process: first alone, before dualgrad has run anything,
    then each right after a compiled dualgrad step. (Alternating the two would hide a pool
    that keeps spinning between steps: it slows the "alone" steps too.)"""
    import torch
    if spec.get("torch_threads"):
        torch.set_num_threads(spec["torch_threads"])
    threads = torch.get_num_threads()
    name, size, k = spec["model"], spec["size"], spec["steps"]
    theirs = M.build(torch, name, size)
    theirs(), theirs()
    alone = []
    for _ in range(k):
        t0 = time.perf_counter()
        theirs()
        alone.append(time.perf_counter() - t0)
    from dualgrad import eager
    ours = M.build(eager, name, size, compiled=True)
    ours(), ours()
    after = []
    for _ in range(k):
        ours()
        t0 = time.perf_counter()
        theirs()
        after.append(time.perf_counter() - t0)
    import numpy as np
    a = np.ones((512, 512), np.float32)
    control = []       # NOTE: the same, right after a plain NumPy product: no dualgrad code
    for _ in range(k):
        a @ a
        t0 = time.perf_counter()
        theirs()
        control.append(time.perf_counter() - t0)
    return {"alone_ms": statistics.median(alone) * 1e3, "after_ms": statistics.median(after) * 1e3,
            "after_numpy_ms": statistics.median(control) * 1e3,
            "torch_threads": threads, "torch_threads_after": torch.get_num_threads()}


def _spawn(kind, spec, timeout):
    cmd = [sys.executable, "-m", "dualgrad.comparisons.bench.train_tier", kind, json.dumps(spec)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - a failing child is a note in its cell
        tail = (locals().get("out") and out.stderr.strip().splitlines()[-1:]) or [repr(e)]
        return {"error": f"{spec.get('column', kind)} child failed: {tail[0][:200]}"}


# -- the parent --------------------------------------------------------------------------------
def _cell(runs, size_name, name):
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return {"status": "error", "note": errors[0]}
    medians = [statistics.median(r["times_ms"]) for r in runs]
    cell = {"status": "ok", "median_ms": min(medians), "round_medians_ms": medians,
            "first_call_s": runs[0]["first_call_s"], "build_s": runs[0]["build_s"],
            "loss": runs[0]["loss"]}
    for key in ("peak_bytes", "peak_method", "threads", "profile"):
        for r in runs:
            if key in r:
                cell[key] = r[key]
    return cell


def run_models(names, sizes, columns, rounds, steps, profile=False, progress=None,
               blas_threads=1, timeout=1800):
    """{model: {column: cell}}; each (model, column, round) a fresh process, columns alternating."""
    out = {}
    for name in names:
        runs = {c: [] for c in columns}
        for r in range(rounds):
            for col in columns:
                if progress:
                    progress(f"{name}: {col} (round {r + 1} of {rounds})")
                spec = {"model": name, "column": col, "size": sizes[name], "steps": steps,
                        "memory": r == 0, "profile": profile and r == 0,
                        "blas_threads": blas_threads}
                runs[col].append(_spawn("child", spec, timeout))
        out[name] = {c: _cell(runs[c], sizes, name) for c in columns}
    return out


def _sgemm():
    from ..threads import blas_limit
    from .arith import sgemm_gflops
    with blas_limit(1):
        return sgemm_gflops()


def run_tier(names=M.NAMES, sizes=None, columns=COLUMNS, rounds=2, steps=4, load=False,
             profile=False, neighbour_steps=4, progress=None, blas_threads=1,
             load_rounds=1) -> dict:
    """Every figure of one realistic-tier run, as a JSON-ready dict. load: the table again
    (load_rounds rounds) with a process spinning on the last core."""
    from .isolate import busy_core
    from .run import _loadavg, machine_description
    sizes = {n: (sizes or M.SIZES)[n] for n in names}
    t0, rate = time.perf_counter(), [_sgemm()]
    res = {"dualgrad_bench_train": 1, "sizes": sizes, "date": datetime.datetime.now(
               datetime.timezone.utc).isoformat(timespec="seconds"), "columns": list(columns),
           "machine": machine_description(), "loadavg_before": _loadavg(),
           "settings": {"rounds": rounds, "steps": steps, "blas_threads": blas_threads,
                        "load_rounds": load_rounds if load else 0}}
    res["models"] = run_models(names, sizes, columns, rounds, steps, profile, progress,
                               blas_threads)
    res["neighbour"] = {f"{n}, torch {th or 'default'} thread{'s' if th != 1 else ''}": _spawn(
        "neighbour", {"model": n, "size": sizes[n], "steps": neighbour_steps,
                      "torch_threads": th}, 1800)
        for n in names if n in NEIGHBOUR_MODELS and neighbour_steps for th in (1, 0)}
    if load:
        with busy_core() as (core, _pid):
            res["busy_core"] = core
            res["loaded"] = run_models(names, sizes, columns, load_rounds, steps, False,
                                       progress, blas_threads)
    rate.append(_sgemm())
    res["sgemm_gflops_1thread"] = max(rate)
    res["loadavg_after"] = _loadavg()
    _arithmetic(res)
    res["total_s"] = time.perf_counter() - t0
    return res


def _arithmetic(res):
    rate = res["sgemm_gflops_1thread"] * 1e9
    for name, cells in res["models"].items():
        f = M.flops(name, res["sizes"][name])
        res.setdefault("flops", {})[name] = f
        for col, cell in cells.items():
            if cell.get("median_ms"):
                cell["gflops"] = f / (cell["median_ms"] * 1e-3) / 1e9
                cell["sgemm_share"] = cell["gflops"] * 1e9 / rate
            loaded = res.get("loaded", {}).get(name, {}).get(col, {})
            if cell.get("median_ms") and loaded.get("median_ms"):
                cell["loaded_median_ms"] = loaded["median_ms"]
                cell["load_growth"] = loaded["median_ms"] / cell["median_ms"]


if __name__ == "__main__":
    kind, spec = sys.argv[1], json.loads(sys.argv[2])
    result = child(spec) if kind == "child" else neighbour(spec)
    print(json.dumps(result, default=float))
