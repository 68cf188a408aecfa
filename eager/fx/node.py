"""torch.fx.node: one operation of a Graph, and the helpers that walk its arguments.

>>> from dualgrad.eager import fx
>>> g = fx.Graph()
>>> x = g.placeholder("x")
>>> y = g.call_method("relu", (x,))
>>> _ = g.output(y)
>>> [(n.op, n.target) for n in g.nodes]
[('placeholder', 'x'), ('call_method', 'relu'), ('output', 'output')]
>>> list(x.users)
[relu]
"""
from __future__ import annotations

import builtins
import operator
from typing import Any, Callable, Union

Target = Union[Callable[..., Any], str]      # a call_function's callable, or a qualified name
Argument = Any                               # a Node, a constant, or a tuple/list/dict of them

OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
       "root")

# NOTE: what eliminate_dead_code keeps although nothing reads it (torch's side-effectful set)
SIDE_EFFECTS = {operator.setitem, builtins.print}


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """fn applied to every leaf of a (tuples, lists, dicts and slices are walked into)."""
    if isinstance(a, tuple):
        out = tuple(map_aggregate(x, fn) for x in a)
        return type(a)(*out) if hasattr(a, "_fields") else out
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """fn applied to every Node in a (nested tuples, lists, dicts and slices); other values
    are kept.

    >>> from dualgrad.eager.fx.node import map_arg
    >>> map_arg((1, [2, "a"]), lambda n: n)
    (1, [2, 'a'])
    """
    if not callable(fn):
        raise TypeError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _render(a: Argument) -> str:
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, tuple):
        return "(" + ", ".join(map(_render, a)) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(map(_render, a)) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_render(v)}" for k, v in a.items()) + "}"
    return str(a)


def target_name(target: Target) -> str:
    """How a target reads in listings: `operator.add`, `dualgrad.eager.relu`, `linear`."""
    if isinstance(target, str):
        return target
    mod = getattr(target, "__module__", None) or ("builtins" if target in vars(builtins).values()
                                                  else "")
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    if mod in ("_operator",):
        mod = "operator"
    return f"{mod}.{name}" if mod else name


class Node:
    """One operation: `op` (placeholder, get_attr, call_function, call_module, call_method,
    output), `target`, `args`, `kwargs`, a unique `name`, the nodes that read it (`users`)
    and a `meta` dict for passes. Nodes live in a Graph's doubly linked list."""

    def __init__(self, graph, name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any = None):
        if op not in OPS:
            raise ValueError(f"Node: op must be one of {OPS[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node {name}: call_function's target must be callable, got "
                             f"{target!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder", "output") \
                and not isinstance(target, str):
            raise ValueError(f"Node {name}: {op}'s target must be a string, got {target!r}")
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.type = return_type
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args, self._kwargs = (), {}
        self._prev = self._next = self
        self._erased = False
        self._loc = None       # NOTE: the user's (file, line) a trace made it at, for errors
        self._update_args_kwargs(args, kwargs)

    # -- the linked list --------------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def _unlink(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    def prepend(self, x: Node) -> None:
        """Put x just before this node (moving it if it is already in the graph)."""
        if x is self:
            return
        if x.graph is not self.graph:
            raise ValueError(f"prepend: {x} belongs to another graph")
        x._unlink()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Put x just after this node."""
        self._next.prepend(x)

    # -- arguments and uses -----------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this node reads, in the order they first appear in args and kwargs."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, args, kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(tuple(args), self._note_input)
        self._kwargs = map_arg(dict(kwargs), self._note_input)

    def _note_input(self, n: Node) -> Node:
        if n.graph is not self.graph:
            raise ValueError(f"Node {self.name}: argument {n.name} belongs to another graph")
        self._input_nodes.setdefault(n)
        n.users.setdefault(self)
        return n

    def update_arg(self, idx: int, arg: Argument) -> None:
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read new_input wherever this node read old_input."""
        swap = lambda n: new_input if n is old_input else n   # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb=lambda user: True, *,
                              propagate_meta=False) -> list[Node]:
        """Make every user (for which delete_user_cb is true) read replace_with instead of
        this node; returns those users."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("replace_all_uses_with(propagate_meta=True) needs a "
                                     "replacement node whose meta is empty")
            replace_with.meta.update(self.meta)
        users = [u for u in self.users if delete_user_cb(u)]
        for u in users:
            u.replace_input_with(self, replace_with)
        return users

    def is_impure(self) -> bool:
        """Kept by eliminate_dead_code although unused: placeholders, the output, in-place
        methods (`x.add_(1)`), side-effectful functions and calls of impure modules."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in SIDE_EFFECTS or getattr(self.target, "_is_impure", False)
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_module" and self.graph.owning_module is not None:
            mod = self.graph.owning_module
            for part in self.target.split("."):
                mod = getattr(mod, part, None)
            return getattr(mod, "_is_impure", False)
        return False

    # -- printing ---------------------------------------------------------------------------
    def format_node(self) -> str:
        """One line of `print(graph)`: `%relu : [num_users=1] = call_function[...](...)`."""
        head = f"%{self.name} : [num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f"(default={self.args[0]!r})" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "output":
            out = self.args[0]
            return f"return {out.name if isinstance(out, Node) else _render(out)}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={self.target}]"
        return (f"{head}{self.op}[target={target_name(self.target)}](args = "
                f"{_render(self.args)}, kwargs = {_render(self.kwargs)})")

    def describe(self) -> str:
        """`node relu (call_function dualgrad.eager.relu), traced at model.py:12`: how errors
        name a node."""
        where = f", traced at {self._loc[0]}:{self._loc[1]}" if self._loc else ""
        return f"node {self.name} ({self.op} {target_name(self.target)}){where}"

    def __repr__(self):
        return self.name
