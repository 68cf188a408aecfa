"""torch.fx.graph: a Graph is the list of Nodes a symbolic trace records, which passes read
and edit and GraphModule turns back into Python.

>>> import operator
>>> from dualgrad.eager import fx
>>> g = fx.Graph()
>>> x = g.placeholder("x")
>>> y = g.call_function(operator.add, (x, 1))
>>> _ = g.output(y)
>>> print(g.python_code("self").src.strip())
def forward(self, x):
    add = x + 1
    return add
"""
from __future__ import annotations

import builtins
import inspect
import keyword
import math
import operator
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..dtypes import dtype as torch_dtype
from .node import Argument, Node, Target, map_arg, target_name

# NOTE: the functions generated code writes as Python operators, as torch.fx's code does
BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
          operator.matmul: "@", operator.and_: "&", operator.or_: "|", operator.xor: "^",
          operator.lshift: "<<", operator.rshift: ">>", operator.eq: "==",
          operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">",
          operator.ge: ">="}
UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}

# NOTE: names a node may not take in generated code (it would hide what the code calls)
_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | {"self", "eager", "operator", "inf", "nan"}


class _Namespace:
    """Unique Python identifiers for nodes: `relu`, `relu_1`, …, never a keyword/builtin."""

    def __init__(self):
        self._used: set[str] = set()
        self._counts: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        name = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if name[0].isdigit():
            name = "_" + name
        match = re.fullmatch(r"(.*)_(\d+)", name)
        base = match.group(1) if match else name
        n = int(match.group(2)) if match else 0
        while name in self._used or name in _RESERVED:
            n = max(n, self._counts.get(base, 0)) + 1
            name = f"{base}_{n}"
        self._counts[base] = n
        self._used.add(name)
        return name

    def release(self, name: str):
        self._used.discard(name)


def _name_for(op: str, target: Target) -> str:
    if isinstance(target, str):
        return target.replace(".", "_").lstrip("*")
    return getattr(target, "__name__", None) or type(target).__name__


class _NodeList:
    """The graph's nodes in order; iteration survives erasing the current node."""

    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))


@dataclass
class PythonCode:
    """Generated source (`src`, a `def forward(self, ...)`), the objects it names
    (`globals`), and which node each line of the body computes (`node_at_line`, 1-based)."""
    src: str
    globals: dict[str, Any]
    node_at_line: dict[int, Node] = field(default_factory=dict)


class Graph:
    """torch.fx.Graph: build with placeholder / get_attr / call_function / call_module /
    call_method / output (or create_node), edit with inserting_before/after, erase_node,
    eliminate_dead_code; `lint()` checks it; `print(graph)` lists it."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = _Namespace()
        self._insert = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def output_node(self) -> Node:
        for n in reversed(self.nodes):
            if n.op == "output":
                return n
        raise RuntimeError("this graph has no output node")

    # -- building ---------------------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """A new node at the insert point (the end of the graph unless inside
        `inserting_before/after`), named `name` or after its target."""
        name = self._namespace.create_name(name or _name_for(op, target))
        n = Node(self, name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        if self.owning_module is not None and not _has_path(self.owning_module, qualified_name):
            import warnings
            warnings.warn(f"Attempted to insert a get_attr Node with no underlying reference in "
                          f"the owning GraphModule! Call GraphModule.add_submodule to add the "
                          f"necessary submodule, or add the attribute: {qualified_name}",
                          stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node,
                  arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """A copy of a node of (usually) another graph, its Node arguments mapped by
        arg_transform; meta is copied."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = dict(node.meta)
        return new

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy g's nodes (but its output) into this graph; val_map maps g's nodes to ours
        (prefill it to bind g's placeholders). Returns what g's output reads, mapped."""
        for n in g.nodes:
            if n in val_map:
                continue
            if n.op == "output":
                out = map_arg(n.args[0], lambda x: val_map[x])
                return (out, n) if return_output_node else out
            val_map[n] = self.node_copy(n, lambda x: val_map[x])
        return None

    # -- editing ----------------------------------------------------------------------------
    def _inserting(self, insert):
        return _InsertPoint(self, insert)

    def inserting_before(self, n: Node | None = None):
        """`with graph.inserting_before(node):` new nodes go just before node (before the
        first node if None)."""
        if n is None:
            return self.inserting_after(self._root)
        return self._inserting(n.prepend)

    def inserting_after(self, n: Node | None = None):
        """`with graph.inserting_after(node):` new nodes go just after node, in order."""
        if n is None:
            return self.inserting_before(self._root)
        return self._inserting(_After(n))

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing uses any more."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {list(to_erase.users)}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._unlink()
        to_erase._erased = True
        self._len -= 1
        self._namespace.release(to_erase.name)
        to_erase.args, to_erase.kwargs = (), {}

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase, from the end, every node without users that is not impure; True if any was."""
        impure = is_impure_node or Node.is_impure
        changed = False
        for n in reversed(self.nodes):
            if not n.users and not impure(n):
                self.erase_node(n)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph: nodes belong to it, names are unique, each argument is defined
        before it is used, and with an owning module every call_module / get_attr target
        exists. Raises RuntimeError naming the node."""
        seen, names = set(), set()
        for n in self.nodes:
            if n.graph is not self:
                raise RuntimeError(f"Node '{n}' does not belong to this Graph!")
            if n.name in names:
                raise RuntimeError(f"Node redefined name {n.name}!")
            names.add(n.name)
            for arg in n._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{n}' does not belong to "
                                       f"this Graph, but was used as an argument!")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{n}' was used before it has "
                                       f"been defined! Please check that Nodes in the graph are "
                                       f"topologically ordered\n{self}")
            seen.add(n)
            m = self.owning_module
            if m is not None and n.op in ("call_module", "get_attr") and not _has_path(m, n.target):
                kind = "Module" if n.op == "call_module" else "attribute"
                raise RuntimeError(f"Node {n} target {n.target} references nonexistent {kind} "
                                   f"{n.target}")

    # -- printing and code ------------------------------------------------------------------
    def __str__(self):
        lines = ["graph():"] + ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs."""
        rows = [("opcode", "name", "target", "args", "kwargs")]
        rows += [(n.op, n.name, target_name(n.target), str(n.args), str(n.kwargs))
                 for n in self.nodes]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()   # noqa: E731
        lines = [fmt(rows[0]), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows[1:]]
        print("\n".join(lines))

    def python_code(self, root_module: str) -> PythonCode:
        """The graph as a Python function `forward(self, ...)` (what GraphModule runs)."""
        return _CodeGen(self, root_module).generate()


class _InsertPoint:
    """Moves the graph's insert point now (as torch's: without `with`, it stays moved) and
    puts it back when a `with` block ends."""

    def __init__(self, graph: Graph, insert):
        self._graph, self._saved = graph, graph._insert
        graph._insert = insert

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self._graph._insert = self._saved


class _After:
    """Inserts each new node after the previous one, starting after `n`."""

    def __init__(self, n: Node):
        self._last = n

    def __call__(self, new: Node):
        self._last.append(new)
        self._last = new


def _has_path(module, qualified_name: str) -> bool:
    obj = module
    for part in qualified_name.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _attr_path(base: str, qualified_name: str) -> str:
    """`self.layer1` / `getattr(self.seq, "0")`: an attribute path as code."""
    out = base
    for part in qualified_name.split("."):
        out = f"{out}.{part}" if part.isidentifier() and not keyword.iskeyword(part) \
            else f"getattr({out}, {part!r})"
    return out


class _CodeGen:
    def __init__(self, graph: Graph, root: str):
        self.graph, self.root = graph, root
        self.globals: dict[str, Any] = {}
        self._names: dict[int, str] = {}
        self._eager_paths = _eager_paths()

    def generate(self) -> PythonCode:
        params, body, at = [], [], {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                params.append(self.param(n))
                continue
            at[len(body) + 4] = n     # NOTE: two blank lines and the def come first
            if n.op == "output":
                body.append(f"return {self.arg(n.args[0])}")
            else:
                body.append(f"{n.name} = {self.expr(n)}")
        src = f"\n\ndef forward({', '.join([self.root] + params)}):\n" + \
              "".join(f"    {line}\n" for line in body or ["pass"])
        return PythonCode(src, self.globals, at)

    def param(self, n: Node) -> str:
        if n.target.startswith("*"):
            return n.target
        return f"{n.name} = {self.arg(n.args[0])}" if n.args else n.name

    def expr(self, n: Node) -> str:
        a = n.args
        if n.op == "get_attr":
            return _attr_path(self.root, n.target)
        if n.op == "call_module":
            return f"{_attr_path(self.root, n.target)}({self.call_args(a, n.kwargs)})"
        if n.op == "call_method":
            method = f".{n.target}" if n.target.isidentifier() else f"getattr({{}}, {n.target!r})"
            obj = self.arg(a[0])
            head = obj + method if method[0] == "." else method.format(obj)
            return f"{head}({self.call_args(a[1:], n.kwargs)})"
        t = n.target
        if not n.kwargs:
            if t in BINARY and len(a) == 2:
                return f"{self.arg(a[0])} {BINARY[t]} {self.arg(a[1])}"
            if t in UNARY and len(a) == 1:
                return f"{UNARY[t]}{self.arg(a[0])}"
            if t is operator.getitem and len(a) == 2:
                return f"{self.arg(a[0])}[{self.arg(a[1])}]"
            if t is builtins.getattr and len(a) == 2 and isinstance(a[1], str) \
                    and a[1].isidentifier():
                return f"{self.arg(a[0])}.{a[1]}"
        return f"{self.callee(t)}({self.call_args(a, n.kwargs)})"

    def call_args(self, args, kwargs) -> str:
        parts = [self.arg(x) for x in args]
        named = {k: v for k, v in kwargs.items() if isinstance(k, str) and k.isidentifier()}
        parts += [f"{k} = {self.arg(v)}" for k, v in named.items()]
        if len(named) < len(kwargs):
            rest = {k: v for k, v in kwargs.items() if k not in named}
            parts.append(f"**{self.arg(rest)}")
        return ", ".join(parts)

    def callee(self, fn) -> str:
        path = self._eager_paths.get(id(fn))
        if path is not None:
            self.globals["eager"] = sys.modules[__package__.rsplit(".", 1)[0]]
            return path
        if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
            return fn.__name__
        if getattr(operator, getattr(fn, "__name__", ""), None) is fn:
            self.globals["operator"] = operator
            return f"operator.{fn.__name__}"
        return self.global_name(fn, getattr(fn, "__name__", "fn"))

    def global_name(self, obj, hint: str) -> str:
        name = self._names.get(id(obj))
        if name is None:
            base = re.sub(r"\W", "_", hint).lstrip("_") or "constant"
            name, i = f"_{base}", 0
            while name in self.globals or any(name == n.name for n in self.graph.nodes):
                i += 1
                name = f"_{base}_{i}"
            self.globals[name], self._names[id(obj)] = obj, name
        return name

    def arg(self, a) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return self.global_name(a, type(a).__name__)
            return "(" + ", ".join(map(self.arg, a)) + ("," if len(a) == 1 else "") + ")"
        if isinstance(a, list):
            return "[" + ", ".join(map(self.arg, a)) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if isinstance(a, float) and not math.isfinite(a):
            return f"float({str(a)!r})"
        if a is None or a is Ellipsis or type(a) in (bool, int, float, str, complex):
            return repr(a)
        if isinstance(a, (np.dtype, torch_dtype)):
            return f"eager.{a.name}" if self._dtype_ok(a) else self.global_name(a, "dtype")
        return self.global_name(a, type(a).__name__.lower())

    def _dtype_ok(self, dt) -> bool:
        eager = sys.modules[__package__.rsplit(".", 1)[0]]
        if getattr(eager, dt.name, None) == dt:
            self.globals["eager"] = eager
            return True
        return False


# NOTE: the namespaces whose public functions a trace records, and how generated code names them
_EAGER_NAMESPACES = {"dualgrad.eager": "eager",
                     "dualgrad.eager.nn.functional": "eager.nn.functional",
                     "dualgrad.eager.special": "eager.special",
                     "dualgrad.eager.linalg": "eager.linalg", "dualgrad.eager.fft": "eager.fft"}


def _eager_paths() -> dict[int, str]:
    """{id(function): `eager.relu`}: how generated code spells eager's public functions."""
    out = {}
    for mod, prefix in _EAGER_NAMESPACES.items():
        for k, v in vars(sys.modules[mod]).items():
            if not k.startswith("_") and callable(v) and not isinstance(v, type):
                out.setdefault(id(v), f"{prefix}.{k}")
    return out
