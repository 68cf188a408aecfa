"""Keep freed large arrays in the heap, so the next one of that size costs no page faults.

On this machine kind a fresh 16 MiB array costs 7-9 ms of page faults against 0.6 ms to
write a reused one (shared/peers/RESULTS.md, conclusion 5). The plan's buffer pass reuses
its own intermediates, but an array handed back by `Session.run` must be fresh every run;
whether glibc recycles the previous one or maps new pages depends on its dynamic mmap and
trim thresholds, i.e. on the process's allocation history. The first optimised plan pins
them (mmap threshold 64 MiB, no trim), as a caching allocator would. Set
DUALGRAD_MALLOC=glibc to leave glibc's defaults alone.
"""
from __future__ import annotations

import ctypes
import os

_STATE = {"mode": None}
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def pin_malloc() -> str:
    """Pin glibc's thresholds once per process; returns the mode in force."""
    if _STATE["mode"] is not None:
        return _STATE["mode"]
    mode = os.environ.get("DUALGRAD_MALLOC", "pinned")
    if mode != "glibc":
        try:
            libc = ctypes.CDLL("libc.so.6")
            ok = libc.mallopt(_M_MMAP_THRESHOLD, 64 << 20) and \
                libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
            mode = "pinned" if ok else "glibc (mallopt refused)"
        except (OSError, AttributeError):
            mode = "glibc (no libc.so.6)"
    _STATE["mode"] = mode
    return mode
