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
