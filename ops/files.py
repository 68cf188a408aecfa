"""Atomic file writes, shared by eager.save and graph.save / train.Saver; safetensors reads
shared by eager.load and graph.load / restore.

`atomic_path(path)` yields a temporary path in the same folder; the caller writes the whole
file there, and only when that succeeded is it renamed over `path` (os.replace is atomic on
one filesystem), so a process killed mid-save leaves the previous file intact. On any
exception the temporary is removed. A temporary left by a process that was killed outright
(`.NAME.PID.RANDOM.dualgrad-tmp`) is removed by the next save to the same path once its
process is gone (or after a day).
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time

SUFFIX = ".dualgrad-tmp"
STALE_SECONDS = 24 * 3600


@contextlib.contextmanager
def atomic_path(path):
    """`with atomic_path("model.json") as tmp: write(tmp)` -> model.json appears whole."""
    with atomic_paths(path) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_paths(*paths):
    """Several files: all are written to temporaries first, then renamed one after another
    (the window in which only some are new is the renames, never a partial write)."""
    with contextlib.ExitStack() as stack:
        tmps = [stack.enter_context(_deferred(p)) for p in paths]
        yield [t[0] for t in tmps]
        for tmp, path in tmps:
            os.replace(tmp, path)


@contextlib.contextmanager
def _deferred(path):
    path = os.path.abspath(os.fspath(path))
    folder, base = os.path.split(path)
    remove_stale(folder, base)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{os.getpid()}.", suffix=SUFFIX, dir=folder)
    os.close(fd)
    try:
        yield tmp, path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)        # NOTE: gone already when it was renamed into place


def remove_stale(folder, base):
    """Delete temporaries of ours for `base` whose writing process no longer runs."""
    pattern = re.compile(re.escape(f".{base}.") + r"(\d+)\.[^.]+" + re.escape(SUFFIX) + "$")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m is None:
            continue
        full = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            if not _alive(int(m.group(1))) or \
                    time.time() - os.stat(full).st_mtime > STALE_SECONDS:
                os.unlink(full)


def _alive(pid) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True        # NOTE: it exists but is someone else's
    return True


# -- reading safetensors: refuse what NumPy cannot hold, by name ------------------------------
NUMPY_DTYPES = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "F32",
                "F64"}
_NAMES = {"BF16": "bfloat16", "F8_E4M3": "float8_e4m3", "F8_E5M2": "float8_e5m2"}


class UnreadableWeights(ValueError):
    """A safetensors file holds a tensor NumPy (so dualgrad) has no dtype for (bfloat16, the
    float8 formats): each loader reports it as its own error, naming the file."""


def read_safetensors(path):
    """(arrays, metadata) of a safetensors file; raises UnreadableWeights naming the first
    tensors whose dtype NumPy lacks, before reading any data."""
    from safetensors import safe_open
    from safetensors.numpy import load_file
    with safe_open(path, "np") as handle:
        metadata = handle.metadata() or {}
        bad = [(k, handle.get_slice(k).get_dtype()) for k in handle.keys()]
    bad = [(k, d) for k, d in bad if d not in NUMPY_DTYPES]
    if bad:
        names = ", ".join(f"{k!r} ({_NAMES.get(d, d)})" for k, d in bad[:3]) + \
            (" …" if len(bad) > 3 else "")
        raise UnreadableWeights(
            f"tensor {names} has a dtype NumPy cannot hold; dualgrad reads bool, (u)int8-64 "
            f"and float16/32/64 (convert first, e.g. torch's t.float())")
    return load_file(path), metadata
