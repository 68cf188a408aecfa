"""Atomic file writes, shared by eager.save and graph.save / train.Saver; safetensors reads
shared by eager.load and graph.load / restore.

`atomic_path(path)` yields a temporary path in the same folder; the caller writes the whole
file there, and only when that succeeded is it renamed over `path` (os.replace is atomic on
one filesystem), so a process killed mid-save leaves the previous file intact. On any
exception the temporary is removed. A temporary left by a process that was killed outright
(`.NAME.PID.RANDOM.dualgrad-tmp`) is removed by the next save to the same path once its
process is gone (or after a day).

`write_safetensors` writes the safetensors format itself, straight into our temporary and
fsync'ed before the rename: the safetensors library's own writer goes through a temporary of
its own (`.tmpXXXXXX`, as large as the checkpoint) that a killed process leaves behind and
that no one can tell apart from another program's. Such a leftover of an older dualgrad is
removed by the next save into that folder when its header says it is one of our formats and
it has not changed for STALE_LIBRARY_SECONDS.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import struct
import tempfile
import time

import numpy as np

from .rules import bfloat16, is_bfloat16

SUFFIX = ".dualgrad-tmp"
STALE_SECONDS = 24 * 3600
STALE_LIBRARY_SECONDS = 600
OUR_FORMATS = ("dualgrad-state-dict", "dualgrad-tree", "dualgrad.graph")


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
        for folder in {os.path.dirname(path) for _, path in tmps}:
            _fsync_dir(folder)


def _fsync_dir(folder):
    """Make the renames durable (a crash right after save keeps the new name)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _deferred(path):
    path = os.path.abspath(os.fspath(path))
    folder, base = os.path.split(path)
    remove_stale(folder, base)
    remove_stale_library_temporaries(folder)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.{os.getpid()}.", suffix=SUFFIX, dir=folder)
        _WRITING.add(tmp)
        os.close(fd)
        yield tmp, path
    finally:
        if tmp is not None:
            _WRITING.discard(tmp)     # NOTE: first: interrupted before the unlink, it is stale
            with contextlib.suppress(OSError):
                os.unlink(tmp)        # NOTE: gone already when it was renamed into place


_WRITING: set = set()     # temporaries this process is writing now (any other of ours is stale)


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
            if full not in _WRITING and int(m.group(1)) == os.getpid() or \
                    not _alive(int(m.group(1))) or \
                    time.time() - os.stat(full).st_mtime > STALE_SECONDS:
                os.unlink(full)


_LIBRARY_TMP = re.compile(r"\.tmp[A-Za-z0-9]{6}$")


def remove_stale_library_temporaries(folder, now=None):
    """Delete the safetensors library's temporaries (`.tmpXXXXXX`) that an older dualgrad's
    killed save left: only those whose header names one of our formats and that nobody has
    written to for STALE_LIBRARY_SECONDS (a live writer touches its file continuously)."""
    now = time.time() if now is None else now
    try:
        names = [n for n in os.listdir(folder) if _LIBRARY_TMP.match(n)]
    except OSError:
        return
    for name in names:
        full = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            if now - os.stat(full).st_mtime > STALE_LIBRARY_SECONDS and _ours(full):
                os.unlink(full)


def _ours(path) -> bool:
    """Whether a file starts with a safetensors header whose metadata is a dualgrad format."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            return False
        (n,) = struct.unpack("<Q", raw)
        if n > 100 * 2 ** 20:
            return False
        try:
            header = json.loads(f.read(n))
        except (ValueError, RecursionError):
            return False
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return isinstance(meta, dict) and meta.get("format") in OUR_FORMATS


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
                "F64", "BF16", "C64"}
_NAMES = {"F8_E4M3": "float8_e4m3", "F8_E5M2": "float8_e5m2"}


class UnreadableWeights(ValueError):
    """A safetensors file holds a tensor dualgrad has no dtype for (the float8 formats): each
    loader reports it as its own error, naming the file."""


def read_safetensors(path):
    """(arrays, metadata) of a safetensors file; raises UnreadableWeights naming the first
    tensors whose dtype NumPy lacks, before reading any data."""
    from safetensors import safe_open
    from safetensors.numpy import load_file
    with safe_open(path, "np") as handle:
        metadata = handle.metadata() or {}
        dtypes = [(k, handle.get_slice(k).get_dtype()) for k in handle.keys()]
    _refuse_dtypes(dtypes)
    if any(d == "BF16" for _, d in dtypes):
        with open(path, "rb") as f:
            return _read_raw(f.read()), metadata
    return load_file(path), metadata


def read_safetensors_bytes(data):
    """(arrays, metadata) of safetensors bytes (read from a stream), as read_safetensors."""
    from safetensors.numpy import load
    if len(data) < 8:
        raise ValueError("fewer than 8 bytes: no safetensors header")
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", None) or {}
    dtypes = [(k, v["dtype"]) for k, v in header.items()]
    _refuse_dtypes(dtypes)
    if any(d == "BF16" for _, d in dtypes):
        return _read_raw(bytes(data)), metadata
    return load(bytes(data)), metadata


def _refuse_dtypes(dtypes):
    bad = [(k, d) for k, d in dtypes if d not in NUMPY_DTYPES]
    if bad:
        names = ", ".join(f"{k!r} ({_NAMES.get(d, d)})" for k, d in bad[:3]) + \
            (" …" if len(bad) > 3 else "")
        raise UnreadableWeights(
            f"tensor {names} has a dtype NumPy cannot hold; dualgrad reads bool, (u)int8-64, "
            f"bfloat16, float16/32/64 and complex64 (convert first, e.g. torch's t.float())")


def _read_raw(data):
    """Every tensor of safetensors bytes read from its header: the safetensors library's
    NumPy reader knows no bfloat16 (ml_dtypes' is a NumPy dtype all the same)."""
    names = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8,
             "U16": np.uint16, "I16": np.int16, "U32": np.uint32, "I32": np.int32,
             "U64": np.uint64, "I64": np.int64, "F16": np.float16, "F32": np.float32,
             "F64": np.float64, "C64": np.complex64}
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = memoryview(data)[8 + n:]
    out = {}
    for k, v in header.items():
        a, b = v["data_offsets"]
        dt = bfloat16() if v["dtype"] == "BF16" else names[v["dtype"]]
        out[k] = np.frombuffer(body[a:b], dtype=dt).reshape(v["shape"]).copy()
    return out


# -- writing safetensors ourselves: no library temporary, fsync'ed ----------------------------
_DTYPE_NAMES = {"b": "BOOL", "u1": "U8", "i1": "I8", "u2": "U16", "i2": "I16", "u4": "U32",
                "i4": "I32", "u8": "U64", "i8": "I64", "f2": "F16", "f4": "F32", "f8": "F64",
                "c8": "C64"}


def _dtype_name(name, arr):
    if is_bfloat16(arr.dtype):
        return "BF16"
    key = "b" if arr.dtype.kind == "b" else f"{arr.dtype.kind}{arr.dtype.itemsize}"
    if key not in _DTYPE_NAMES:
        raise TypeError(f"safetensors cannot store {name!r}: dtype {arr.dtype} (it stores "
                        f"bool, (u)int8-64, float16/32/64 and complex64)")
    return _DTYPE_NAMES[key]


def safetensors_header(arrays, metadata=None) -> bytes:
    """The 8-byte length and the JSON header (padded to 8 bytes) for arrays laid out in order."""
    header = {"__metadata__": dict(metadata)} if metadata else {}
    start = 0
    for name, arr in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors: tensor names are strings, got {name!r}")
        header[name] = {"dtype": _dtype_name(name, arr), "shape": list(arr.shape),
                        "data_offsets": [start, start + arr.nbytes]}
        start += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def write_safetensors(path, arrays, metadata=None):
    """Write {name: array} (+ string metadata) as a safetensors file at `path` (the caller's
    temporary), streaming each array's bytes, then fsync. No extra copy of the data."""
    with open(path, "wb") as f:
        stream_safetensors(f, arrays, metadata)
        f.flush()
        os.fsync(f.fileno())


def stream_safetensors(f, arrays, metadata=None):
    """The safetensors bytes of {name: array} written to the binary stream f (a file, or an
    io.BytesIO as torch.save accepts)."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    f.write(safetensors_header(arrays, metadata))
    for arr in arrays.values():
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        if arr.size:
            f.write(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data)
