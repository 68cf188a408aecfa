"""The benchmark's instruments: the step profile, PyTorch's own process, the busy core, the
arithmetic figures and the loaded run (what they measure is checked, not how fast it is)."""
from __future__ import annotations

import os

import pytest

from dualgrad.comparisons.bench import run_bench
from dualgrad.comparisons.bench.arith import model_flops, sgemm_gflops
from dualgrad.comparisons.bench.isolate import busy_core, torch_cells
from dualgrad.comparisons.bench.profile import KernelTimer, profile_step
from dualgrad.comparisons.bench.workloads import workloads

SETTINGS = {"repeat": 2, "target_s": 0.002, "passes": 1}


@pytest.mark.parametrize("column", ["eager", "graph_opt"])
def test_profile_splits_the_step(column):
    p = profile_step(workloads(["mlp"])[0], column, calls=5)
    assert p["calls"] > 10 and p["kernel_ms"] > 0 and p["step_ms"] > 0
    assert p["alloc_ms"] >= 0 and p["python_ms"] >= 0 and p["allocs"] > 0
    assert "matmul" in [name for name, _, _ in p["top"]]


def test_kernel_timer_counts_calls_and_fresh_arrays():
    import numpy as np
    kt = KernelTimer()
    f = kt.wrap("zeros", lambda n: np.zeros(n, np.float32))
    view = kt.wrap("view", lambda a: a[1:])
    f(4)                      # off: not counted
    kt.on = True
    a = f(4)
    view(a)
    assert kt.calls == {"zeros": 1, "view": 1}
    assert kt.alloc_sizes == [16]   # the view allocates nothing


def test_torch_runs_in_its_own_process_on_one_thread():
    pytest.importorskip("torch")
    cell = torch_cells(["mlp"], True, ("torch",), SETTINGS)["mlp"]["torch"]
    assert cell["status"] == "ok", cell
    assert cell["median_ms"] > 0 and cell["threads"] == 1


def test_busy_core_spins_on_the_last_core_and_stops():
    import time
    with busy_core() as (core, pid):
        assert core == max(os.sched_getaffinity(0))
        assert os.sched_getaffinity(pid) == {core}
        time.sleep(0.3)
        with open(f"/proc/{pid}/stat") as f:
            utime = int(f.read().rsplit(")", 1)[1].split()[11])
        assert utime > 0        # it has been running, not sleeping
    assert not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read()


def test_arithmetic_figures():
    pytest.importorskip("jax")
    assert sgemm_gflops(n=128, repeat=2) > 0
    # MLP 64-128-10 at batch 128: forward 2*128*(64*128 + 128*10), backward twice that
    # less the input gradient of the first layer: 5.18 MFLOP of matmuls, plus elementwise
    assert 5.0e6 < model_flops("mlp") < 6.0e6


def test_loaded_run_and_profile_in_the_result():
    res = run_bench(["mlp"], quick=True, columns=("eager", "graph_opt"), load=True,
                    profile=True)
    (w,) = res["workloads"]
    for col in ("eager", "graph_opt"):
        cell = w["columns"][col]
        assert cell["load_growth"] > 0 and cell["loaded_median_ms"] > 0
        assert 0 < cell["sgemm_fraction"] < 1
    assert set(w["profile"]) == {"eager", "graph", "graph_opt", "compiled"}
    assert res["settings"]["busy_core"] == max(os.sched_getaffinity(0))
    assert {"loadavg_before", "loadavg_after", "loadavg_after_loaded"} <= set(res["machine"])
    from dualgrad.comparisons.bench.report_more import markdown
    text = markdown(res)
    assert "| mlp | graph (optimize=True) |" in text      # the profile rows
    assert "| mlp | 5." in text                            # MFLOP per step
    assert "x) |" in text                                  # loaded medians with growth
