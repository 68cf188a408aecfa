"""torch.futures: a Future completed once, by any thread, with a value or an exception.

RPC's asynchronous calls return one (`distributed.rpc.rpc_async`), and it works on its own:

    >>> from dualgrad.eager import futures
    >>> fut = futures.Future()
    >>> doubled = fut.then(lambda f: f.value() * 2)
    >>> fut.set_result(21)
    >>> doubled.wait()
    42

As torch's: callbacks run in the thread that completes the future (at once, in the calling
thread, when it is already complete), in the order they were added; `wait()` raises the
exception the future was completed with; an exception raised inside `then`'s callback
completes the new future with a RuntimeError that says "Got the following error when running
the callback" and the callback's traceback; one raised inside `add_done_callback`'s is
written to stderr and otherwise ignored. There are no CUDA streams, so `devices=` accepts the
CPU only.
"""
from __future__ import annotations

import sys
import threading
import traceback

__all__ = ["Future", "wait_all", "collect_all"]


class Future:
    """A value that becomes available later (torch.futures.Future)."""

    def __init__(self, *, devices=None):
        from . import devices as _devices
        for d in devices or ():
            _devices.check(f"cuda:{d}" if isinstance(d, int) else d)
        self._cond = threading.Condition()
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []

    def done(self):
        """Whether the future holds a value or an exception."""
        return self._done

    def wait(self, timeout=None):
        """Block until complete; return the value or raise the exception it completed with.
        `timeout` (seconds, dualgrad's addition) raises TimeoutError past it."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._done, timeout):
                raise TimeoutError(f"Future.wait: not completed within {timeout} s")
        return self.value()

    def value(self):
        """The value of a completed future (raises its exception); call after wait() or in a
        callback."""
        if not self._done:
            raise RuntimeError("Future.value(): the future has not completed yet; call wait() "
                               "first, or read it inside a callback of then()")
        if self._error is not None:
            raise self._error
        return self._value

    def set_result(self, result):
        """Complete the future with `result` and run its callbacks (in this thread)."""
        self._complete(result, None)

    def set_exception(self, result):
        """Complete the future with an exception: wait() and value() raise it."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, error):
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback):
        """Run callback(self) once complete (now, if it is); its exceptions are reported on
        stderr and ignored. Returns None: then() gives a future of the callback's result."""
        self._on_done(lambda fut: _reported(callback, fut))

    def then(self, callback):
        """A new future completed with callback(self) once this one completes."""
        out = Future()

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - handed on to the next future, as torch
                out.set_exception(_callback_error(e))
            else:
                out.set_result(result)
        self._on_done(run)
        return out

    def _on_done(self, fn):
        with self._cond:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn(self)

    def __repr__(self):
        state = ("error" if self._error is not None else "done") if self._done else "pending"
        return f"<dualgrad.eager.futures.Future ({state})>"


def _callback_error(e):
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    err = RuntimeError(f"Got the following error when running the callback: "
                       f"{type(e).__name__}: {e}\n\n{text}")
    err.__cause__ = e
    return err


def _reported(callback, fut):
    try:
        callback(fut)
    except Exception as e:  # noqa: BLE001 - torch logs a done-callback's error and goes on
        sys.stderr.write(_callback_error(e).args[0])


def wait_all(futures):
    """Wait for every future; their values in order (raises the first error met, in order)."""
    return [f.wait() for f in futures]


def collect_all(futures):
    """A future completed, once all of `futures` are, with the list of those futures."""
    futures = list(futures)
    out = Future()
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)
    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out
