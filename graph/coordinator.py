"""`tf.train.Coordinator` and `start_queue_runners`: TF1's thread coordination.

`start_queue_runners(sess, coord)` starts the threads of every `QueueRunner` in the session
graph's QUEUE_RUNNERS collection (the producers and `batch` of graph/input_pipeline.py add
theirs there) and returns them. The Coordinator tells threads when to stop and carries the
first error one of them reports to `join`, as TF1's:

>>> import threading
>>> from dualgrad import graph as tf
>>> coord = tf.train.Coordinator()
>>> def work():
...     with coord.stop_on_exception():
...         raise ValueError("bad record")
>>> t = threading.Thread(target=work); t.start()
>>> try:
...     coord.join([t])
... except ValueError as e:
...     print("join raised:", e)
join raised: bad record
"""
from __future__ import annotations

import threading
import time

from .errors import OutOfRangeError
from .session import BaseSession, get_default_session

__all__ = ["Coordinator", "start_queue_runners"]


class Coordinator:
    """`should_stop()`, `request_stop(ex=None)`, `join(threads, stop_grace_period_secs)`,
    `stop_on_exception()`, `wait_for_stop(timeout)`, `register_thread(t)`. The first
    exception given to request_stop (or raised inside stop_on_exception) before the stop is
    re-raised by join, unless it is one of `clean_stop_exception_types` (default:
    OutOfRangeError, the end of the input), which stop cleanly."""

    def __init__(self, clean_stop_exception_types=None):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exc_info = None
        self._clean = tuple((OutOfRangeError,) if clean_stop_exception_types is None
                            else clean_stop_exception_types)
        self._threads = []
        self._joined = False

    def _filtered(self, ex):
        value = ex[1] if isinstance(ex, tuple) else ex
        return None if isinstance(value, self._clean) else ex

    def request_stop(self, ex=None):
        """Ask the threads to stop; `ex` (an exception or an exc_info tuple), when this is the
        first stop, is what join raises. After join, an exception is raised here instead."""
        with self._lock:
            ex = self._filtered(ex)
            if self._joined and ex is not None:
                raise ex[1] if isinstance(ex, tuple) else ex
            if not self._stop.is_set():
                if ex is not None and self._exc_info is None:
                    self._exc_info = ex if isinstance(ex, tuple) else \
                        (type(ex), ex, ex.__traceback__)
                self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def clear_stop(self):
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop.clear()

    def wait_for_stop(self, timeout=None):
        """True once a stop was requested; False when `timeout` seconds passed first."""
        return self._stop.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            if thread not in self._threads:
                self._threads.append(thread)

    def raise_requested_exception(self):
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info[1]

    def stop_on_exception(self):
        """A context manager: an exception raised inside becomes request_stop(exception)."""
        coord = self

        class _Ctx:
            def __enter__(self):
                return self

            def __exit__(self, kind, value, tb):
                if kind is not None:
                    coord.request_stop((kind, value, tb))
                return kind is not None
        return _Ctx()

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Wait until the threads (these and the registered ones) end or a stop is requested,
        then give them `stop_grace_period_secs` to end. Raises the reported exception, else
        RuntimeError naming the threads still alive (unless ignore_live_threads)."""
        with self._lock:
            threads = self._threads + [t for t in threads or () if t not in self._threads]
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._threads = []
            if self._exc_info is not None:
                raise self._exc_info[1].with_traceback(self._exc_info[2])
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(alive)}")

    @property
    def joined(self):
        return self._joined


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection="queue_runners"):
    """Start the threads of the queue runners in `sess.graph`'s `collection` (default: the
    default session's) and return them; with `coord`, they stop when it does."""
    sess = sess if sess is not None else get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to "
                         "tf.train.start_queue_runners(sess=sess)")
    if not isinstance(sess, BaseSession):
        raise TypeError(f"sess must be a graph.Session, got {type(sess).__name__}")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads += qr.create_threads(sess, coord=coord, daemon=daemon, start=start)
    return threads
