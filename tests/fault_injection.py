"""Fault injection at every step boundary of a call.

A *boundary* is a line of dualgrad's own code about to run (a `sys.settrace` line event in
ops/, eager/, graph/ or compiler/). `count_boundaries(fn)` runs fn once and counts them;
`interrupt_at(k, fn, fault)` runs fn again and, at boundary k, raises `fault` there (an
exception class such as KeyboardInterrupt or OSError), sends the process SIGINT ("sigint"),
or, in a forked child, ends the process on the spot ("kill", like SIGKILL: no finally, no
atexit). A test calls it for every k and checks what must hold after each: nothing lost,
state as before or as after, nothing left behind.

A polling loop (POLLING: ops/distributed.wait, which tests a pending request until the other
ranks arrive) is one boundary, its entry: how many times it polls depends on how late the
other ranks are, so counting its lines made a step's count vary from run to run by thousands,
and a fault placed from one run's count fell past the end of another's step.
"""
from __future__ import annotations

import os
import signal
import sys

from dualgrad.ops import distributed
from dualgrad.ops.core import FRAMEWORK_DIRS

POLLING = frozenset({distributed.wait.__code__})


class _Stop:
    """The trace function: counts boundaries, fires the fault at number `at`."""

    def __init__(self, at=None, fault=None):
        self.at, self.fault, self.seen = at, fault, 0

    def ours(self, frame):
        return frame.f_code.co_filename.startswith(FRAMEWORK_DIRS)

    def __call__(self, frame, event, arg):
        if not self.ours(frame):
            return None
        if event == "call" and frame.f_code in POLLING:
            self.count()
            return None                     # its lines are not traced: one boundary in all
        if event == "line":
            self.count()
        return self

    def count(self):
        self.seen += 1
        if self.seen == self.at:
            self.fire()

    def fire(self):
        if self.fault == "sigint":
            os.kill(os.getpid(), signal.SIGINT)
        elif self.fault == "kill":
            os._exit(86)
        else:
            raise self.fault(f"fault injected at boundary {self.at}")


def _traced(stop, fn):
    previous = sys.gettrace()
    sys.settrace(stop)
    try:
        return fn()
    finally:
        sys.settrace(previous)


def count_boundaries(fn) -> int:
    stop = _Stop()
    _traced(stop, fn)
    return stop.seen


def fire_at(k, fn, fault=KeyboardInterrupt):
    """Run fn in this process with `fault` at boundary k ("kill" ends this process there).
    For a process that is already one of several (an MPI rank), where forking is no option."""
    return _traced(_Stop(k, fault), fn)


def interrupt_at(k, fn, fault=KeyboardInterrupt):
    """Run fn with `fault` at boundary k; returns the exception it raised (None if none).
    fault="kill" runs fn in a forked child that dies there; returns its exit status."""
    if fault == "kill":
        pid = os.fork()
        if pid == 0:                                        # pragma: no cover - the child
            try:
                _traced(_Stop(k, "kill"), fn)
            finally:
                os._exit(0)
        return os.waitpid(pid, 0)[1]
    try:
        fire_at(k, fn, fault)
    except BaseException as e:  # noqa: BLE001 - the fault (or what it turned into) is the result
        return e
    return None


def boundaries(n, cap):
    """Every boundary 1..n when n <= cap, else `cap` of them spread evenly (first and last
    included): the cap keeps a long call's loop within the test's time budget."""
    if n <= cap:
        return list(range(1, n + 1))
    return sorted({1 + round(i * (n - 1) / (cap - 1)) for i in range(cap)})
