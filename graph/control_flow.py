"""Control flow and graph plumbing: `cond`, `while_loop`, `group`, `identity`, `print`.

`cond` and `while_loop` build their branches / body once, at build time, as sub-graphs
(`Body`), so every op inside is shape-checked before any data exists. An outer tensor used
inside a body is captured: it becomes a placeholder of the body and an input of the cond /
while node. At run time only the taken branch runs. Gradients through `cond` are a `cond`
over the branches' own gradient graphs (built in the bodies with `gradients`); gradients
through `while_loop` re-run the loop, keep each iteration's values and apply the body's
gradient graph backwards (`while_grad`).

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, ())
>>> y = graph.cond(x > 0, lambda: x * 3.0, lambda: -x)
>>> (dy,) = graph.gradients(y, [x])
>>> with graph.Session() as s:
...     [float(v) for v in s.run([y, dy], {x: 2.0}) + s.run([y, dy], {x: -2.0})]
[6.0, 3.0, 2.0, -1.0]
"""
from __future__ import annotations

import sys

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, Spec, fmt_shape

from .array_ops import identity, shape
from .checks import Assert
from .core import (Graph, Node, Tensor, _at_user_line, _graph_of, _lift, get_default_graph,
                   graph_op, placeholder)
from .errors import InvalidArgumentError
from .gradients import gradients
from .math_ops import cast, less_equal, reduce_any, reduce_sum, stack
from .plan import Function
from .while_grad import while_vjp

__all__ = ["cond", "case", "while_loop", "map_fn", "group", "no_op", "identity", "print_", "Body",
           "Function"]


# -- group / no_op / print (identity is array_ops', re-exported here) --------------------------
def _no_op_kernel(node):
    return (lambda: None), False


NO_OP = graph_op("no_op", _no_op_kernel)


def _as_node(x):
    if isinstance(x, Tensor):
        return x.node
    if isinstance(x, Node):
        return x
    raise TypeError(f"group: expected tensors or nodes, got {x!r}")


def group(*inputs, name=None) -> Node:
    """One node that runs after all `inputs` (tensors or nodes); fetching it gives None."""
    nodes = [_as_node(x) for x in inputs]
    g = nodes[0].graph if nodes else get_default_graph()
    return g.create_node(NO_OP, (), {}, [], name or "group_deps", control_inputs=nodes)


def no_op(name=None) -> Node:
    return get_default_graph().create_node(NO_OP, (), {}, [], name or "NoOp")


def _print_kernel(node):
    message, summarize = node.attrs["message"], node.attrs["summarize"]

    def run(state, x):
        with np.printoptions(threshold=summarize or 1000, edgeitems=3):
            print(f"{message}{np.asarray(x)}", file=sys.stdout)
        return x
    return run, True


PRINT = graph_op("print", _print_kernel, vjp=lambda g, x, **kw: (g,))


def print_(x, message="", summarize=None, name=None) -> Tensor:
    """Pass `x` through and print `message` and its value each time it runs (like tf.print
    / tf.Print); the graph side's answer to eager's print()."""
    g = _graph_of([x])
    t = _lift(g, x, [x])
    attrs = {"message": str(message), "summarize": None if summarize is None else int(summarize)}
    return g.create_node(PRINT, (t,), attrs, [Spec(t.shape, t.dtype)], name or "Print") \
        .outputs[0]


# -- bodies ------------------------------------------------------------------------------------
class Body(Graph):
    """The sub-graph of a cond branch or a while_loop body; captures outer tensors."""

    def __init__(self, outer, label):
        super().__init__()
        self.outer = outer
        self.label = label
        self.captures: list[tuple[Tensor, Tensor]] = []   # (outer tensor, inner placeholder)
        self._cmap: dict[int, Tensor] = {}
        self._base_scope = label + "/"

    def capture(self, t):
        inner = self._cmap.get(id(t))
        if inner is not None:
            return inner
        src = t if t.graph is self.outer else self.outer.capture(t)
        if src.graph is not self.outer:
            raise ValueError(f"tensor '{t.name}' does not belong to a graph enclosing "
                             f"'{self.label}'")
        with self.as_default(), self.name_scope(self.label + "/"):
            inner = placeholder(t.dtype, t.shape, name="capture")
        self._cmap[id(t)] = inner
        self._cmap[id(src)] = inner
        self.captures.append((src, inner))
        return inner

    def __repr__(self):
        return f"<graph.Body '{self.label}' with {len(self._nodes)} nodes>"


def _flatten(x):
    if isinstance(x, (list, tuple)):
        parts = [_flatten(v) for v in x]
        leaves = [leaf for p in parts for leaf in p[0]]

        def rebuild(vals, parts=parts, typ=type(x)):
            out, i = [], 0
            for leaves_k, rb in parts:
                out.append(rb(vals[i:i + len(leaves_k)]))
                i += len(leaves_k)
            return typ(out)
        return leaves, rebuild
    if x is None:
        return [], lambda vals: None
    return [x], lambda vals: vals[0]


def _trace(outer, label, fn, args=()):
    """Build `fn(*args)` into a new Body; return (body, flat output tensors, rebuild)."""
    body = Body(outer, label)
    with body.as_default():
        out = fn(*args)
        leaves, rebuild = _flatten(out)
        leaves = [_lift(body, v, []) if not isinstance(v, Tensor) else
                  (v if v.graph is body else body.capture(v)) for v in leaves]
    return body, leaves, rebuild


# -- cond ----------------------------------------------------------------------------------------
def _maybe_scalar(t):
    """A scalar, or of unknown rank (TF1's `placeholder(tf.bool)`: checked at run time)."""
    return t.spec.shape is None or t.spec.shape == ()


def _scalar_pred(pred, node, what):
    if np.ndim(pred) != 0:
        raise InvalidArgumentError(f"{what} '{node.name}': the predicate must be a scalar, "
                                   f"but it has shape {list(np.shape(pred))}", node=node)
    return bool(pred)


def _cond_kernel(node):
    fns, n = node.attrs["branches"], len(node.outputs)

    def run(state, pred, *caps):
        out = fns[0 if _scalar_pred(pred, node, "cond") else 1](state, *caps)
        return out[0] if n == 1 else tuple(out)
    return run, True


def _cond_vjp(g, pred, *caps, out, needs, branches, **kw):
    """d/d(captures) of output `out.index`: a cond over each branch's gradient graph."""
    i, node = out.index, out.node
    want = [k for k, need in enumerate(needs[1:]) if need]
    if not want:
        return (None,) * (1 + len(caps))
    grad_fns = [_branch_grad(f, i, out.spec, want) for f in branches]
    specs = [node.inputs[1 + k].spec for k in want]
    inputs = (node.inputs[0],) + node.inputs[1:] + (_lift(node.graph, g, [out]),)
    gnode = node.graph.create_node(COND, inputs, {"branches": tuple(grad_fns)},
                                   [Spec(s.shape, s.dtype) for s in specs], "cond_grad")
    grads = [None] * len(caps)
    for k, t in zip(want, gnode.outputs):
        grads[k] = t
    return (None, *grads)


def _branch_grad(fn, i, spec, want):
    body = fn.body
    with body.as_default(), body.name_scope(body.label + "/grad/"):
        gp = placeholder(spec.dtype, spec.shape, name="grad_in")
        xs = [fn.inputs[k] for k in want]
        grads = gradients([fn.outputs[i]], xs, grad_ys=[gp])
        grads = [ops.zeros_like(x) if gr is None else gr for x, gr in zip(xs, grads)]
    return Function(body, fn.inputs + [gp], grads)


COND = graph_op("cond", _cond_kernel, vjp=_cond_vjp)


def _merge_specs(a, b, what):
    if a.dtype != b.dtype or len(a.shape) != len(b.shape):
        raise ShapeError(f"{what}: {fmt_shape(a)} {a.dtype.name} vs {fmt_shape(b)} {b.dtype.name}")
    return Spec(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.dtype)


def cond(pred, true_fn, false_fn, name=None):
    """`true_fn()` if pred else `false_fn()`, decided at run time; both are built now.

    pred: a scalar bool tensor (a Python bool just picks the branch now). The branches must
    return the same structure of tensors with the same dtypes and ranks; a dim that differs
    between them is unknown (None) in the result.
    """
    if isinstance(pred, (bool, np.bool_)):
        return true_fn() if pred else false_fn()
    outer = _graph_of([pred])
    pred = _lift(outer, pred, [])
    if pred.dtype != np.bool_ or not _maybe_scalar(pred):
        raise _at_user_line(ShapeError(f"cond: pred must be a scalar bool tensor, got "
                                       f"{fmt_shape(pred.spec)} {pred.dtype.name}"), outer, "cond")
    with outer.name_scope(name or "cond") as scope:
        tb, t_out, rebuild = _trace(outer, scope + "then", true_fn)
        fb, f_out, _ = _trace(outer, scope + "else", false_fn)
    if len(t_out) != len(f_out):
        raise _at_user_line(ShapeError(f"cond: true_fn returns {len(t_out)} tensors but "
                                       f"false_fn returns {len(f_out)}"), outer, "cond")
    try:
        specs = [_merge_specs(a.spec, b.spec, f"cond: output {k} differs between branches")
                 for k, (a, b) in enumerate(zip(t_out, f_out))]
    except ShapeError as e:
        raise _at_user_line(e, outer, "cond") from None
    outer_caps = _union_captures(tb, fb)
    fns = tuple(Function(b, [b.capture(t) for t in outer_caps], outs)
                for b, outs in ((tb, t_out), (fb, f_out)))
    node = outer.create_node(COND, (pred, *outer_caps), {"branches": fns}, specs, scope[:-1],
                             exact_name=True)
    return rebuild(list(node.outputs))


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """TF1's `case`: the result of the fn of the first pred that is true, else `default()`.

    pred_fn_pairs: a list of (scalar bool tensor, callable) pairs, or a dict of them (in
    its order). Without `default`, no pred being true raises InvalidArgumentError at run
    time ("None of conditions evaluated as True"); `exclusive=True` raises when more than
    one is true. Built as nested `cond`s, every fn is built now.

    >>> from dualgrad import graph as tf
    >>> x = tf.placeholder(tf.int32, [])
    >>> y = tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))],
    ...             default=lambda: tf.constant(0))
    >>> with tf.Session() as s:
    ...     [int(s.run(y, {x: v})) for v in (-5, 0, 7)]
    [-1, 0, 1]
    """
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if not pairs or any(not isinstance(p, (tuple, list)) or len(p) != 2 or not callable(p[1])
                        for p in pairs):
        raise TypeError("case: pred_fn_pairs must be a non-empty list (or dict) of "
                        "(bool tensor, callable) pairs")
    if default is not None and not callable(default):
        raise TypeError("case: default must be callable")
    g = _graph_of([p for p, _ in pairs])
    with g.as_default(), g.name_scope(name or "case"):
        preds = [_lift(g, p, []) for p, _ in pairs]
        checks = _case_checks(preds, default is None, exclusive)
        with g.control_dependencies(checks):
            first = identity(preds[0])
    fns = [f for _, f in pairs]
    rest = default if default is not None else fns[-1]
    for p, f in reversed(list(zip([first] + preds[1:], fns))):
        rest = (lambda p, f, r: lambda: cond(p, f, r))(p, f, rest)
    return rest()


def _case_checks(preds, need_one, exclusive):
    names = ", ".join(p.name for p in preds)
    flags = stack(preds)
    checks = []
    if need_one:
        checks.append(Assert(reduce_any(flags), ["Input error: None of conditions evaluated "
                                                 "as True:", flags], name="none_true"))
    if exclusive:
        checks.append(Assert(less_equal(reduce_sum(cast(flags, "int32")), 1),
                             [f"Input error: exclusive=True: more than 1 conditions ({names}) "
                              f"evaluated as True:", flags], name="exclusive"))
    return checks


def _union_captures(*bodies):
    seen, out = set(), []
    for b in bodies:
        for src, _ in b.captures:
            if id(src) not in seen:
                seen.add(id(src))
                out.append(src)
    return out


# -- while_loop ----------------------------------------------------------------------------------
def _while_kernel(node):
    c_fn, b_fn = node.attrs["cond"], node.attrs["body"]
    n, nc, max_it = node.attrs["n_vars"], node.attrs["n_cond_caps"], node.attrs["max_iter"]
    specs = [t.spec for t in node.outputs]
    stacked = specs[n:]

    def run(state, *args):
        vs, cc, bc = list(args[:n]), args[n:n + nc], args[n + nc:]
        it, ys = 0, []
        while (max_it is None or it < max_it) and _scalar_pred(c_fn(state, *vs, *cc)[0], node,
                                                               "while_loop"):
            out = b_fn(state, *vs, *bc)
            vs = list(out[:n])
            ys.append(out[n:])
            _check_invariants(node, specs, vs, it)
            it += 1
        res = vs + [stack_steps([y[j] for y in ys], s, node) for j, s in enumerate(stacked)]
        return res[0] if len(res) == 1 else tuple(res)
    return run, True


def stack_steps(values, spec, node):
    """Per-iteration values stacked on a new first axis (TensorArray.stack): one copy at
    the end, so collecting T steps costs O(T), not O(T^2) as concatenating in the loop."""
    if values:
        return np.stack(values)
    if None in spec.shape[1:]:
        raise InvalidArgumentError(
            f"while_loop '{node.name}': no iteration ran, and a stacked value of unknown "
            f"shape {fmt_shape(spec.shape[1:])} cannot be stacked zero times", node=node)
    return np.zeros((0,) + tuple(spec.shape[1:]), spec.dtype)


def _check_invariants(node, specs, vs, it):
    for k, (s, v) in enumerate(zip(specs, vs)):    # NOTE: zip stops at the loop variables
        if v.ndim != len(s.shape) or any(d is not None and d != a for d, a in zip(s.shape,
                                                                                  v.shape)):
            raise ShapeError(f"while_loop: iteration {it} changed loop variable {k} to shape "
                             f"{fmt_shape(v.shape)}, outside its shape invariant "
                             f"{fmt_shape(s.shape)}")


WHILE = graph_op("while", _while_kernel, vjp=while_vjp)


def while_loop(cond, body, loop_vars, shape_invariants=None, maximum_iterations=None,
               name=None, return_same_structure=False):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`; both built once now.

    The body must keep each loop variable's dtype and shape; a dim that may change needs a
    None in `shape_invariants` (checked at build time and after every iteration).
    """
    single = isinstance(loop_vars, Tensor) or not isinstance(loop_vars, (list, tuple))
    lv = [loop_vars] if single else list(loop_vars)
    outs = _while(cond, body, lv, None if shape_invariants is None else
                  [shape_invariants] if single else shape_invariants, maximum_iterations, name)
    if single or (len(outs) == 1 and not return_same_structure):
        return outs[0]
    return type(loop_vars)(outs) if isinstance(loop_vars, tuple) else outs


def while_loop_stacked(cond, body, loop_vars, n_stacked, shape_invariants=None, name=None):
    """A while_loop whose body returns the new loop_vars followed by `n_stacked` values of
    this iteration; those come out stacked on a new first axis (TF1's TensorArray write in
    the loop, `stack()` after it), in time linear in the number of iterations. Returns the
    final loop_vars followed by the stacked values (first dim unknown)."""
    return _while(cond, body, list(loop_vars), shape_invariants, None, name, n_stacked)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """fn applied to each slice elems[i] along the first dim, the results stacked (tf.map_fn):
    `elems` a tensor or a list/tuple of tensors (fn then gets the same structure), fn's
    result a tensor or a list/tuple of them. A while_loop, so the first dim may be unknown;
    gradients flow through it. `dtype`, `parallel_iterations` and `swap_memory` are accepted
    and not needed (the output structure is read from fn's result)."""
    if not back_prop:
        raise NotImplementedError("map_fn: back_prop=False is not supported; wrap the result "
                                  "in stop_gradient")
    many = isinstance(elems, (list, tuple))
    xs = [_lift(_graph_of(list(elems) if many else [elems]), x, []) for x in
          (elems if many else [elems])]
    if not xs or any(x.ndim in (None, 0) for x in xs):
        raise ValueError("map_fn: elems must be tensors of rank 1 or more")
    n = xs[0].shape[0]
    if n is None:
        n = ops.reshape(ops.slice_(shape(xs[0]), index=(slice(0, 1),)), ())
    results = []

    def body(i):
        parts = [ops.take(x, i, axis=0) for x in xs]
        res = fn(type(elems)(parts) if many else parts[0])
        results.append(res)
        return [i + 1] + (list(res) if isinstance(res, (list, tuple)) else [res])

    outs = _while(lambda i: ops.lt(i, n), body, [np.zeros((), np.int32)], None, None,
                  name or "map", n_stacked=None)[1:]
    if xs[0].shape[0] is not None:   # NOTE: the loop's stacked dim is unknown; here it is not
        outs = [ops.reshape(o, (xs[0].shape[0],) + tuple(o.shape[1:]))
                if None not in o.shape[1:] else o for o in outs]
    res = results[0]
    return type(res)(outs) if isinstance(res, (list, tuple)) else outs[0]


def _while(cond, body, lv, shape_invariants, maximum_iterations, name, n_stacked=0):
    outer = _graph_of(lv) if any(isinstance(v, Tensor) for v in lv) else get_default_graph()
    lv = [_lift(outer, v, []) for v in lv]
    inv = [v.shape for v in lv] if shape_invariants is None else \
        [tuple(s) for s in shape_invariants]
    with outer.name_scope(name or "while") as scope:
        cb, c_out, _ = _trace_loop(outer, scope + "cond", cond, lv, inv)
        bb, b_out, _ = _trace_loop(outer, scope + "body", body, lv, inv)
    if n_stacked is None:   # NOTE: every body result after the loop variables is stacked
        n_stacked = len(b_out) - len(lv)
    _check_loop(outer, c_out, b_out, lv, inv, n_stacked)
    c_fn = Function(cb, cb.var_inputs + [p for _, p in cb.captures], c_out)
    b_fn = Function(bb, bb.var_inputs + [p for _, p in bb.captures], b_out)
    ins = (*lv, *[s for s, _ in cb.captures], *[s for s, _ in bb.captures])
    attrs = {"cond": c_fn, "body": b_fn, "n_vars": len(lv), "n_cond_caps": len(cb.captures),
             "max_iter": None if maximum_iterations is None else int(maximum_iterations)}
    specs = [Spec(tuple(s), v.dtype) for s, v in zip(inv, lv)]
    specs += [Spec((None,) + tuple(t.shape), t.dtype) for t in b_out[len(lv):]]
    node = outer.create_node(WHILE, ins, attrs, specs, scope[:-1], exact_name=True)
    return list(node.outputs)


def _trace_loop(outer, label, fn, lv, inv):
    body = Body(outer, label)
    with body.as_default():
        body.var_inputs = [placeholder(v.dtype, s, name="loop_var") for v, s in zip(lv, inv)]
        out = fn(*body.var_inputs)
        leaves, rebuild = _flatten(out)
        leaves = [_lift(body, v, []) if not isinstance(v, Tensor) else
                  (v if v.graph is body else body.capture(v)) for v in leaves]
    return body, leaves, rebuild


def _check_loop(outer, c_out, b_out, lv, inv, n_stacked=0):
    def fail(msg):
        raise _at_user_line(ShapeError(msg), outer, "while")
    if len(c_out) != 1 or c_out[0].dtype != np.bool_ or not _maybe_scalar(c_out[0]):
        fail(f"while_loop: cond must return one scalar bool tensor, got "
             f"{[(fmt_shape(t.spec), t.dtype.name) for t in c_out]}")
    if len(b_out) != len(lv) + n_stacked:
        fail(f"while_loop: body returns {len(b_out)} values for {len(lv)} loop variables"
             + (f" and {n_stacked} stacked values" if n_stacked else ""))
    for k, (t, v, s) in enumerate(zip(b_out, lv, inv)):
        if t.dtype != v.dtype:
            fail(f"while_loop: body changes the dtype of loop variable {k} from {v.dtype.name} "
                 f"to {t.dtype.name}")
        if len(t.shape) != len(s) or any(a is not None and a != b for a, b in zip(s, t.shape)):
            fail(f"while_loop: body changes loop variable {k} from shape {fmt_shape(s)} to "
                 f"{fmt_shape(t.spec)}; give shape_invariants with None for the dims that "
                 f"change")
        if len(v.shape) != len(s) or any(a is not None and b is not None and a != b
                                         for a, b in zip(s, v.shape)):
            fail(f"while_loop: loop variable {k} of shape {fmt_shape(v.spec)} does not fit "
                 f"its shape invariant {fmt_shape(s)}")

