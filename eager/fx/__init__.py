"""torch.fx for dualgrad.eager: symbolic tracing of Modules and functions into a Graph of
Nodes, graph editing, and GraphModule, which runs the code generated from the graph.

>>> from dualgrad import eager
>>> from dualgrad.eager import fx, nn
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = nn.Linear(3, 3)
...     def forward(self, x):
...         return eager.relu(self.fc(x))
>>> gm = fx.symbolic_trace(Net())
>>> print(gm.code.strip())
def forward(self, x):
    fc = self.fc(x)
    relu = eager.relu(fc)
    return relu

What is recorded, and what is patched while a trace runs, is in `_symbolic_trace.py`;
docs/pytorch-compat.md ("torch.fx") says what differs from torch.fx.
"""
from __future__ import annotations

from . import graph, graph_module, node, proxy  # noqa: F401 - torch.fx.node.map_arg, …
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = ["symbolic_trace", "wrap", "Tracer", "Graph", "GraphModule", "Node", "Proxy",
           "Interpreter", "Transformer", "map_arg", "replace_pattern", "PH"]
