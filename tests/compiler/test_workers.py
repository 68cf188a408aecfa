"""dualgrad's worker threads (compiler/workers.py): a large fused loop split over them gives
the serial loop's results, and once the call returns no dualgrad thread uses a core."""
import threading
import time

import numpy as np
import pytest

from dualgrad.compiler import fused_kernel, workers
from dualgrad.compiler.fused_kernel import compile_fused
from dualgrad.compiler.fused_spec import FusedSpec

GELU = FusedSpec(inputs=(("float32", "full"),),
                 nodes=(("in", 0), ("ew", "tanh({0})", (0,), "float32")), outputs=(1,))


def test_a_split_loop_gives_the_serial_loops_result():
    fn = compile_fused(GELU)
    x = np.random.default_rng(0).standard_normal((3, 70001)).astype(np.float32)
    want = np.empty_like(x)
    fn._serial(3, 70001, x, want)
    got = np.empty_like(x)
    fn._threaded(3, 70001, x, got)
    np.testing.assert_array_equal(got, want)


def test_no_dualgrad_thread_is_busy_after_a_call_returns():
    if workers.size() < 2:
        pytest.skip("one usable core: nothing is split")
    fn = compile_fused(GELU)
    x = np.ones((64, 4096), np.float32)
    for _ in range(5):
        fn(64, 4096, x)
    assert any(t.name.startswith("dualgrad-worker") for t in threading.enumerate())
    time.sleep(0.05)
    cpu = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - cpu < 0.05


def test_an_error_in_a_task_reaches_the_caller():
    def boom():
        raise ValueError("in a worker")
    with pytest.raises(ValueError, match="in a worker"):
        workers.run([lambda: None, boom])
    assert fused_kernel.PARALLEL_MIN_ELEMENTS > 0


def test_the_tasks_are_shared_so_a_late_worker_is_not_waited_for(monkeypatch):
    """A worker that cannot start (as one whose core another process holds) leaves its share
    to the caller: every task runs once, and the call returns without it."""
    if workers.size() < 2:
        pytest.skip("one usable core: nothing is split")
    gate = threading.Event()
    workers._workers(1)                      # the pool exists; hold its first worker
    workers._POOL[1][0].put(type("Held", (), {"drain": lambda self: gate.wait(5)})())
    ran = []
    t0 = time.perf_counter()
    workers.run([lambda k=k: ran.append(k) for k in range(8)], threads=2)
    took = time.perf_counter() - t0
    gate.set()
    assert sorted(ran) == list(range(8)) and took < 1.0


def test_a_split_loop_is_cut_into_more_slices_than_threads():
    fn = compile_fused(GELU)
    assert fn._pieces(64, 4096) == min(workers.size() * fused_kernel.CHUNKS, 64)
    assert fn._pieces(3, 70001) == max(workers.size(), 3)
    assert fn._pieces(1 << 20, 1) == workers.size() * fused_kernel.CHUNKS
