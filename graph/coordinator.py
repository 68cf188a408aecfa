"""`tf.train.Coordinator` and `start_queue_runners`: TF1's thread coordination.

dualgrad has no queues (feed with `feed_dict` or `tf.data`), so `start_queue_runners` starts
the queue runners registered in the graph — none unless a program adds its own — and returns
their threads; the Coordinator works on any threads, as TF1's.
"""
from __future__ import annotations

import threading
import time

__all__ = ["Coordinator", "start_queue_runners"]


class Coordinator:
    """`should_stop()`, `request_stop(ex=None)`, `join(threads, stop_grace_period_secs)`,
    `stop_on_exception()`, `wait_for_stop(timeout)`; an exception given to request_stop (or
    raised inside stop_on_exception) is re-raised by join, as TF1's."""

    def __init__(self, clean_stop_exception_types=None):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exc_info = None
        self._clean = tuple(clean_stop_exception_types or ())
        self._threads = []

    def request_stop(self, ex=None):
        with self._lock:
            if ex is not None and self._exc_info is None and not isinstance(ex, self._clean):
                self._exc_info = ex if isinstance(ex, tuple) else (type(ex), ex,
                                                                   ex.__traceback__)
            self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def clear_stop(self):
        self._stop.clear()
        self._exc_info = None

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    def register_thread(self, thread):
        self._threads.append(thread)

    def stop_on_exception(self):
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
        threads = list(self._threads) + list(threads or [])
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()) if self.should_stop() else None)
        alive = [t.name for t in threads if t.is_alive()]
        if self._exc_info is not None:
            raise self._exc_info[1].with_traceback(self._exc_info[2])
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{', '.join(alive)}")

    @property
    def joined(self):
        return not any(t.is_alive() for t in self._threads)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection="queue_runners"):
    """Start the graph's queue runners' threads; dualgrad graphs have none unless the program
    registers objects with `create_threads(sess, coord, daemon, start)` in `collection`."""
    from .core import get_collection
    threads = []
    for qr in get_collection(collection):
        threads += qr.create_threads(sess, coord=coord, daemon=daemon, start=start)
    return threads

