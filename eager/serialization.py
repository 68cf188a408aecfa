"""eager.save / eager.load: checkpoints in the safetensors format, never pickle.

A safetensors file is a JSON header plus raw little-endian buffers: loading it cannot run
code, so a checkpoint from a stranger is safe to open. Writes are atomic (temporary file in
the same folder, then rename), so a crash never leaves a half-written checkpoint.

What `torch.save` scripts hand over is stored whatever the file's extension (`model.pt`):
a flat dict of tensors (`model.state_dict()`) is a plain safetensors file that any
safetensors reader opens; anything nested (an optimizer's `state_dict()`, a checkpoint dict
with an epoch number and several state dicts) keeps its tensors as safetensors entries and
its structure - dicts, lists, tuples, torch.Size, numbers, strings, None - as JSON in the header's
metadata. Objects that only pickle could store (a Module, a function) are refused.

Every tensor of a nested object is stored under a name of its own: its path of keys
(`state.0.exp_avg`) or, when two paths spell the same name (the keys `0` and `"0"`,
`{"enc": {"proj.weight": a}, "enc.proj": {"weight": b}}`), that path with `#1`, `#2`, ...
added; the structure refers to tensors by these names, so what is saved loads back as it
was, as with torch.save. A file that is not what `save` writes (truncated, tampered with,
nested more than MAX_DEPTH levels) raises ValueError naming the file and what is wrong,
never another exception.

>>> import tempfile, os
>>> from dualgrad import eager
>>> path = os.path.join(tempfile.mkdtemp(), "w.pt")
>>> eager.save({"w": eager.ones(2)}, path)
>>> eager.load(path)["w"]
tensor([1., 1.])
>>> eager.save({"epoch": 3, "state": {0: {"step": eager.tensor(3.0)}}}, path)
>>> eager.load(path)["state"][0]["step"]
tensor(3.)
"""
from __future__ import annotations

import json
import os
from collections import OrderedDict

import numpy as np
from safetensors import SafetensorError

from dualgrad.ops.files import UnreadableWeights, atomic_path, read_safetensors, \
    read_safetensors_bytes, stream_safetensors, write_safetensors

from .devices import check as check_device
from .core import Tensor
from .size import Size


def _flat_tensors(obj):
    """{name: array} when obj is a mapping of str -> tensor/array only, else None."""
    if not hasattr(obj, "items") or not obj:
        return None
    out = {}
    for k, v in obj.items():
        arr = v._array if isinstance(v, Tensor) else v
        if not isinstance(k, str) or not isinstance(arr, np.ndarray):
            return None
        out[k] = arr
    return out


def _contiguous(arr):
    # NOTE: not np.ascontiguousarray, which turns a 0-d array into shape (1,)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


MAX_DEPTH = 100     # how deep a saved object may nest (an optimizer's state dict: 4 levels)


def _unique(name, arrays):
    """name, or name#1, name#2, ... : the first that no tensor of this file has yet."""
    if name not in arrays:
        return name
    i = 1
    while f"{name}#{i}" in arrays:
        i += 1
    return f"{name}#{i}"


def _encode(obj, arrays, where, depth=0):
    """The JSON form of obj; each tensor becomes an entry of `arrays`, named by its path."""
    if depth > MAX_DEPTH:
        raise ValueError(f"eager.save: {where} is nested more than {MAX_DEPTH} levels deep")
    if isinstance(obj, (Tensor, np.ndarray)):
        arr = obj._array if isinstance(obj, Tensor) else obj
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"eager.save: {where} holds an array of {arr.dtype}, which "
                            f"safetensors cannot store")
        name = _unique(where, arrays)
        arrays[name] = _contiguous(arr)
        return {"tensor": name}
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return {"int": int(obj)}
    if isinstance(obj, (float, np.floating)):
        return {"float": repr(float(obj))}       # repr keeps inf, nan and every digit
    if isinstance(obj, Size):   # NOTE: x.shape saved comes back a torch.Size, as torch's
        return {"size": [int(d) for d in obj]}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays, f"{where}.{i}" if where else str(i), depth + 1)
                 for i, v in enumerate(obj)]
        return {"tuple" if isinstance(obj, tuple) else "list": items}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"eager.save: keys must be strings or integers, got {k!r} "
                                f"in {where}")
            items.append([k, _encode(v, arrays, f"{where}.{k}" if where else str(k), depth + 1)])
        return {"dict": items, "ordered": isinstance(obj, OrderedDict)}
    raise TypeError(f"eager.save: {where or 'the object'} is a {type(obj).__name__}, which "
                    f"safetensors cannot store (it holds tensors, numbers, strings, None and "
                    f"dicts/lists of them; dualgrad never pickles). Save model.state_dict() "
                    f"rather than the model.")


class _Malformed(ValueError):
    """What is wrong with a tree; load() names the file."""


def _decode(node, arrays, depth=0):
    if node is None or isinstance(node, (bool, str)):
        return node
    if depth > MAX_DEPTH:
        raise _Malformed(f"the object is nested more than {MAX_DEPTH} levels deep")
    kind, value = _kind(node)
    if kind == "tensor":
        if not isinstance(value, str) or value not in arrays:
            raise _Malformed(f"the structure refers to tensor {str(value)[:80]!r}, which is "
                             f"not in the file")
        return Tensor(arrays[value])
    if kind == "int" and type(value) is int:
        return value
    if kind == "float" and isinstance(value, str):
        return _float(value)
    if kind == "size" and isinstance(value, list) and all(type(d) is int for d in value):
        return Size(value)
    if kind in ("list", "tuple") and isinstance(value, list):
        items = [_decode(v, arrays, depth + 1) for v in value]
        return items if kind == "list" else tuple(items)
    if kind == "dict" and isinstance(value, list):
        pairs = [(_key(p), _decode(p[1], arrays, depth + 1)) for p in value]
        return OrderedDict(pairs) if node.get("ordered") else dict(pairs)
    raise _Malformed(f"a {kind!r} entry holds a {type(value).__name__}")


def _kind(node):
    """The one (kind, value) of an encoded node ("ordered" rides along with "dict")."""
    keys = [k for k in node if k != "ordered"] if isinstance(node, dict) else None
    if keys is None or len(keys) != 1 or keys[0] not in _KINDS:
        raise _Malformed(f"an entry is a {type(node).__name__}"
                         f"{' with keys ' + str(keys)[:80] if keys else ''}, not one of "
                         f"{', '.join(_KINDS)}")
    return keys[0], node[keys[0]]


_KINDS = ("tensor", "int", "float", "list", "tuple", "size", "dict")


def _key(pair):
    if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) in (int, str)):
        raise _Malformed(f"a dict item is not a [key, value] pair with a string or integer "
                         f"key (found a {type(pair).__name__})")
    return pair[0]


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise _Malformed(f"{text[:80]!r} is not a float") from None


def save(obj, f):
    """Write `obj` (a state dict, an optimizer's state dict, a checkpoint dict, a tensor) to
    the path `f` as safetensors, atomically, whatever the extension; or to `f`'s `write` (a
    binary stream such as io.BytesIO, as torch.save takes)."""
    arrays = _flat_tensors(obj)
    metadata = {"format": "dualgrad-state-dict"}
    if arrays is None:
        arrays = {}
        metadata = {"format": "dualgrad-tree",
                    "tree": json.dumps(_encode(obj, arrays, ""))}
    else:
        arrays = {k: _contiguous(v) for k, v in arrays.items()}
    if hasattr(f, "write"):
        stream_safetensors(f, arrays, metadata)
        return
    _write_atomic(arrays, os.fspath(f), metadata)


def _write_atomic(arrays, path, metadata):
    with atomic_path(path) as tmp:
        write_safetensors(tmp, arrays, metadata=metadata)


def load(f, map_location=None, weights_only=True, **kwargs):
    """Read what `save` wrote: tensors come back as Tensors, the structure as it was.

    `map_location` may name the CPU (anything else raises PyTorch's CPU-only error);
    `weights_only` is accepted for PyTorch's signature: nothing is ever unpickled.
    """
    if map_location is not None and not callable(map_location) \
            and not isinstance(map_location, dict):
        check_device(map_location)
    path = repr(f) if hasattr(f, "read") else os.fspath(f)
    try:
        arrays, metadata = read_safetensors_bytes(f.read()) if hasattr(f, "read") else \
            read_safetensors(path)
    except UnreadableWeights as e:
        raise ValueError(f"eager.load: {path}: {e}") from None
    except (SafetensorError, ValueError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"eager.load: {path} is not a valid safetensors file ({e}). dualgrad "
                         f"only reads safetensors and never unpickles, so a pickle-based "
                         f"checkpoint (e.g. from torch.save) cannot be loaded.") from None
    if metadata.get("format") == "dualgrad-tree":
        try:
            return _decode(_tree(metadata), arrays)
        except _Malformed as e:
            raise ValueError(f"eager.load: {path} is not a checkpoint eager.save wrote: "
                             f"{e}") from None
    return OrderedDict((k, Tensor(v)) for k, v in arrays.items())


def _tree(metadata):
    text = metadata.get("tree")
    if not isinstance(text, str):
        raise _Malformed("its header says it holds a nested object but has no 'tree'")
    try:
        return json.loads(text)
    except ValueError as e:
        raise _Malformed(f"its 'tree' is not JSON ({e})") from None
    except RecursionError:
        raise _Malformed("its 'tree' is nested too deeply to read") from None


class safe_globals:  # noqa: N801 - torch's name
    """torch.serialization.safe_globals(classes): the classes torch's `load` may unpickle
    inside the `with`. dualgrad's `load` never unpickles (safetensors only), so there is
    nothing to allow: the context changes nothing, and a pickle still raises."""

    def __init__(self, safe_globals):
        self.globals = list(safe_globals)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def add_safe_globals(safe_globals):
    """As safe_globals: nothing to allow, since dualgrad never unpickles."""
