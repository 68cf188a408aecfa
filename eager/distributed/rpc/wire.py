"""What RPC messages carry, and how: a JSON header plus raw array bytes, never pickle.

A message is `<8-byte little-endian header length><JSON header><bytes of each buffer>`. The
JSON describes the value as a tree of tagged nodes; tensor, array and bytes data are kept out
of the JSON, as buffers laid end to end after it:

- None, bool, int, float (nan and inf too) and str as JSON's own;
- lists, tuples and dicts (any keys that are themselves sendable), recursively;
- eager tensors and parameters with their dtype, shape and requires_grad (the data copied,
  without a grad or an autograd history, as torch sends them), NumPy arrays and NumPy
  scalars with their dtype, `bytes`;
- functions, classes and other module-level objects by reference: their module and qualified
  name, imported on the receiving side (the job's processes run the same code, `__main__`
  included, so a function of the launched script is found by the same name);
- RRefs by owner and id, WorkerInfo by name and id.

Anything else (an arbitrary object, a lambda, a nested function, a bound method of an
instance) raises TypeError naming it and what can be sent.
"""
from __future__ import annotations

import importlib
import json
import struct

import numpy as np

from dualgrad.ops.rules import bfloat16, is_bfloat16
from ...core import Tensor
from ...nn import Parameter

SENDABLE = ("tensors, NumPy arrays and scalars, None, bool, int, float, str, bytes, lists, "
            "tuples and dicts of these, RRefs, WorkerInfo, and module-level functions and "
            "classes (by reference)")


class Codec:
    """Encoder and decoder of one agent: it knows how RRefs and WorkerInfo are rebuilt."""

    def __init__(self, make_rref, make_worker):
        self.make_rref, self.make_worker = make_rref, make_worker

    # -- to bytes ---------------------------------------------------------------------------
    def dumps(self, head, value, what, sent=None):
        """The message bytes: `head` a dict of plain JSON values, `value` anything sendable;
        the tensors that require grad are appended to `sent` (a list), in order."""
        bufs = []
        tree = self._enc(value, (bufs, sent), what)
        meta = json.dumps({"head": head, "sizes": [b.nbytes for b in bufs], "value": tree},
                          separators=(",", ":")).encode()
        parts = [struct.pack("<Q", len(meta)), meta] + [b.tobytes() for b in bufs]
        return np.frombuffer(b"".join(parts), np.uint8)

    def _enc(self, x, out, what):
        bufs, sent = out
        if isinstance(x, np.generic):
            return {"npscalar": _array(np.asarray(x), bufs, what)}
        if x is None or type(x) in (bool, int, float, str):
            return x
        if isinstance(x, (list, tuple)):
            return {"list" if isinstance(x, list) else "tuple":
                    [self._enc(v, out, what) for v in x]}
        if isinstance(x, dict):
            return {"dict": [[self._enc(k, out, what), self._enc(v, out, what)]
                             for k, v in x.items()]}
        if isinstance(x, Tensor):
            if x.requires_grad and sent is not None:
                sent.append(x)
            return {"tensor": _array(x._array, bufs, what), "grad": bool(x.requires_grad),
                    "param": isinstance(x, Parameter)}
        if isinstance(x, np.ndarray):
            return {"ndarray": _array(x, bufs, what)}
        if isinstance(x, (bytes, bytearray)):
            bufs.append(np.frombuffer(bytes(x), np.uint8))
            return {"bytes": len(bufs) - 1}
        tag = getattr(x, "_rpc_tag", None)
        if tag is not None:
            return tag()
        return {"ref": reference(x, what)}

    # -- from bytes -------------------------------------------------------------------------
    def loads(self, data):
        """(head, a function that decodes the value): a value that fails to decode (a
        function its module lacks) still leaves the head to answer with. decode(got) appends
        the tensors that require grad to the list `got`, in the order dumps met them."""
        data = memoryview(data)
        (n,) = struct.unpack("<Q", data[:8])
        meta = json.loads(bytes(data[8:8 + n]))
        bufs, start = [], 8 + n
        for size in meta["sizes"]:
            bufs.append(data[start:start + size])
            start += size
        return meta["head"], lambda got=None: self._dec(meta["value"], (bufs, got))

    def _dec(self, x, into):
        if not isinstance(x, dict):
            return x
        bufs, got = into
        tag, v = next(iter(x.items()))
        if tag in ("list", "tuple"):
            out = [self._dec(e, into) for e in v]
            return out if tag == "list" else tuple(out)
        if tag == "dict":
            return {self._dec(k, into): self._dec(e, into) for k, e in v}
        if tag == "tensor":
            cls = Parameter if x["param"] else Tensor
            t = cls(_from(v, bufs), requires_grad=x["grad"])
            if x["grad"] and got is not None:
                got.append(t)
            return t
        if tag == "ndarray":
            return _from(v, bufs)
        if tag == "npscalar":
            return _from(v, bufs)[()]
        if tag == "bytes":
            return bytes(bufs[v])
        if tag == "rref":
            return self.make_rref(*v)
        if tag == "worker":
            return self.make_worker(*v)
        if tag == "ref":
            return resolve(v)
        raise ValueError(f"rpc: a message holds an unknown node {tag!r}")


def _array(arr, bufs, what):
    if arr.dtype.kind in "OV" and not is_bfloat16(arr.dtype):
        raise TypeError(f"{what}: cannot send an array of dtype {arr.dtype} (Python objects or "
                        f"records); RPC sends {SENDABLE}")
    bufs.append(np.ascontiguousarray(arr))
    name = "bfloat16" if is_bfloat16(arr.dtype) else arr.dtype.str
    return [len(bufs) - 1, name, list(arr.shape)]


def _from(spec, bufs):
    index, dtype, shape = spec
    return np.frombuffer(bufs[index], _dtype(dtype)).reshape(shape).copy()


def _dtype(name):
    if name == "bfloat16":
        return bfloat16()
    dt = np.dtype(name)
    if dt.kind in "OV":
        raise ValueError(f"rpc: a message holds an array of dtype {dt}")
    return dt


def reference(obj, what):
    """'module:qualname' of a module-level function or class (what travels instead of it)."""
    owner = getattr(obj, "__self__", None)
    if owner is not None and not isinstance(owner, type) and not _is_module(owner):
        raise TypeError(f"{what}: cannot send the bound method {obj!r}: RPC sends functions by "
                        f"reference; pass the instance through an RRef (rpc.remote) or send "
                        f"the class's function and the data. RPC sends {SENDABLE}")
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(owner, type):
        module, qualname = owner.__module__, f"{owner.__qualname__}.{obj.__name__}"
    if not (callable(obj) or isinstance(obj, type)) or module is None or qualname is None:
        raise TypeError(f"{what}: cannot send a {type(obj).__name__} ({obj!r:.60}): dualgrad's "
                        f"RPC uses no pickle; it sends {SENDABLE}")
    if "<" in qualname:
        raise TypeError(f"{what}: cannot send {qualname} of {module}: a lambda or a function "
                        f"defined inside another is not importable by name on the callee; "
                        f"define it at module level")
    for ref in (f"{module}:{qualname}", *(f"{m}:{qualname}" for m in _PUBLIC)):
        try:
            if resolve(ref) is obj:
                return ref
        except (ImportError, AttributeError):
            pass
    raise TypeError(f"{what}: cannot send {qualname}: it is not reachable as {module}."
                    f"{qualname}, the name the callee would import")


# NOTE: where a function made by a factory (an op's torch-style function) is found by name
_PUBLIC = ("dualgrad.eager", "dualgrad.eager.nn.functional", "dualgrad.eager.special",
           "dualgrad.eager.linalg", "dualgrad.eager.fft")


def _is_module(x):
    return type(x).__name__ == "module"


def resolve(ref):
    """The object 'module:qualname' names (imported if needed)."""
    module, _, qualname = ref.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
