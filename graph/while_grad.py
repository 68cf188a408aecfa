"""Gradients through `while_loop`: re-run the loop keeping each iteration's values, then
apply the body's gradient graph (built once, in the body, with `gradients`) backwards.

The gradient of output `i` of a while node is a `while_grad` node with the forward inputs
and the incoming gradients as inputs; its outputs are the gradients of the float initial
loop variables and of the float tensors the body captured. Second-order gradients through
it are not supported (a clear error, never a silent zero).
"""
from __future__ import annotations

from dualgrad import ops
from dualgrad.ops.core import Spec

from .core import _lift, graph_op, placeholder
from .errors import UnimplementedError
from .gradients import gradients
from .plan import Function

_ADD = ops.REGISTRY["add"].kernel         # the op library's own kernels, no arithmetic here
_ZEROS_LIKE = ops.REGISTRY["zeros_like"].kernel


def _float(t):
    return t.dtype.kind in "fc"


def _grad_function(b_fn, n, fv, fc, fs=()):
    """In the body graph: d(new float vars, float stacked values)/d(float vars, float
    captures), given the incoming gradients as placeholders."""
    body = b_fn.body
    ys = [b_fn.outputs[k] for k in fv] + [b_fn.outputs[k] for k in fs]
    with body.as_default(), body.name_scope(body.label + "/grad/"):
        gys = [placeholder(y.dtype, y.shape, name="grad_in") for y in ys]
        xs = [b_fn.inputs[k] for k in fv] + [b_fn.inputs[n + k] for k in fc]
        grads = gradients(ys, xs, grad_ys=gys)
        grads = [ops.zeros_like(x) if g is None else g for x, g in zip(xs, grads)]
    return Function(body, b_fn.inputs + gys, grads)


def _while_grad_kernel(node):
    a = node.attrs
    c_fn, b_fn, g_fn = a["cond"], a["body"], a["grad"]
    n, nc, max_it, nf = a["n_vars"], a["n_cond_caps"], a["max_iter"], len(a["float_vars"])
    ns = len(a.get("float_stacked", ()))
    n_in = len(node.inputs) - nf - ns

    def run(state, *args):
        vs, cc, bc = list(args[:n]), args[n:n + nc], args[n + nc:n_in]
        history, it = [], 0
        while (max_it is None or it < max_it) and c_fn(state, *vs, *cc)[0]:
            history.append(vs)
            vs = list(b_fn(state, *vs, *bc)[:n])
            it += 1
        g_vars, g_stacked = list(args[n_in:n_in + nf]), args[n_in + nf:]
        g_caps = [_ZEROS_LIKE(bc[k]) for k in a["float_caps"]]
        for k in reversed(range(len(history))):
            res = g_fn(state, *history[k], *bc, *g_vars, *[g[k] for g in g_stacked])
            g_vars = res[:nf]
            g_caps = [_ADD(x, y) for x, y in zip(g_caps, res[nf:])]
        outs = tuple(g_vars) + tuple(g_caps)
        return outs[0] if len(outs) == 1 else outs   # NOTE: a plan takes one output bare
    return run, True


def _no_second_order(g, *inputs, out, **kw):
    raise UnimplementedError(f"second-order gradients through while_loop "
                             f"'{out.node.name}' are not supported", node=out.node)


WHILE_GRAD = graph_op("while_grad", _while_grad_kernel, vjp=_no_second_order)


def while_vjp(g, *inputs, out, needs, **attrs):
    """Gradients of a while node's inputs, given gradient g of its output `out.index`."""
    node = out.node
    n, nc = attrs["n_vars"], attrs["n_cond_caps"]
    b_fn = attrs["body"]
    fv = tuple(k for k in range(n) if _float(node.outputs[k]))
    fc = tuple(k for k in range(len(b_fn.inputs) - n) if _float(b_fn.inputs[n + k]))
    fs = tuple(k for k in range(n, len(node.outputs)) if _float(node.outputs[k]))
    if out.index not in fv + fs:
        return (None,) * len(inputs)
    g_fn = _grad_function(b_fn, n, fv, fc, fs)
    gs = [_lift(node.graph, g, [out]) if k == out.index else ops.zeros_like(node.outputs[k])
          for k in fv + fs]
    gattrs = {**attrs, "grad": g_fn, "float_vars": fv, "float_caps": fc, "float_stacked": fs}
    specs = [Spec(node.inputs[k].shape, node.inputs[k].dtype) for k in fv] + \
        [Spec(node.inputs[n + nc + k].shape, node.inputs[n + nc + k].dtype) for k in fc]
    gnode = node.graph.create_node(WHILE_GRAD, tuple(node.inputs) + tuple(gs), gattrs, specs,
                                   "while_grad")
    grads = [None] * len(inputs)
    outs = list(gnode.outputs)
    for k in fv:
        grads[k] = outs.pop(0)
    for k in fc:
        grads[n + nc + k] = outs.pop(0)
    return tuple(grads)
