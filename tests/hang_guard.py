"""A hang is a failure, not a stalled CI: `hang_guard` fails the test that runs longer than
its budget, with the stack of every thread at that moment in the failure message.

Modules that start processes, threads or read files opt in with
`pytestmark = pytest.mark.usefixtures("hang_guard")`; `@pytest.mark.hang_guard(seconds)`
changes one test's budget (default DEFAULT_SECONDS). The alarm is SIGALRM (POSIX, main
thread); faulthandler also writes the stacks to stderr a moment earlier, in case the main
thread is stuck in C code where the alarm's exception cannot surface.
"""
from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import traceback

import pytest

DEFAULT_SECONDS = 120.0


class Hang(AssertionError):
    """The test ran past its budget; the message holds every thread's stack."""


def stacks() -> str:
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f"--- thread {names.get(ident, ident)} ---\n"
                     + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)


@pytest.fixture
def hang_guard(request):
    marker = request.node.get_closest_marker("hang_guard")
    seconds = float(marker.args[0]) if marker and marker.args else DEFAULT_SECONDS
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield seconds
        return

    def alarm(signum, frame):
        raise Hang(f"{request.node.nodeid} still running after {seconds:g} s "
                   f"(hang_guard); stacks:\n{stacks()}")

    previous = signal.signal(signal.SIGALRM, alarm)
    faulthandler.dump_traceback_later(seconds + 5, exit=False)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield seconds
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)
