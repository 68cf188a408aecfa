"""Opt-in: keep freed large arrays in glibc's heap, so the next one of that size costs no
page faults.

A fresh 16 MiB array costs 7-9 ms of page faults on this project's machine kind against
0.6 ms to rewrite a reused one. The plan's buffer pass reuses its own intermediates, but an
array handed back by `Session.run` must be fresh every run; whether glibc recycles the
previous one or maps new pages depends on its dynamic mmap and trim thresholds, i.e. on the
process's allocation history. `pin_malloc()` pins them (mmap threshold 64 MiB, no trim), as
a caching allocator would.

That is a process-wide setting, so the library never makes it behind the user's back: call
`compiler.pin_malloc()` yourself, or set DUALGRAD_MALLOC=pinned to have the first optimised
plan do it. `dualgrad bench` pins for every column it times (DUALGRAD_MALLOC=glibc stops it).
docs/compiler.md ("Memory") has what it buys, measured.
"""
from __future__ import annotations

import ctypes
import os
import threading

_STATE = {"mode": None}
_LOCK = threading.Lock()
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def pin_malloc() -> str:
    """Pin glibc's thresholds for this process (once) unless DUALGRAD_MALLOC=glibc; returns
    the mode in force: "pinned", "glibc", or why pinning was not possible."""
    with _LOCK:
        if _STATE["mode"] is None:
            _STATE["mode"] = "glibc" if os.environ.get("DUALGRAD_MALLOC") == "glibc" else _pin()
        return _STATE["mode"]


def pin_if_asked() -> str | None:
    """What the optimiser calls: pins only when the user set DUALGRAD_MALLOC=pinned."""
    return pin_malloc() if os.environ.get("DUALGRAD_MALLOC") == "pinned" else malloc_mode()


def malloc_mode() -> str | None:
    """The mode this process is in: None while dualgrad has not touched the allocator."""
    return _STATE["mode"]


def _pin() -> str:
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(_M_MMAP_THRESHOLD, 64 << 20) and \
            libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
        return "pinned" if ok else "glibc (mallopt refused)"
    except (OSError, AttributeError):
        return "glibc (no libc.so.6)"
