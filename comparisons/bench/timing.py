"""Side-by-side timing, the method docs/benchmarks.md describes: medians of repeats, peers
interleaved in passes, the first call timed on its own.

Each peer gets one untimed warm-up call, a call count `number` chosen so one repeat lasts
about `target` seconds, then `repeat` timed repeats split over `passes` rounds
(A, B, C, A, B, C) so a slow drift of a shared machine hits every peer alike. The garbage
collector is off while timing.

>>> from dualgrad.comparisons.bench.timing import time_group
>>> st = time_group({"noop": lambda: None}, repeat=3, target=0.001)
>>> sorted(st["noop"])
['max_s', 'median_s', 'min_s', 'number', 'repeat']
"""
from __future__ import annotations

import gc
import math
import statistics
import time

from .workloads import Skip


def _autorange(fn, target):
    """Calls per repeat so that one repeat lasts about `target` seconds."""
    number = 1
    while True:
        t = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t
        if dt >= target or number >= 1 << 20:
            return number
        number = max(number * 2, int(math.ceil(number * target * 1.2 / max(dt, 1e-9))))


def time_group(fns: dict, repeat: int = 8, target: float = 0.05, passes: int = 2,
               settle: float = 0.0) -> dict:
    """{name: {median_s, min_s, max_s, number, repeat}} per call of each zero-arg callable.

    settle: seconds to sleep before each peer's block, so the previous peer's idle thread
    pool stops spinning (numba's OpenMP, XLA's, torch's) before this one is timed.
    """
    numbers = {}
    for name, fn in fns.items():
        fn()
        numbers[name] = _autorange(fn, target) if target > 0 else 1
    samples = {name: [] for name in fns}
    per_pass = -(-repeat // passes)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(passes):
            for name, fn in fns.items():
                if settle:
                    time.sleep(settle)
                fn()
                n = numbers[name]
                for _ in range(per_pass):
                    t = time.perf_counter()
                    for _ in range(n):
                        fn()
                    samples[name].append((time.perf_counter() - t) / n)
    finally:
        if gc_was:
            gc.enable()
    return {name: {"median_s": statistics.median(s), "min_s": min(s), "max_s": max(s),
                   "number": numbers[name], "repeat": len(s)} for name, s in samples.items()}


def timed(fn):
    """(result, seconds) of one call."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


# -- one column's cell of a workload (the in-process run and isolate.py's processes) ---------
def one_line(err: BaseException) -> str:
    msg = str(err).strip().splitlines()
    return f"{type(err).__name__}: {msg[0] if msg else ''}"[:200]


def build_cell(w, col):
    """(step fn or None, cell) for one column: built, called once, timed."""
    cell = {"status": "ok", "note": w.notes.get(col, "")}
    try:
        fn, cell["build_s"] = timed(lambda: w.make(col))
        _, cell["first_call_s"] = timed(fn)
        return fn, cell
    except Skip as e:
        cell.update(status="skipped", note=str(e))
    except Exception as e:  # noqa: BLE001 - one failing column must not stop the run
        cell.update(status="error", note=one_line(e))
    return None, cell


def fill_stats(cell, st, unit_div):
    med, lo, hi = (st[k] / unit_div for k in ("median_s", "min_s", "max_s"))
    cell.update(median_ms=med * 1e3, min_ms=lo * 1e3, max_ms=hi * 1e3,
                spread_pct=100.0 * (hi - lo) / med if med else 0.0,
                number=st["number"], repeat=st["repeat"])


