"""dualgrad's own worker threads for large fused loops: they sleep, never spin, when idle.

numba's parallel loops (`prange`) run on its threading layer (OpenMP, TBB or workqueue). After
a loop returns, OpenMP's workers keep spinning for a while, waiting for the next region: a
PyTorch training step run right after a compiled dualgrad step took 216 ms instead of 34 (MLP)
and 1.5 s instead of 0.27 (GPT). Choosing numba's layer or its spin time is process-wide state
that belongs to the user. So a fused loop is never compiled parallel: its serial loop
(compiled `nogil`) is called on slices of rows from a few threads of our own, which block on a
queue between calls (no CPU used once a call returns).

Pool size: numba's configured thread count (`NUMBA_NUM_THREADS`, the user's knob, default the
machine's cores), read from its config without starting numba's threading layer; the caller's
thread runs one share itself. `run(tasks)` returns when every task is done and raises the
first error a task raised.

>>> out = []
>>> run([lambda: out.append(1), lambda: out.append(2)])
>>> sorted(out)
[1, 2]
"""
from __future__ import annotations

import os
import queue
import threading

_LOCK = threading.Lock()
_POOL = None   # (pid, [worker queues]) of this process


def size() -> int:
    """Threads a large loop is split over (the calling thread included)."""
    from numba import config
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    return max(1, min(int(config.NUMBA_NUM_THREADS), usable))


def _work(tasks):
    while True:
        fn, done = tasks.get()          # NOTE: blocks in the kernel (a futex), no spinning
        try:
            fn()
            done.put(None)
        except BaseException as e:      # noqa: BLE001 - handed back to the caller
            done.put(e)


def _workers(n):
    global _POOL
    with _LOCK:
        if _POOL is None or _POOL[0] != os.getpid() or len(_POOL[1]) < n:
            queues = [queue.SimpleQueue() for _ in range(n)]
            for i, q in enumerate(queues):
                threading.Thread(target=_work, args=(q,), daemon=True,
                                 name=f"dualgrad-worker-{i}").start()
            _POOL = (os.getpid(), queues)
        return _POOL[1]


def run(tasks):
    """Run zero-argument callables: the first on this thread, the rest on the workers."""
    if len(tasks) <= 1:
        for fn in tasks:
            fn()
        return
    done = queue.SimpleQueue()
    for q, fn in zip(_workers(len(tasks) - 1), tasks[1:]):
        q.put((fn, done))
    err = None
    try:
        tasks[0]()
    except BaseException as e:          # noqa: BLE001 - wait for the others first
        err = e
    for _ in tasks[1:]:
        e = done.get()
        err = err or e
    if err is not None:
        raise err
