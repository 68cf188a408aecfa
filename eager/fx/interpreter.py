"""torch.fx.interpreter: run a GraphModule node by node (Interpreter), or rebuild it node by
node into a new GraphModule (Transformer). Override one method per op kind to change what
happens; ShapeProp-style passes write into `node.meta` from `run_node`.

>>> from dualgrad import eager
>>> from dualgrad.eager import fx
>>> gm = fx.symbolic_trace(lambda x: eager.relu(x) * 2)
>>> class Shapes(fx.Interpreter):
...     def run_node(self, n):
...         out = super().run_node(n)
...         n.meta["shape"] = tuple(out.shape) if hasattr(out, "shape") else None
...         return out
>>> _ = Shapes(gm).run(eager.ones(2, 3))
>>> [n.meta["shape"] for n in gm.graph.nodes]
[(2, 3), (2, 3), (2, 3), (2, 3)]
"""
from __future__ import annotations

import inspect
from typing import Any, Iterator

from ..nn.module import Module
from .graph import Graph
from .graph_module import GraphModule, _resolve
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy, TracerBase


class Interpreter:
    """Runs `module.graph`: `run(*args)` feeds the placeholders in order and returns what
    the output node reads. Each node goes through `run_node`, which calls the method named
    after its op (placeholder, get_attr, call_function, call_method, call_module, output)."""

    def __init__(self, module: Module, garbage_collect_values: bool = True,
                 graph: Graph | None = None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.submodules = dict(module.named_modules())
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen = set()
            for n in reversed(self.graph.nodes):
                for inp in n.all_input_nodes:
                    if inp not in seen:
                        seen.add(inp)
                        self.user_to_last_uses.setdefault(n, []).append(inp)

    def run(self, *args, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        self.env = dict(initial_env or {})
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                e.add_note(f"While executing {node.describe()}: {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per op ------------------------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               f"one was not passed in!") from None

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # -- helpers ----------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        try:
            return _resolve(self.module, target)
        except AttributeError:
            raise RuntimeError(f"Node referenced nonexistent target {target}") from None

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        def load(x: Node):
            if x not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {x}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[x]
        return map_arg(args, load)


class _TransformerTracer(TracerBase):
    def __init__(self, graph: Graph):
        self.graph = graph

    def is_leaf_module(self, m, qualname) -> bool:
        return True


class Transformer(Interpreter):
    """Rebuilds the module's graph node by node: each method returns a Proxy on the new
    graph (override one to emit something else); `transform()` returns the new GraphModule."""

    def __init__(self, module: GraphModule):
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = next(iter(args), inspect.Signature.empty)
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        result = super().run()
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda x: x.node if isinstance(x, Proxy)
                                                else x))
        return GraphModule(self.module, self.new_graph)
