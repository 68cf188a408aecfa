"""Algebraic simplification: a table of small local rewrites, run to a fixed point.

Each rule looks at one node (and, where it matters, who uses its inputs: `users`) and
returns the value that replaces its output, or None. A replacement must have exactly the
node's shape and dtype; rules never change results except `x * 0 -> 0`, which (like
-ffast-math) ignores that inf * 0 and nan * 0 are nan.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.rules import broadcast
from ..ir import INode, const_node

NAME = "simplify"


def _const_eq(ref, value):
    n, _ = ref
    return n.tag == "const" and n.value.size > 0 and bool(np.all(n.value == value))


def _same_spec(ref, spec):
    s = ref[0].specs[ref[1]]
    return tuple(s.shape) == tuple(spec.shape) and s.dtype == spec.dtype


def _identity_operand(n, unit, positions=(0, 1)):
    """x op unit -> x (for add 0, mul 1, …), when x already has the result's spec."""
    for k in positions:
        other = n.inputs[1 - k]
        if _const_eq(n.inputs[k], unit) and _same_spec(other, n.spec):
            return other
    return None


def add_zero(n, users):
    return _identity_operand(n, 0) if n.op.name == "add" else None


def sub_zero(n, users):
    return _identity_operand(n, 0, (1,)) if n.op.name == "sub" else None


def mul_one(n, users):
    return _identity_operand(n, 1) if n.op.name == "mul" else None


def div_one(n, users):
    return _identity_operand(n, 1, (1,)) if n.op.name == "div" else None


def pow_one(n, users):
    return _identity_operand(n, 1, (1,)) if n.op.name == "pow" else None


def mul_zero(n, users):
    if n.op.name != "mul" or None in n.spec.shape:
        return None
    if any(_const_eq(r, 0) for r in n.inputs):
        return _new_const(np.zeros(n.spec.shape, n.spec.dtype), n)
    return None


def double_neg(n, users):
    src = n.inputs[0][0]
    if n.op.name == "neg" and src.tag == "op" and src.op.name == "neg":
        return src.inputs[0]
    return None


def identity_like(n, users):
    """stop_gradient, and shape ops / casts whose output equals their input."""
    name = n.op.name
    if name == "stop_gradient":
        return n.inputs[0]
    if name in ("reshape", "reshape_like", "broadcast_to", "broadcast_like", "sum_to_like",
                "cast", "expand_dims", "squeeze") and _same_spec(n.inputs[0], n.spec):
        return n.inputs[0]
    if name == "transpose" and tuple(n.attrs["axes"]) == tuple(range(len(n.attrs["axes"]))):
        return n.inputs[0]
    return None


def transpose_transpose(n, users):
    src = n.inputs[0][0]
    if n.op.name != "transpose" or src.tag != "op" or src.op.name != "transpose":
        return None
    inner, outer = src.attrs["axes"], n.attrs["axes"]
    axes = tuple(inner[a] for a in outer)
    return _new_op(ops.REGISTRY["transpose"], [src.inputs[0]], {"axes": axes}, n)


def reshape_reshape(n, users):
    src = n.inputs[0][0]
    if n.op.name != "reshape" or src.tag != "op" or src.op.name not in ("reshape",
                                                                         "reshape_like"):
        return None
    if len(users.get(id(src), ())) > 1:
        # NOTE: a reshape of a strided array copies; merging into a shared one would copy
        # twice (the transformer's qkv gradient: 32 µs each)
        return None
    return _new_op(ops.REGISTRY["reshape"], [src.inputs[0]],
                   {"shape": tuple(n.spec.shape)}, n)


def static_count(n, users):
    if n.op.name == "count":
        return _new_const(ops.REGISTRY["count"].kernel(
            np.empty(n.inputs[0][0].specs[n.inputs[0][1]].shape, np.int8), **n.attrs).astype(
            n.spec.dtype), n)
    return None


RULES = [add_zero, sub_zero, mul_one, div_one, pow_one, mul_zero, double_neg, identity_like,
         transpose_transpose, reshape_reshape, static_count]


def _new_const(value, n):
    c = const_node(value, origin=n.origin)
    return (c, 0)


def _new_op(op, inputs, attrs, n):
    m = INode("op", op, inputs, attrs, [n.spec], origin=n.origin)
    return (m, 0)


def broadcast_into_users(prog, counts):
    """Elementwise ops broadcast by themselves: an explicit broadcast_to / broadcast_like (or
    expand_dims) whose every user is elementwise and keeps its output shape without it is
    dropped, so no stride-0 view is materialised (fused loops read the small operand)."""
    users = prog.users()
    for n in list(prog.nodes):
        if n.tag != "op" or n.op.name not in ("broadcast_to", "broadcast_like"):
            continue
        src = n.inputs[0]
        uses = users[id(n)]
        if not uses or any(f[0] is n for f in prog.fetches):
            continue
        if all(_keeps_shape(u, n, src) for u, _ in uses):
            for u, k in uses:
                u.inputs[k] = src
            counts["broadcast_into_users"] = counts.get("broadcast_into_users", 0) + 1


def _keeps_shape(u, n, src):
    """u still has its shape with every operand read from broadcast node n replaced by src."""
    if u.tag != "op" or u.op.name not in ops.ELEMENTWISE or not u.pure():
        return False
    specs = [src[0].specs[src[1]] if s[0] is n else s[0].specs[s[1]] for s in u.inputs]
    try:
        return tuple(broadcast(u.op.name, *specs)) == tuple(u.spec.shape)
    except ops.ShapeError:
        return False


def run(prog):
    from ..ir import topo_sort
    from .prune import dead_code
    counts = {}
    broadcast_into_users(prog, counts)
    changed = True
    while changed:
        changed = False
        users = prog.users()
        for n in list(prog.nodes):
            if not n.pure():
                continue
            for rule in RULES:
                new = rule(n, users)
                if new is None:
                    continue
                if new[0] not in prog.nodes:
                    prog.nodes.append(new[0])
                prog.replace_uses((n, 0), new)
                counts[rule.__name__] = counts.get(rule.__name__, 0) + 1
                changed = True
                break
        if changed:
            topo_sort(prog)
            dead_code(prog)
    return {"rewrites": counts}
