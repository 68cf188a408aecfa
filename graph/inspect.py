"""Look at a graph: Graphviz DOT export and a rich text summary of its nodes.

>>> from dualgrad import graph
>>> g = graph.Graph()
>>> with g.as_default():
...     x = graph.placeholder(graph.float32, (None, 3), name="x")
...     y = graph.nn.relu(x, name="y")
>>> print(graph.to_dot(g).splitlines()[0])
digraph "graph" {
>>> "relu" in graph.describe(g)
True
"""
from __future__ import annotations

import io

from dualgrad.ops.core import fmt_shape, where_str

from .core import get_default_graph

__all__ = ["to_dot", "describe"]

_STYLE = {"placeholder": 'shape=box, style=filled, fillcolor="#cfe2ff"',
          "variable": 'shape=box, style=filled, fillcolor="#ffe5b4"',
          "const": 'shape=box, style=filled, fillcolor="#eeeeee"',
          "cond": 'shape=diamond', "while": 'shape=diamond'}


def _q(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _out_str(node):
    return ", ".join(f"{fmt_shape(t.spec)} {t.dtype.name}" for t in node.outputs) or "-"


def to_dot(graph=None, name="graph") -> str:
    """The graph as Graphviz DOT: one box per node with its op, output shapes and dtypes;
    data edges solid (labelled with the shape), control edges dashed."""
    g = graph if graph is not None else get_default_graph()
    lines = [f"digraph {_q(name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica", '
             'fontsize=10, shape=ellipse];']
    for n in g.get_operations():
        label = f"{n.name}\\n{n.type}\\n{_out_str(n)}"
        style = _STYLE.get(n.type, 'style=filled, fillcolor="#f5d0d0"' if n.grad_of else "")
        label = '"' + label.replace('"', '\\"') + '"'   # NOTE: keep DOT's \n line breaks
        lines.append(f"  {_q(n.name)} [label={label}{', ' + style if style else ''}];")
        for t in n.inputs:
            lines.append(f"  {_q(t.node.name)} -> {_q(n.name)} [label={_q(fmt_shape(t.spec))}];")
        for c in n.control_inputs:
            lines.append(f"  {_q(c.name)} -> {_q(n.name)} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def describe(graph=None, file=None, width=140) -> str:
    """A table of the nodes (name, op, inputs, output shape and dtype, defined at), rendered
    with rich; printed to `file` if given, and returned as text."""
    from rich.console import Console
    from rich.table import Table
    g = graph if graph is not None else get_default_graph()
    nodes = g.get_operations()
    table = Table(title=f"graph: {len(nodes)} nodes, {len(g.variables)} variables",
                  show_lines=False)
    for col in ("name", "op", "inputs", "output", "defined at"):
        table.add_column(col, overflow="fold")
    for n in nodes:
        grad = f" (grad of {n.grad_of.name})" if n.grad_of is not None else ""
        table.add_row(n.name, n.type + grad, ", ".join(t.name for t in n.inputs),
                      _out_str(n), where_str(n.loc))
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    text = buf.getvalue()
    if file is not None:
        file.write(text)
    return text
