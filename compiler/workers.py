"""dualgrad's own worker threads for large fused loops: they sleep, never spin, when idle.

numba's parallel loops (`prange`) run on its threading layer (OpenMP, TBB or workqueue). After
a loop returns, OpenMP's workers keep spinning for a while, waiting for the next region: a
PyTorch training step run right after a compiled dualgrad step took 216 ms instead of 34 (MLP)
and 1.5 s instead of 0.27 (GPT). Choosing numba's layer or its spin time is process-wide state
that belongs to the user. So a fused loop is never compiled parallel: its serial loop
(compiled `nogil`) is called on slices of rows from a few threads of our own, which block on a
queue between calls (no CPU used once a call returns).

Pool size: numba's configured thread count (`NUMBA_NUM_THREADS`, the user's knob, default the
machine's cores), read from its config without starting numba's threading layer. `run(tasks)`
returns when every task is done and raises the first error a task raised.

The tasks are shared, not dealt out: the caller's thread and the workers take them one at a
time from one queue until it is empty, and the call waits for the tasks, not for the workers.
With a busy process on the other core, a worker may be scheduled milliseconds late; the
caller then runs most of the tasks itself, and a worker that wakes to an empty queue is not
waited for. With an even split (one share per thread, the call waiting for every thread) the
compiled CNN step took 2.1x its quiet time under that load (`dualgrad bench --size train
--load`).

>>> out = []
>>> run([lambda: out.append(1), lambda: out.append(2)])
>>> sorted(out)
[1, 2]
"""
from __future__ import annotations

import collections
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


def _work(inbox):
    while True:
        batch = inbox.get()             # NOTE: blocks in the kernel (a futex), no spinning
        batch.drain()


class _Batch:
    """One run's tasks: taken by whichever thread comes first, counted down as they finish."""

    def __init__(self, tasks):
        self.pending = collections.deque(tasks)   # NOTE: popleft is atomic
        self.left = len(tasks)
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.errors = []

    def drain(self):
        take = self.pending.popleft
        while True:
            try:
                fn = take()
            except IndexError:
                return
            try:
                fn()
            except BaseException as e:      # noqa: BLE001 - handed back to the caller
                self.errors.append(e)
            with self.lock:
                self.left -= 1
                last = self.left == 0
            if last:
                self.finished.set()


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


def run(tasks, threads=None):
    """Run zero-argument callables on this thread and up to `threads` - 1 workers (default:
    size()), each task once, whichever thread is free first taking the next."""
    if len(tasks) <= 1:
        for fn in tasks:
            fn()
        return
    batch = _Batch(tasks)
    helpers = min(threads or size(), len(tasks)) - 1
    for q in _workers(helpers)[:helpers]:
        q.put(batch)
    batch.drain()
    batch.finished.wait()
    if batch.errors:
        raise batch.errors[0]
