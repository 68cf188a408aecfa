"""Where one training step's time goes: kernels, allocation, and Python between kernels.

`profile_step(workload, column)` splits the median step time of one column into

    kernel      time inside op kernels (NumPy calls, numba-fused loops), allocation excluded
    alloc       the cost of allocating the arrays those kernels return, replayed on their own
                (`np.empty` of the same sizes, kept alive for the step, as the step keeps them)
    python      everything else: dispatch, tape records and backward walk (eager), the plan
                interpreter (graph), guards and replay (compiled), the optimiser loop

Kernel time is measured by wrapping each kernel in a timer for a few extra calls: every
registry op's kernel for the eager column (eager looks `op.kernel` up at each call), and every
step of the column's execution plans for the graph and compiled columns (this catches the
numba-fused kernels too). The timer's own cost per call is calibrated and subtracted; the
unwrapped step time is measured separately. Nothing here is used by the engines: it is a
measuring instrument for docs/benchmarks.md, like the timing module beside it.

>>> from dualgrad.comparisons.bench.workloads import workloads
>>> p = profile_step(workloads(["mlp"])[0], "graph_opt", calls=3)
>>> sorted(p)[:3]
['alloc_ms', 'calls', 'kernel_ms']
"""
from __future__ import annotations

import gc
import statistics
import time
from collections import defaultdict

import numpy as np


class KernelTimer:
    """Accumulates seconds, calls and returned allocations per kernel name."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self.alloc_sizes = []   # nbytes of every fresh array a kernel returned, in call order
        self.on = False

    def wrap(self, name, kernel):
        perf, seconds, calls, sizes, ndarray = (self.clock, self.seconds, self.calls,
                                                self.alloc_sizes, np.ndarray)

        def timed(*args, **kwargs):
            if not self.on:
                return kernel(*args, **kwargs)
            t = perf()
            out = kernel(*args, **kwargs)
            seconds[name] += perf() - t
            calls[name] += 1
            for o in (out if type(out) is tuple else (out,)):
                if type(o) is ndarray and o.base is None and o.nbytes:
                    sizes.append(o.nbytes)
            return out
        timed.__wrapped__ = kernel
        return timed

    def reset(self):
        self.seconds.clear()
        self.calls.clear()
        self.alloc_sizes.clear()


def _timer_cost(calls=20000):
    """Seconds one timed interval adds to the measured kernel time (perf_counter twice)."""
    kt = KernelTimer()
    noop = kt.wrap("noop", lambda: None)
    kt.on = True
    for _ in range(calls):
        noop()
    return kt.seconds["noop"] / calls


# -- installing the timer -----------------------------------------------------------------------
def _wrap_registry(kt):
    from dualgrad.ops.core import REGISTRY
    saved = {name: op.kernel for name, op in REGISTRY.items()}
    for name, op in REGISTRY.items():
        op.kernel = kt.wrap(name, op.kernel)

    def undo():
        for name, k in saved.items():
            REGISTRY[name].kernel = k
    return undo


def _step_name(step):
    node = step.node
    name = getattr(node, "type", None) or type(step.kernel).__name__
    return "fused" if name.startswith("fused") else name


def _wrap_plans(kt, plans):
    saved = []
    for plan in plans:
        for step in plan.steps:
            saved.append((step, step.kernel))
            step.kernel = kt.wrap(_step_name(step), step.kernel)
        plan.refresh()

    def undo():
        for step, k in saved:
            step.kernel = k
        for plan in plans:
            plan.refresh()
    return undo


def _plans_since(before):
    from dualgrad.graph.plan import Plan
    return [o for o in gc.get_objects() if type(o) is Plan and id(o) not in before]


def _existing_plans():
    from dualgrad.graph.plan import Plan
    return {id(o) for o in gc.get_objects() if type(o) is Plan}


# -- measuring ----------------------------------------------------------------------------------
def _median_call(fn, calls):
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _alloc_cost(sizes, calls):
    """Median seconds to allocate (and then free) arrays of these sizes, all live at once."""
    empty, u8 = np.empty, np.uint8

    def replay():
        keep = [empty(n, u8) for n in sizes]
        del keep
    return _median_call(replay, calls) if sizes else 0.0


def profile_step(w, column, calls=30):
    """{step_ms, kernel_ms, alloc_ms, python_ms, calls, python_us_per_call, top} for one column.

    top: [(kernel name, ms per step, calls per step)], the five slowest kernels.
    """
    before = _existing_plans()
    fn = w.make(column)
    fn()
    fn()
    kt = KernelTimer()
    undo = _wrap_registry(kt) if column == "eager" else _wrap_plans(kt, _plans_since(before))
    gc_was = gc.isenabled()
    gc.disable()
    try:
        # NOTE: plain and timed calls alternate, so a shared machine's drift hits both alike
        plain, timed = [], []
        for _ in range(calls):
            kt.on = False
            plain.append(_median_call(fn, 1))
            kt.on = True
            before_s = sum(kt.seconds.values())
            fn()
            timed.append(sum(kt.seconds.values()) - before_s)
        kt.on = False
    finally:
        undo()
        if gc_was:
            gc.enable()
    step_s = statistics.median(plain)
    n_calls = sum(kt.calls.values()) / calls
    cost = _timer_cost()
    kernel_s = max(statistics.median(timed) - n_calls * cost, 0.0)
    sizes = kt.alloc_sizes[:len(kt.alloc_sizes) // calls]
    alloc_s = min(_alloc_cost(sizes, calls), kernel_s)
    python_s = max(step_s - kernel_s, 0.0)
    top = sorted(kt.seconds, key=kt.seconds.get, reverse=True)[:5]
    return {"step_ms": step_s * 1e3, "kernel_ms": (kernel_s - alloc_s) * 1e3,
            "alloc_ms": alloc_s * 1e3, "python_ms": python_s * 1e3, "calls": n_calls,
            "allocs": len(sizes), "alloc_kib": sum(sizes) / 1024,
            "python_us_per_call": python_s * 1e6 / n_calls if n_calls else 0.0,
            "top": [(k, (kt.seconds[k] / calls - kt.calls[k] / calls * cost) * 1e3,
                     kt.calls[k] / calls) for k in top]}


def kernel_share(make, column, calls=8, clock=time.process_time, top=8):
    """{step_ms, kernel_ms, calls, top} of the step `make(column)` builds, all by `clock`
    (CPU time by default: on a shared machine a process's wall time counts the time others
    held its core). top: [(kernel name, ms per step, calls per step)]."""
    before = _existing_plans()
    fn = make(column)
    fn()
    fn()
    kt = KernelTimer(clock)
    undo = _wrap_registry(kt) if column == "eager" else _wrap_plans(kt, _plans_since(before))
    kt.on = True
    try:
        t = clock()
        for _ in range(calls):
            fn()
        step = (clock() - t) / calls
    finally:
        kt.on = False
        undo()
    names = sorted(kt.seconds, key=kt.seconds.get, reverse=True)[:top]
    return {"step_ms": step * 1e3, "kernel_ms": sum(kt.seconds.values()) / calls * 1e3,
            "calls": sum(kt.calls.values()) / calls,
            "top": [(k, kt.seconds[k] / calls * 1e3, kt.calls[k] / calls) for k in names]}
