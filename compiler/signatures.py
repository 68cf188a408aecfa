"""Input signatures of compiled functions: what makes a call need a new trace.

A signature is the shapes, dtypes and requires_grad of tensor arguments (nested ones too),
the values of other arguments (NumPy arrays by content, other objects and modules by
identity), grad mode, and train/eval of every module the function reaches.
"""
from __future__ import annotations

import hashlib
import inspect

import numpy as np

from dualgrad.eager.nn import Module
from dualgrad.eager.core import Tensor
from dualgrad.ops.core import engine_of

class Inline(Exception):
    """An argument is a tracer or a graph tensor: run fn as it is (nested in a trace)."""


_VALUE_TYPES = (type(None), bool, int, str, bytes, slice, type(Ellipsis), type, np.dtype)
_PLAIN = frozenset([type(None), bool, int, str, bytes])   # keyed (type, value), exact types


def signature_key(x, tensors, keep):
    """The signature part of one argument; eager tensors are collected in `tensors`."""
    if isinstance(x, Tensor):
        if engine_of(x).level > 0:   # a tracer: the call is nested in a trace
            raise Inline
        tensors.append(x)
        return (x._array.shape, x._array.dtype.str, x.requires_grad)
    if isinstance(x, _VALUE_TYPES):
        return (type(x), x)
    if isinstance(x, (float, complex, np.generic)):
        return (type(x), repr(x))      # NOTE: repr tells -0.0 from 0.0 and nan from nan
    if isinstance(x, (tuple, list)):
        if all([type(v) in _PLAIN for v in x]):   # NOTE: the common case, e.g. a tuple of ints
            return (type(x), tuple([(type(v), v) for v in x]))
        return (type(x), tuple([signature_key(v, tensors, keep) for v in x]))
    if isinstance(x, dict):
        return (dict, tuple([(repr(k), signature_key(v, tensors, keep)) for k, v in x.items()]))
    if isinstance(x, np.ndarray):
        raw = np.ascontiguousarray(x).view(np.uint8).reshape(-1)
        body = raw.tobytes() if raw.size <= 256 else hashlib.blake2b(raw).digest()
        return (np.ndarray, x.shape, x.dtype.str, body)
    if engine_of(x) is not None:
        raise Inline
    keep.append(x)   # NOTE: kept alive so that its id is not reused while the entry lives
    if isinstance(x, Module):
        return (Module, id(x), tuple([m.training for m in x.modules()]))
    return (type(x), id(x), _safe_repr(x))


def _safe_repr(x):
    try:
        return repr(x)
    except Exception:  # noqa: BLE001 - an object whose repr fails is keyed by identity only
        return ""


def tree_map(x, fn):
    """x with every eager Tensor replaced by fn(t), in the order `signature_key` collected them."""
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, tuple):
        items = [tree_map(v, fn) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, list):
        return [tree_map(v, fn) for v in x]
    if isinstance(x, dict):
        return {k: tree_map(v, fn) for k, v in x.items()}
    return x


def leaf_names(fn, args, kwargs):
    """Placeholder names for the tensor arguments, from fn's parameter names."""
    try:
        params = list(inspect.signature(fn.forward if isinstance(fn, Module) else fn).parameters)
    except (TypeError, ValueError):
        params = []
    out = []

    def walk(x, name):
        if isinstance(x, Tensor):
            out.append(name)
        elif isinstance(x, (tuple, list)):
            for j, v in enumerate(x):
                walk(v, f"{name}_{j}")
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{name}_{k}")
    for i, a in enumerate(args):
        walk(a, params[i] if i < len(params) else f"arg{i}")
    for k, v in kwargs.items():
        walk(v, k)
    return out


def modules_reached(fn):
    """Modules whose train/eval mode the function can see: the module itself, a bound
    method's object (and the modules among its attributes), closure cells and globals."""
    roots = []
    if isinstance(fn, Module):
        roots.append(fn)
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    if isinstance(owner, Module):
        roots.append(owner)
    elif owner is not None and hasattr(owner, "__dict__"):
        roots += [v for v in vars(owner).values() if isinstance(v, Module)]
    for cell in getattr(func, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if isinstance(v, Module):
            roots.append(v)
    code, glob = getattr(func, "__code__", None), getattr(func, "__globals__", {})
    for name in code.co_names if code is not None else ():
        if isinstance(glob.get(name), Module):
            roots.append(glob[name])
    seen, mods = set(), []
    for r in roots:
        for m in r.modules():
            if id(m) not in seen:
                seen.add(id(m))
                mods.append(m)
    return roots, mods


def describe(args, kwargs, key):
    """One readable line for a signature: argument specs and values, grad and train modes."""
    def one(x):
        if isinstance(x, Tensor):
            return f"{x.dtype}{list(x.shape)}" + (" requires_grad" if x.requires_grad else "")
        if isinstance(x, (tuple, list)):
            inner = ", ".join(one(v) for v in x)
            return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
        text = _safe_repr(x)
        return text if len(text) <= 40 else text[:37] + "..."
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    grad_mode, training = key[0], key[1]
    line = f"({', '.join(parts)}) grad {'on' if grad_mode else 'off'}"
    if training:
        line += ", train" if all(training) else ", eval" if not any(training) else \
            f", training flags {training}"
    return line
