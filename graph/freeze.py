"""Freeze a graph for inference: the part outputs need, variables turned into constants.

TF1's `graph_util.convert_variables_to_constants`: what is needed to compute `outputs` from
`inputs` is copied into a new graph, each variable becomes a constant holding its value in
`session`, `identity`/`stop_gradient` nodes are dropped, graph-only ops whose kernel reads
no session state (`shape`, `fill`, `range`, ...) are copied. A placeholder the outputs need but
that is not among the inputs, or a node that only makes sense while training (an
assignment, a random draw, a loop), is an error naming the node and the line that built it.

>>> import numpy as np
>>> from dualgrad import graph
>>> from dualgrad.graph.freeze import freeze
>>> g = graph.Graph()
>>> with g.as_default():
...     x = graph.placeholder(graph.float32, (None, 2), name="x")
...     w = graph.Variable(np.ones((2, 1), np.float32), name="w")
...     y = graph.matmul(x, w)
...     sess = graph.Session(g); sess.run(graph.global_variables_initializer())
>>> fg, (fx,), (fy,) = freeze([x], [y], sess)
>>> sorted(n.type for n in fg.get_operations())
['const', 'matmul', 'placeholder']
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.core import quiet_broadcast
from dualgrad.ops.core import ShapeError, Spec, where_str

from .control_flow import identity
from .core import Graph, op_by_name
from .plan import node_kernel

__all__ = ["freeze", "FreezeError", "describe_node", "convert_variables_to_constants"]


class FreezeError(ValueError):
    """A node that cannot be part of a frozen inference graph."""


def describe_node(n) -> str:
    """`mul` (node 'dense/mul', built at model.py:12, part of gelu)."""
    part = f", part of {n.built_by}" if getattr(n, "built_by", None) else ""
    return f"{n.type} (node '{n.name}', built at {where_str(n.loc)}{part})"


def _needed(outputs, stop):
    """The nodes outputs need, in build order, not looking past `stop` (the inputs)."""
    seen, order = set(), []
    todo = [t.node for t in outputs]
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        if id(n) not in stop:
            todo.extend(t.node for t in n.inputs)
    return sorted(order, key=lambda n: n.id)


def freeze(inputs, outputs, session=None):
    """(new graph, its input placeholders, its output tensors); see the module docstring."""
    g = Graph()
    stop = {id(p.node) for p in inputs}
    for p in inputs:
        if p.node.type != "placeholder":
            raise FreezeError(f"freeze: input {p.name} is a {p.node.type}, not a placeholder")
    graphs = {id(t.graph) for t in list(inputs) + list(outputs)}
    if len(graphs) > 1:
        raise FreezeError("freeze: the inputs and outputs belong to different graphs")
    new = {}
    for n in _needed(outputs, stop):
        new[id(n.outputs[0])] = _copy(g, n, [new[id(t)] for t in n.inputs], stop, session)
    return g, [new[id(p)] for p in inputs], [new[id(t)] for t in outputs]


def _copy(g, n, ins, stop, session):
    t = n.type
    if t == "placeholder":
        if id(n) not in stop:
            raise FreezeError(f"freeze: the outputs need placeholder '{n.name}' (built at "
                              f"{where_str(n.loc)}), which is not among the inputs")
        return _node(g, n, (), dict(n.attrs), [n.outputs[0].spec])
    if t == "const":
        return _const(g, n, n.attrs["value"], n.outputs[0].spec.weak)
    if t == "variable":
        if session is None:
            raise FreezeError(f"freeze: variable '{n.name}' needs a session to read its value "
                              f"from (pass session=)")
        return _const(g, n, np.array(session.run(n.outputs[0]), copy=True), None)
    if n.op.inference_identity:
        return ins[0]
    if len(n.outputs) == 1 and n.op.kernel is None and not node_kernel(n)[1]:
        return _node(g, n, ins, n.attrs, [n.outputs[0].spec])   # shape, fill, range, ...
    if n.op.kernel is None or len(n.outputs) != 1:
        raise FreezeError(f"freeze: {describe_node(n)} cannot be part of an inference graph")
    try:
        with quiet_broadcast():   # NOTE: warned when the graph was built
            spec = n.op.infer(*[i.spec for i in ins], **n.attrs)
    except ShapeError as e:
        raise FreezeError(f"freeze: {describe_node(n)}: {e}") from None
    return _node(g, n, ins, n.attrs, [spec])


def _const(g, n, value, weak):
    value = np.array(value, copy=True)
    value.flags.writeable = False
    return _node(g, n, (), {"value": value}, [Spec(value.shape, value.dtype, weak=weak)],
                 op_by_name("const"))


def _node(g, n, ins, attrs, specs, op=None):
    node = g.create_node(op or n.op, ins, attrs, specs, n.name, exact_name=True, loc=n.loc)
    node.built_by = n.built_by
    return node.outputs[0]


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """TF1's `graph_util.convert_variables_to_constants`: the GraphDef of what the nodes
    `output_node_names` need, each variable a constant holding its value in `sess`.
    `input_graph_def` must describe `sess.graph` (its `as_graph_def()`): the nodes are
    taken from the session's graph, frozen with `freeze`, and written as a GraphDef. An
    output that was an identity keeps its name (an Identity node), as in TF."""
    if variable_names_whitelist is not None or variable_names_blacklist is not None:
        raise NotImplementedError("convert_variables_to_constants: variable_names_whitelist "
                                  "and variable_names_blacklist are not supported: every "
                                  "variable the outputs need becomes a constant")
    written = {n.name for n in input_graph_def.node}
    for name in output_node_names:
        if name not in written:
            raise AssertionError(f"{name} is not in graph")
    outputs = [sess.graph.get_operation_by_name(name).outputs[0] for name in output_node_names]
    feeds = [n.outputs[0] for n in _needed(outputs, set()) if n.type == "placeholder"]
    fg, _, frozen = freeze(feeds, outputs, sess)
    with fg.as_default():
        for name, t in zip(output_node_names, frozen):
            if t.node.name != name:       # NOTE: freeze drops identities; TF keeps the name
                identity(t, name=name)
    return fg.as_graph_def()
