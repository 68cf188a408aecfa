"""eager.save / eager.load: state dicts in the safetensors format, never pickle.

A safetensors file is a JSON header plus raw little-endian buffers: loading it cannot run
code, so a checkpoint from a stranger is safe to open. Writes are atomic (temporary file in
the same folder, then rename), so a crash never leaves a half-written checkpoint.

>>> import tempfile, os
>>> from dualgrad import eager
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> eager.save({"w": eager.ones(2)}, path)
>>> eager.load(path)["w"]
tensor([1., 1.], shape=(2,), dtype=float32)
"""
from __future__ import annotations

import os
import tempfile
from collections import OrderedDict

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from .tensor import Tensor


def save(state_dict, path):
    """Write a mapping name -> Tensor (or ndarray) to `path` as safetensors, atomically."""
    if not hasattr(state_dict, "items"):
        raise TypeError(f"eager.save expects a dict of name -> tensor (e.g. "
                        f"model.state_dict()), got {type(state_dict).__name__}")
    arrays = {}
    for name, value in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"eager.save: keys must be strings, got {name!r}")
        arr = value.data if isinstance(value, Tensor) else value
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"eager.save: {name!r} is a {type(value).__name__}, not a tensor; "
                            f"only tensors are stored (safetensors holds no Python objects)")
        # NOTE: not np.ascontiguousarray, which turns a 0-d array into shape (1,)
        arrays[name] = arr if arr.flags.c_contiguous else arr.copy(order="C")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=folder)
    os.close(fd)
    try:
        save_file(arrays, tmp, metadata={"format": "dualgrad-state-dict"})
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load(path):
    """Read a safetensors file into an ordered dict name -> Tensor; anything else is refused."""
    path = os.fspath(path)
    try:
        arrays = load_file(path)
    except (SafetensorError, ValueError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"eager.load: {path} is not a valid safetensors file ({e}). dualgrad "
                         f"only reads safetensors and never unpickles, so a pickle-based "
                         f"checkpoint (e.g. from torch.save) cannot be loaded.") from None
    return OrderedDict((k, Tensor(v)) for k, v in arrays.items())
