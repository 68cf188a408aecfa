"""Input signatures of compiled functions: what makes a call need a new trace.

A signature is the shapes, dtypes and requires_grad of tensor arguments (nested ones too),
the values of other arguments (NumPy arrays by content, other objects and modules by
identity), grad mode, and train/eval of every module the function reaches.
"""
from __future__ import annotations

import hashlib
import inspect
import types
from operator import itemgetter

import numpy as np

from dualgrad.eager.nn import STATE_VERSION, Module
from dualgrad.eager.core import Tensor, array_of
from dualgrad.eager.size import Size
from dualgrad.ops.core import engine_of
from dualgrad.ops.dtypes import DTypeBase

class Inline(Exception):
    """An argument is a tracer or a graph tensor: run fn as it is (nested in a trace)."""


_VALUE_TYPES = (type(None), bool, int, str, bytes, slice, type(Ellipsis), type, np.dtype,
                DTypeBase)   # NOTE: torch.float16 as an argument is a value
_PLAIN = frozenset([type(None), bool, int, str, bytes])   # keyed (type, value), exact types


def signature_key(x, tensors, keep):
    """The signature part of one argument; eager tensors are collected in `tensors`."""
    if isinstance(x, Tensor):
        if engine_of(x).level > 0:   # a tracer: the call is nested in a trace
            raise Inline
        tensors.append(x)
        a = array_of(x)
        return (a.shape, a.dtype.str, x.requires_grad)
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


_PLAIN_ATTR = (bool, int, float, str, type(None))
_TUPLES = (tuple, Size)   # NOTE: a module's `self.shape = x.shape` is a Size


def _plain(v):
    return type(v) in _PLAIN_ATTR or type(v) in _TUPLES and all([type(x) in _PLAIN_ATTR
                                                                 for x in v])


class ModuleState:
    """What a trace of the modules' forwards depends on besides tensor values, read at every
    call (`now()`): each module's plain attributes (`training`, `Dropout.p`, `self.scale`:
    numbers, strings, None, tuples of them; the names are taken when the module is added)
    and which tensors are its buffers and parameters (a reassigned buffer is another input).
    NOTE: re-read only when a module's attributes moved (eager.nn.STATE_VERSION, which
    Module.__setattr__, train() and register_* bump); `now()` is a small int token, so the
    signature hashes fast."""

    def __init__(self, modules=()):
        self.modules, self._parts, self._getters, self._dicts = [], [], [], []
        self._tokens, self._states, self._version, self._token = {}, [], None, None
        self.add(modules)

    def add(self, modules):
        for m in modules:
            d = m.__dict__
            names = tuple([k for k, v in d.items() if _plain(v)])
            self.modules.append(m)
            self._parts.append((d, names))
            # NOTE: one C call per module for its plain values, one per tensor dict
            self._getters.append((itemgetter(*names) if names else _nothing, d))
            for k in ("_buffers", "_parameters"):
                if d.get(k):   # NOTE: an empty one (most modules' buffers) is not read
                    self._dicts.append(d[k])
        self._version = None

    def now(self):
        version = STATE_VERSION[0]
        if version != self._version:
            state = (tuple([g(d) for g, d in self._getters]),
                     tuple([tuple(map(id, t.values())) for t in self._dicts]))
            token = self._tokens.get(state)
            if token is None:
                token = self._tokens[state] = len(self._states)
                self._states.append(state)
            self._token, self._version = token, version
        return self._token

    def training(self, token):
        """The train/eval flags in a `now()` state (for describe)."""
        out = []
        for (_, names), vals in zip(self._parts, self._states[token][0]):
            vals = vals if len(names) > 1 else (vals,)
            out.append(dict(zip(names, vals)).get("training", True))
        return out


def _nothing(d):
    return ()


def python_reads(fn, depth=3):
    """[(namespace, name)]: the globals fn's code names and the closure cells it holds, and
    those of the functions they name (helpers), `depth` calls deep: a plain value there (a
    global flag, a closure's scale) is part of the signature (`read_values`)."""
    out, seen = [], set()

    def walk(f, level):
        f = getattr(f, "__func__", f)
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen or level > depth:
            return
        seen.add(id(code))
        glob = getattr(f, "__globals__", {})
        for name in _names(code):
            if name in glob:
                out.append((glob, name))
                if inspect.isfunction(glob[name]):
                    walk(glob[name], level + 1)
        for i, cell in enumerate(getattr(f, "__closure__", None) or ()):
            out.append((cell, i))
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if inspect.isfunction(v):
                walk(v, level + 1)
    walk(fn.forward if isinstance(fn, Module) else fn, 0)
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, Module):
        out.append((owner, _SELF))   # NOTE: compile(trainer.step): trainer's plain attributes
    return out


def _names(code):
    names = set(code.co_names)
    for c in code.co_consts:   # NOTE: comprehensions and nested functions
        if inspect.iscode(c):
            names |= set(_names(c))
    return sorted(names)


def read_values(reads):
    """The values of `python_reads`, now: plain values as they are, a dict, list or tuple by
    its plain items, a plain object (a config) by its plain attributes; others by type only
    (a module, tensor or function is read through its own guards and inputs)."""
    vals = []
    for where, name in reads:
        try:
            v = where if name is _SELF else where[name] if isinstance(where, dict) \
                else where.cell_contents
        except (KeyError, ValueError):
            v = KeyError
        vals.append(_snapshot(v))
    return tuple(vals)


_SELF = object()   # python_reads' name for a bound method's own object
_OPAQUE = (Module, Tensor, type, types.ModuleType, types.FunctionType, types.MethodType,
           types.BuiltinFunctionType)


def _snapshot(v):
    if _plain(v):
        return v
    t = type(v)
    if t is dict and len(v) <= 64:
        return (dict, tuple([(k, x if _plain(x) else type(x)) for k, x in v.items()
                             if _plain(k)]))
    if (t is list or t is tuple) and len(v) <= 64:
        return (t, tuple([x if _plain(x) else type(x) for x in v]))
    d = getattr(v, "__dict__", None)
    if d is not None and not isinstance(v, _OPAQUE) and type(d) is dict:
        return (t, tuple([(k, x) for k, x in d.items() if _plain(x)]))
    return t


def describe(args, kwargs, grad_mode, training):
    """One readable line for a signature: argument specs and values, grad and train modes."""
    def one(x):
        if isinstance(x, Tensor):
            return f"{x.dtype.name}{list(x.shape)}" + (" requires_grad" if x.requires_grad else "")
        if isinstance(x, (tuple, list)):
            inner = ", ".join(one(v) for v in x)
            return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
        text = _safe_repr(x)
        return text if len(text) <= 40 else text[:37] + "..."
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    line = f"({', '.join(parts)}) grad {'on' if grad_mode else 'off'}"
    if training:
        line += ", train" if all(training) else ", eval" if not any(training) else \
            f", training flags {training}"
    return line
