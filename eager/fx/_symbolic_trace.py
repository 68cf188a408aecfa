"""torch.fx._symbolic_trace: Tracer, symbolic_trace and wrap.

A trace runs the user's forward once with Proxies for its inputs. What reaches the graph:

- calls of submodules: a leaf (one of eager.nn's layers, or what `is_leaf_module` says) is one
  `call_module` node; any other module is traced through;
- `eager.relu(x)`, `F.gelu(x)`, `eager.cat([...])`: a `call_function` node whose target is
  the eager function. While any trace runs, the public functions of eager's namespaces (and
  the same objects in the traced code's globals and closures, math's functions, and what
  `wrap` names) are wrappers that record when an argument is a Proxy (only the tracing
  thread has Proxies) and otherwise call straight through; `Module.__call__` and
  `__getattr__` act for the tracer of the calling thread only. The last trace to end
  restores everything, in `finally`;
- operators on a Proxy: `call_function` with the `operator` function; methods:
  `call_method`; a parameter read as `self.weight`: `get_attr`.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import math
import sys
import threading
import types
import warnings
from collections import OrderedDict
from typing import Any, Callable

from dualgrad.ops.core import FRAMEWORK_DIRS, user_frame
from ..core import Tensor
from ..nn.module import Module, Parameter
from ..nn.basic import Sequential
from .graph import Graph, _EAGER_NAMESPACES
from .graph_module import GraphModule
from .node import Argument, map_aggregate
from .proxy import ParameterProxy, Proxy, TraceError, TracerBase, is_proxy_in

_ACTIVE = threading.local()          # the tracers running in this thread, innermost last
_WRAP_REQUESTS: list[tuple[dict, str]] = []   # (globals, name) from wrap()
_NOT_RECORDED = {"is_tensor", "is_storage", "manual_seed", "save", "load", "compile"}


def _active_tracer():
    stack = getattr(_ACTIVE, "stack", None)
    return stack[-1] if stack else None


class PHBase:
    """A placeholder marker in `concrete_args` (an input that stays an input)."""

    def __repr__(self):
        return "PH"


PH = PHBase()


def _assert(condition, message):
    """torch._assert: what a value specialised by concrete_args checks when the module runs."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, msg):
    if value is not None:
        raise AssertionError(msg)


_assert._is_impure = _assert_is_none._is_impure = True


def wrap(fn_or_name):
    """Record calls of a module-level function as one call_function node instead of tracing
    into it (call at module scope: `fx.wrap("my_fn")` or `fx.wrap(my_fn)`). The function sees
    Proxies only if the trace calls it with none."""
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise AssertionError("Unsupported type for global function! Must be either a callable "
                             "or string name")
    if name is None or name == "<lambda>":
        raise NotImplementedError("wrap must be called with a named function (not a lambda)")
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _WRAP_REQUESTS.append((caller.f_globals, name))
    return fn_or_name


class _Patcher:
    """Swaps attributes and dict entries for a trace and puts every one back."""

    def __init__(self):
        self._undo: list[Callable[[], None]] = []
        self.seen: set[int] = set()    # globals dicts already searched

    def set_attr(self, obj, name, value):
        old = obj.__dict__[name] if isinstance(obj, type) else getattr(obj, name)
        setattr(obj, name, value)
        self._undo.append(lambda: setattr(obj, name, old))

    def set_item(self, d: dict, key, value):
        old = d[key]
        d[key] = value
        self._undo.append(lambda: d.__setitem__(key, old))

    def add_item(self, d: dict, key, value):
        d[key] = value
        self._undo.append(lambda: d.pop(key, None))

    def restore(self):
        while self._undo:
            self._undo.pop()()


# NOTE: one set of patches while any thread traces: the first trace installs it, the last
# one out restores it (two threads' traces could otherwise restore each other's wrappers)
_PATCH_LOCK = threading.RLock()
_PATCHES = {"count": 0, "patcher": None}
_EAGER_IDS: set[int] = set()      # eager's public functions (the wrappers stand for them)


def _module_call(orig_call):
    def __call__(mod, *args, **kwargs):
        tracer = _active_tracer()
        if tracer is None:
            return orig_call(mod, *args, **kwargs)
        return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)
    return __call__


def _module_getattr(orig_getattr):
    def __getattr__(mod, name):
        value = orig_getattr(mod, name)
        tracer = _active_tracer()
        return value if tracer is None else tracer.getattr(name, value,
                                                            tracer.parameter_proxy_cache)
    return __getattr__


def _install_common(patcher: _Patcher):
    """Module calls and attribute reads, and eager's public functions, for every trace."""
    patcher.set_attr(Module, "__call__", _module_call(Module.__call__))
    patcher.set_attr(Module, "__getattr__", _module_getattr(Module.__getattr__))
    for modname in _EAGER_NAMESPACES:
        module = sys.modules[modname]
        for name, f in _public_functions(module):
            _EAGER_IDS.add(id(f))
            patcher.set_item(vars(module), name, _recording(f))


@contextlib.contextmanager
def _patched():
    with _PATCH_LOCK:
        if _PATCHES["count"] == 0:
            _PATCHES["patcher"] = _Patcher()
            try:
                _install_common(_PATCHES["patcher"])
            except BaseException:
                _PATCHES["patcher"].restore()
                raise
        _PATCHES["count"] += 1
    try:
        yield _PATCHES["patcher"]
    finally:
        with _PATCH_LOCK:
            _PATCHES["count"] -= 1
            if _PATCHES["count"] == 0:
                _PATCHES["patcher"].restore()
                _PATCHES["patcher"] = None


_WRAPPERS: dict[int, tuple[Callable, Callable]] = {}


def _recording(fn):
    """fn, but a call with a Proxy among its arguments records a call_function node."""
    entry = _WRAPPERS.get(id(fn))
    if entry is not None and entry[0] is fn:
        return entry[1]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        proxy = is_proxy_in(args, kwargs)
        if proxy is None:
            return fn(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", fn, args, kwargs)
    wrapper.__fx_wrapped__ = fn
    _WRAPPERS[id(fn)] = (fn, wrapper)
    return wrapper


def _public_functions(module) -> list[tuple[str, Callable]]:
    return [(k, v) for k, v in vars(module).items()
            if not k.startswith("_") and k not in _NOT_RECORDED and callable(v)
            and not isinstance(v, (type, types.ModuleType)) and not hasattr(v, "__fx_wrapped__")]


class Tracer(TracerBase):
    """torch.fx.Tracer: `trace(root, concrete_args)` returns the Graph of one run of root's
    forward (or of a function). Subclass it to decide which modules are leaves
    (`is_leaf_module`) or how values become node arguments (`create_arg`)."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap_ids = {id(v): v for m in autowrap_modules for v in vars(m).values()
                              if callable(v) and not isinstance(v, type)}
        self._autowrap_ids.update({id(f): f for f in autowrap_functions})
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[int, str] | None = None
        self.root: Module | None = None
        self.scope = None
        self.module_stack: OrderedDict = OrderedDict()
        self.parameter_proxy_cache: dict[str, Proxy] = {}
        self._patcher = None
        self._wrapped: dict[int, Callable] = {}

    # -- what the subclasses override -------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """eager.nn's own layers are leaves (one call_module node); Sequential and user
        modules are traced through."""
        return type(m).__module__.startswith("dualgrad.eager.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        path = self.submodule_paths.get(id(mod)) if self.submodule_paths else None
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A leaf becomes a call_module node; any other module runs its forward, traced.
        Nodes made meanwhile carry the modules they are in (`meta["nn_module_stack"]`)."""
        name = self.path_of_module(m)
        self.module_stack[name] = (name, type(m))
        try:
            if not self.is_leaf_module(m, name):
                self._patch_names(type(m).forward)
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", name, args, kwargs)
        finally:
            self.module_stack.pop(name, None)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node._loc = user_frame()
        if self.module_stack:
            node.meta["nn_module_stack"] = OrderedDict(self.module_stack)
        return node

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """A Parameter of the root read in forward is a get_attr node (a ParameterProxy,
        whose shape is the parameter's, with param_shapes_constant=True)."""
        if isinstance(attr_val, Parameter):
            name = self._param_names.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    node = self.create_node("get_attr", name, (), {})
                    parameter_proxy_cache[name] = ParameterProxy(self, node, name, attr_val) \
                        if self.param_shapes_constant else self.proxy(node)
                return parameter_proxy_cache[name]
        return attr_val

    def create_const(self, a: Any) -> Argument:
        """A tensor argument: a get_attr node of the root's parameter, buffer or tensor
        attribute it is, or of a new `_tensor_constantN` attribute holding it."""
        if isinstance(a, Module):
            raise TraceError(f"a Module ({type(a).__name__}) was passed as an argument to an "
                             f"operation; call it instead")
        if not isinstance(a, Tensor):
            return a
        if isinstance(a, Parameter):
            name = self._param_names.get(id(a))
            if name is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", name, (), {})
        name = self.tensor_attrs.get(id(a))
        if name is None:
            i = 0
            while hasattr(self.root, f"_tensor_constant{i}"):
                i += 1
            name = f"_tensor_constant{i}"
            setattr(self.root, name, a)
            self.tensor_attrs[id(a)] = name
        return self.create_node("get_attr", name, (), {})

    # -- the trace --------------------------------------------------------------------------
    def trace(self, root: Module | Callable, concrete_args: dict | tuple | None = None) -> Graph:
        """Run root's forward (or root, a function) on Proxies and return the Graph."""
        if isinstance(root, Module):
            self.root, fn = root, type(root).forward
        else:
            self.root, fn = Module(), root
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {id(m): name for name, m in self.root.named_modules()}
        self.tensor_attrs = self._tensor_attrs()
        self._param_names = {id(p): n for n, p in self.root.named_parameters()}
        self.module_stack = OrderedDict()
        args, kwargs = self._placeholders(fn, isinstance(root, Module), concrete_args)
        self.parameter_proxy_cache: dict[str, Proxy] = {}
        stack = _ACTIVE.__dict__.setdefault("stack", [])
        with _patched() as patcher:
            self._patcher = patcher
            stack.append(self)
            try:
                self._patch_own(fn)
                with self._following_calls():
                    result = fn(*args, **kwargs)
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=fn.__annotations__.get("return"))
            finally:
                stack.pop()
                self._patcher = None
        return self.graph

    def _tensor_attrs(self) -> dict[int, str]:
        out = {}
        for prefix, m in self.root.named_modules():
            tensors = [(k, v) for k, v in vars(m).items() if isinstance(v, Tensor)]
            tensors += [(k, v) for k, v in m._buffers.items() if v is not None]
            for k, v in tensors:
                out.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
        return out

    def _placeholders(self, fn, is_module, concrete_args) -> tuple[list, dict]:
        """The positional and keyword-only arguments fn is traced with: a placeholder each
        (with the parameter's default), or what concrete_args gives."""
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if is_module else 0:]
        if isinstance(concrete_args, tuple):
            if len(concrete_args) != len(params):
                raise RuntimeError(f"Tracing expected {len(params)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = {p.name: c for p, c in zip(params, concrete_args)}
        concrete_args = concrete_args or {}
        args, kwargs = [self.root] if is_module else [], {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace of {fn.__qualname__}: *{p.name} / **{p.name} "
                                 f"parameters are not supported by dualgrad's fx; name the "
                                 f"inputs or use concrete_args")
            if p.name in concrete_args:
                value = self._concrete(p, concrete_args[p.name])
            else:
                default = () if p.default is p.empty else (p.default,)
                value = self.create_proxy("placeholder", p.name, default, {})
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        return args, kwargs

    def _concrete(self, p: inspect.Parameter, value):
        """concrete_args: the value is used as is, behind a placeholder that checks it."""
        count = [0]

        def leaf(x):
            count[0] += 1
            default = () if p.default is p.empty else (p.default,)
            ph = self.create_proxy("placeholder", f"{p.name}_{count[0]}", default, {})
            if isinstance(x, PHBase):
                return ph
            if type(x) in (bool, int, float, str):
                self.create_proxy("call_function", _assert, (
                    ph == x, f"{p.name} has been specialized to have value {x} but got another "
                             f"value"), {})
            elif x is None:
                self.create_proxy("call_function", _assert_is_none, (
                    ph, f"{p.name} has been specialized to have value None but got another "
                        f"value"), {})
            else:
                warnings.warn(f"Was not able to add assertion to guarantee correct input "
                              f"{p.name} to specialized function. It is up to the user to make "
                              f"sure that your inputs match the inputs you specialized the "
                              f"function with.", stacklevel=4)
            return x
        return map_aggregate(value, leaf)

    # -- patching for the duration of a trace -----------------------------------------------
    def _patch_own(self, fn):
        """What this tracer records besides eager's functions: its autowrap functions (math's,
        in the math module too), what `wrap` named, and the traced code's names for them."""
        patcher = self._patcher
        self._wrapped = {id(f): _recording(f) for f in self._autowrap_ids.values()}
        with _PATCH_LOCK:
            for module in self._autowrap_modules:   # NOTE: `math.sqrt(d)`, as torch's autowrap
                for name, f in list(vars(module).items()):
                    if id(f) in self._autowrap_ids:
                        patcher.set_item(vars(module), name, self._wrapped[id(f)])
            for g, name in _WRAP_REQUESTS:
                f = g.get(name)
                if f is None and hasattr(builtins, name):   # NOTE: wrap("len"): the builtin
                    f = getattr(builtins, name)
                    patcher.add_item(g, name, f)
                if f is not None and not hasattr(f, "__fx_wrapped__"):
                    self._wrapped[id(f)] = _recording(f)
                    patcher.set_item(g, name, self._wrapped[id(f)])
        self._patch_names(fn)

    def _patch_names(self, fn):
        """The traced code's own names for recorded functions (`from ... import relu` at
        module level, or a function the traced closure captured)."""
        patcher = self._patcher
        if patcher is None:
            return
        self._patch_globals(getattr(fn, "__globals__", {}))
        with _PATCH_LOCK:
            for cell in getattr(fn, "__closure__", None) or ():
                try:
                    wrapper = self._wrapper_of(cell.cell_contents)
                except ValueError:   # NOTE: a cell not filled yet
                    continue
                if wrapper is not None:
                    patcher.set_attr(cell, "cell_contents", wrapper)

    def _patch_globals(self, g: dict):
        patcher = self._patcher
        with _PATCH_LOCK:
            if patcher is None or id(g) in patcher.seen:
                return
            patcher.seen.add(id(g))
            for k, v in list(g.items()):
                wrapper = self._wrapper_of(v)
                if wrapper is not None:
                    patcher.set_item(g, k, wrapper)

    @contextlib.contextmanager
    def _following_calls(self):
        """The globals of every function the trace runs get the wrappers too (a helper
        module's `from ...functional import gelu`), as torch's __torch_function__ reaches
        any spelling of a function. A profile function of this thread sees each call; with
        a profiler already set, only the traced code's own names are swapped."""
        if sys.getprofile() is not None:
            yield
            return
        seen, skip = self._patcher.seen, FRAMEWORK_DIRS

        def profile(frame, event, arg):
            if event == "call" and id(frame.f_globals) not in seen \
                    and not frame.f_code.co_filename.startswith(skip):
                self._patch_globals(frame.f_globals)
        sys.setprofile(profile)
        try:
            yield
        finally:
            sys.setprofile(None)

    def _wrapper_of(self, v):
        """The recording wrapper that stands for v during this trace, or None."""
        wrapper = self._wrapped.get(id(v))
        if wrapper is None:
            entry = _WRAPPERS.get(id(v))
            wrapper = entry[1] if entry is not None and entry[0] is v and id(v) in _EAGER_IDS \
                else None
        return wrapper


def symbolic_trace(root: Module | Callable, concrete_args: dict | None = None) -> GraphModule:
    """torch.fx.symbolic_trace: a GraphModule whose graph is one traced run of root.

    >>> from dualgrad import eager
    >>> from dualgrad.eager import fx, nn
    >>> class M(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.linear = nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return eager.relu(self.linear(x)) + 1
    >>> gm = fx.symbolic_trace(M())
    >>> [(n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes][1:4]
    [('call_module', 'linear'), ('call_function', 'relu'), ('call_function', 'add')]
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

