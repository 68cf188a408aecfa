"""torch.fx.proxy: the Proxy a symbolic trace passes through user code in place of a tensor;
every operation on it appends a Node to the tracer's graph.

>>> from dualgrad.eager import fx
>>> g = fx.Graph()
>>> x = fx.Proxy(g.placeholder("x"))
>>> y = (x + 1).sum(dim=0)
>>> _ = g.output(y.node)
>>> [n.name for n in g.nodes]
['x', 'add', 'sum_1', 'output']
"""
from __future__ import annotations

import ast
import builtins
import dis
import operator
import sys
from typing import Any, Callable

from dualgrad.ops.core import user_frame, where_str
from .graph import BINARY, UNARY, Graph
from .node import Argument, Node, Target, map_aggregate


class TraceError(ValueError):
    """What symbolic tracing cannot follow: a traced value deciding control flow, or `len`."""


def _at_user() -> str:
    return f" (at {where_str(user_frame())})"


class TracerBase:
    """What a Proxy asks of its tracer: make nodes from Python values (create_arg), make
    proxies (create_proxy), and say what bool / iteration / `**` of a proxy mean."""
    graph: Graph
    record_stack_traces = False
    scope = None

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        node = self.create_node(kind, target, self.create_arg(tuple(args)),
                                self.create_arg(dict(kwargs)), name, type_expr)
        return (proxy_factory_fn or self.proxy)(node)

    def create_arg(self, a: Any) -> Argument:
        """A value as a node argument: Proxies become their nodes, containers are walked."""
        def leaf(x):
            if isinstance(x, Proxy):
                if x.tracer.graph is not self.graph:
                    raise RuntimeError(f"a Proxy of another graph was used here: {x}")
                return x.node
            if isinstance(x, Node) or x is None or isinstance(x, (bool, int, float, complex, str,
                                                                   type(Ellipsis), range)):
                return x
            return self.create_const(x)
        return map_aggregate(a, leaf)

    def create_const(self, x: Any) -> Argument:
        return x

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow" + _at_user())

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors"
                         + _at_user())

    def keys(self, obj: Proxy):
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of Proxies made directly on a Graph (no module, no trace call): operations
    on them append to that graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.scope = None


class _ProxyEngine:
    """How an eager op reaches a Proxy: `eager_tensor + proxy` fails in eager's kernel and
    ops.bind hands the call to the highest engine among its arguments, this one; it records
    the operator (or the op library's function) as a call_function node."""
    level = 3

    @staticmethod
    def apply(op, args, attrs):
        # NOTE: the operator itself for `tensor + proxy`; otherwise the op's own function
        # (a call from code the trace did not wrap: values right, the graph finer than torch's)
        target = _operator_of(op) if not attrs else None
        proxy = next(a for a in args if isinstance(a, Proxy))
        return proxy.tracer.create_proxy("call_function", target or op.fn, args, attrs)


# NOTE: Python's operators by their syntax: an op whose scalar form is `{0} + {1}` (or
# `-{0}`, `{0} < {1}`, ...) is recorded as the operator, as torch.fx records `tensor + proxy`
_SYNTAX = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow, ast.MatMult: operator.matmul,
           ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.USub: operator.neg}
_OPERATORS = {}


def _operator_of(op):
    """The Python operator op computes, from its scalar form, else None."""
    if op.name not in _OPERATORS:
        _OPERATORS[op.name] = _parse_operator(op.scalar) if isinstance(op.scalar, str) else None
    return _OPERATORS[op.name]


def _parse_operator(scalar):
    try:
        expr = ast.parse(scalar.format("a", "b"), mode="eval").body
    except (SyntaxError, IndexError, KeyError):
        return None
    sym = type(expr.op) if isinstance(expr, (ast.BinOp, ast.UnaryOp)) else \
        type(expr.ops[0]) if isinstance(expr, ast.Compare) and len(expr.ops) == 1 else None
    return _SYNTAX.get(sym)


class Proxy:
    """A value during symbolic tracing: `.node` is the Node that computes it. Operators,
    method calls (`x.view(-1)`), attribute reads (`x.shape`), indexing and the eager functions
    the tracer wraps append nodes instead of computing. `if proxy:` raises TraceError."""
    __array_ufunc__ = None          # NOTE: NumPy hands `array + proxy` back to Proxy.__radd__
    _engine = _ProxyEngine          # NOTE: an eager op with a Proxy argument reaches the trace

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        self.node = node
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)   # NOTE: copy/pickle/NumPy probing special names
        return Attribute(self, k)

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __iter__(self):
        n = _unpacked_count(sys._getframe(1))
        if n is not None:
            return (self[i] for i in range(n))
        return self.tracer.iter(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope" + _at_user())

    def keys(self):
        return self.tracer.keys(self)

    def __index__(self):
        raise TypeError("a symbolically traced value cannot be used as a Python int (an "
                        "index, a size or a range bound)" + _at_user())

    def __float__(self):
        raise TypeError("a symbolically traced value cannot be converted to a Python float"
                        + _at_user())

    __int__ = __index__

    def __getitem__(self, key):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, key), {})

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    __hash__ = object.__hash__


def _binary(fn):
    def forward(self, other):
        return self.tracer.create_proxy("call_function", fn, (self, other), {})

    def reflected(self, other):
        return self.tracer.create_proxy("call_function", fn, (other, self), {})
    return forward, reflected


for _fn in BINARY:
    _name = _fn.__name__.rstrip("_")
    _fwd, _ref = _binary(_fn)
    setattr(Proxy, f"__{_name}__", _fwd)
    if _fn not in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
        setattr(Proxy, f"__r{_name}__", _ref)
for _fn in UNARY:
    setattr(Proxy, f"__{_fn.__name__}__",
            lambda self, _f=_fn: self.tracer.create_proxy("call_function", _f, (self,), {}))
Proxy.__abs__ = lambda self: self.tracer.create_proxy("call_function", operator.abs, (self,), {})
del _fn, _name, _fwd, _ref


class ParameterProxy(Proxy):
    """A parameter's get_attr Proxy whose shape, size(), dim(), ndim and numel() are the
    parameter's own (Tracer(param_shapes_constant=True)), so `if self.w.shape[0] > 1:` traces."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param):
        super().__init__(node, tracer)
        self.name, self.param = name, param

    @property
    def shape(self):
        return self.param.shape

    @property
    def ndim(self):
        return self.param.ndim

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    def numel(self):
        return self.param.numel()

    nelement = numel


class Attribute(Proxy):
    """`proxy.attr`: a call_method node when called (`x.view(-1)`), else a getattr node,
    made the first time its value is used (`x.shape[0]`)."""

    def __init__(self, root: Proxy, attr: str):
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _unpacked_count(frame) -> int | None:
    """n when the caller is about to unpack into n names (`a, b = proxy`), else None."""
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            return inst.argval if inst.opname == "UNPACK_SEQUENCE" else None
    return None


def is_proxy_in(args, kwargs=None) -> Proxy | None:
    """The first Proxy found in args / kwargs (nested containers too), or None."""
    stack = [args, kwargs] if kwargs else [args]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
    return None

