"""torch.fx.graph_module: a Module built from a Graph; `recompile()` turns the graph into
Python (`gm.code`) and that code is its forward.

>>> import operator
>>> from dualgrad import eager
>>> from dualgrad.eager import fx
>>> g = fx.Graph()
>>> x = g.placeholder("x")
>>> _ = g.output(g.call_function(operator.mul, (x, 2)))
>>> gm = fx.GraphModule({}, g)
>>> gm(eager.tensor([1.0, 2.0])).tolist()
[2.0, 4.0]
"""
from __future__ import annotations

import functools
import itertools
import linecache
from typing import Any

from ..core import Tensor
from ..nn.module import Module, Parameter
from .graph import Graph, PythonCode

_KEYS = itertools.count()


def _resolve(module: Module, target: str):
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _assign(module: Module, name: str, value: Any):
    """A tensor that is not a Parameter is registered as a buffer (in state_dict), as torch's."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        module.register_buffer(name, value)
    else:
        setattr(module, name, value)


def _install(value: Any, to: Module, target: str):
    """Set to.<target> = value, making empty Modules along a dotted path as needed."""
    *path, last = target.split(".")
    for part in path:
        sub = getattr(to, part, None)
        if sub is None:
            sub = Module()
            setattr(to, part, sub)
        to = sub
    _assign(to, last, value)


def _copy_attr(src: Module, dst: Module, target: str):
    """dst.<target> = src.<target> (the same object), with fresh Modules for the path
    between, as torch copies only what the graph uses."""
    *path, last = target.split(".")
    for part in path:
        s, d = getattr(src, part), getattr(dst, part, None)
        if d is s:
            return
        if d is None:
            d = Module()
            setattr(dst, part, d)
        src, dst = s, d
    _assign(dst, last, getattr(src, last))


def _naming_nodes(generated, filename, node_at_line):
    """generated, but an error raised on one of its lines gets a note naming the node and
    the user's line it was traced at."""
    @functools.wraps(generated)
    def forward(self, *args, **kwargs):
        try:
            return generated(self, *args, **kwargs)
        except Exception as e:
            tb, line = e.__traceback__, None
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == filename:
                    line = tb.tb_lineno
                tb = tb.tb_next
            node = node_at_line.get(line)
            if node is not None:
                e.add_note(f"While executing {node.describe()}, in "
                           f"{type(self).__name__}.forward ({filename}, line {line})")
            raise
    return forward


class GraphModule(Module):
    """torch.fx.GraphModule(root, graph, class_name): a Module holding `graph` and, from root
    (a Module, or a dict of qualified name to value), what its call_module and get_attr
    nodes name. Its forward is the code `graph.python_code` generates (`gm.code`); after
    editing `gm.graph`, call `gm.recompile()`."""

    def __init__(self, root: Module | dict, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        # NOTE: a class per instance, as torch: each GraphModule has its own forward
        object.__setattr__(self, "__class__", type(class_name, (type(self),), {}))
        if isinstance(root, Module):
            object.__setattr__(self, "training", root.training)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           f"that target was not provided in ``root``!")
                    _install(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {type(root).__name__} passed for root!")
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph):
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be a Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of forward, generated from the graph."""
        return self.__dict__["_code"]

    def recompile(self) -> PythonCode:
        """Generate forward from the graph again (after the graph was edited)."""
        code = self.graph.python_code(root_module="self")
        src = code.src
        filename = f"<eval_with_key>.{next(_KEYS)}"
        # NOTE: tracebacks through forward show the generated line
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace = dict(code.globals)
        exec(compile(src, filename, "exec"), namespace)   # noqa: S102 - code we generated
        type(self).forward = _naming_nodes(namespace["forward"], filename, code.node_at_line)
        self.__dict__["_code"] = src
        return code

    def print_readable(self, print_output: bool = True) -> str:
        body = "\n".join("    " + line if line else line for line in self.code.splitlines())
        text = f"class {type(self).__name__}(eager.nn.Module):{body}"
        if print_output:
            print(text)
        return text

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install m at the dotted path target (making empty Modules on the way)."""
        *path, _ = target.split(".")
        obj = self
        for part in path:
            obj = getattr(obj, part, None)
            if obj is None:
                break
            if not isinstance(obj, Module):
                return False
        _install(m, self, target)
        return True

    def delete_submodule(self, target: str) -> bool:
        *path, last = target.split(".")
        try:
            parent = _resolve(self, ".".join(path)) if path else self
        except AttributeError:
            return False
        if not isinstance(getattr(parent, last, None), Module):
            return False
        delattr(parent, last)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Delete the submodules no call_module / get_attr node reaches."""
        used = set()
        for n in self.graph.nodes:
            if n.op in ("call_module", "get_attr"):
                parts = n.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        for name, _ in sorted(self.named_modules(), key=lambda x: -x[0].count(".")):
            if name and name not in used:
                self.delete_submodule(name)

    def __str__(self):
        return f"{super().__repr__()}\n\n\n{self.code}"
