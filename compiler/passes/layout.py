"""Operand layout: a transpose that several matmuls read is copied once into C order, and a
product read only transposed is computed transposed.

A transpose is a strided view, and BLAS multiplies by it 1.5-2x slower than by a contiguous
matrix (the LSTM's recurrent gradient g @ W^T, once per time step: 22 against 12 µs), while
the copy costs about one such product. Runs after cse, which merges the per-step transposes
of the same weight into one node.

`transpose(a @ b)` of matrices is `b^T @ a^T`: the same product, with the result in C order.
A Linear layer's weight gradient has that form (`(x^T g)^T`, from y = x @ W^T): as a strided
view it was copied when it became `.grad` (4 µs at (128, 64)) and read strided by the update.
"""
from __future__ import annotations

from dualgrad import ops

from ..ir import INode, topo_sort

NAME = "layout"
_T = (1, 0)


def _copied(n, users):
    if n.tag != "op" or n.op.name != "transpose" or n.attrs.get("copy") or \
            None in n.spec.shape:
        return False
    uses = users.get(id(n), ())
    return len(uses) >= 2 and all(u.tag == "op" and u.op.name == "matmul" for u, _ in uses)


def _is_t(n):
    return n.tag == "op" and n.op.name == "transpose" and tuple(n.attrs["axes"]) == _T and \
        not n.attrs.get("copy")


def _transposed(ref, origin):
    """ref^T as a value: the input of a transpose node, else a new transpose node."""
    n, i = ref
    if _is_t(n):
        return n.inputs[0]
    s = n.specs[i]
    return (INode("op", ops.REGISTRY["transpose"], [ref], {"axes": _T},
                  [ops.Spec(s.shape[::-1], s.dtype)], origin=origin), 0)


def _transposed_products(prog, users):
    """transpose(a @ b) -> b^T @ a^T where the product of two matrices has no other reader."""
    fetched = {id(f[0]) for f in prog.fetches}
    done = 0
    for n in list(prog.nodes):
        if not _is_t(n) or n.inputs[0][1] != 0:
            continue
        src = n.inputs[0][0]
        if not src.pure() or src.op.name != "matmul" or id(src) in fetched or \
                len(users.get(id(src), ())) != 1 or \
                any(len(r[0].specs[r[1]].shape) != 2 for r in src.inputs):
            continue
        a, b = src.inputs
        new = INode("op", src.op, [_transposed(b, n.origin), _transposed(a, n.origin)],
                    dict(src.attrs), [n.spec], origin=src.origin)
        have = {id(m) for m in prog.nodes}
        prog.nodes += [m for m, _ in new.inputs if id(m) not in have] + [new]
        prog.replace_uses((n, 0), (new, 0))
        done += 1
    if done:
        from .prune import dead_code
        topo_sort(prog)
        dead_code(prog)
    return done


def run(prog):
    turned = _transposed_products(prog, prog.users())
    users = prog.users()
    copied = [n for n in prog.nodes if _copied(n, users)]
    for n in copied:
        n.attrs = {**n.attrs, "copy": True}
    return {"copied": len(copied), "transposed_products": turned}
