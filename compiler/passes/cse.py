"""Common-subexpression elimination: pure nodes with the same op, inputs and attrs merge.

Small constants with equal values merge too. An input an op reads only for its shape
(`Op.shape_only_from`: sum_to_like's `like`, …) is compared by its spec when known.
Stateful nodes (random, variables, assign) never merge.
"""
from __future__ import annotations

from ..ir import known

NAME = "cse"
MAX_CONST_BYTES = 4096


def _key(n):
    if n.tag == "const" and not n.controls:
        v = n.value
        if v.nbytes <= MAX_CONST_BYTES:
            return ("const", v.dtype.str, v.shape, v.tobytes())
        return None
    if not n.pure():
        return None
    shape_from = n.op.shape_only_from
    if shape_from is None:
        shape_from = len(n.inputs)
    ins = tuple((id(src), i) if k < shape_from or not known(src.specs[i]) else
                ("spec", tuple(src.specs[i].shape), src.specs[i].dtype.name)
                for k, (src, i) in enumerate(n.inputs))
    return (n.op.name, ins, repr(sorted(n.attrs.items())))


def run(prog):
    seen, merged = {}, 0
    alias = {}
    for n in prog.nodes:
        n.inputs = [(alias.get(id(src), src), i) for src, i in n.inputs]
        n.controls = [alias.get(id(c), c) for c in n.controls]
        k = _key(n)
        if k is None:
            continue
        first = seen.get(k)
        if first is None:
            seen[k] = n
            continue
        alias[id(n)] = first
        merged += 1
    prog.fetches = [(alias.get(id(n), n), i) for n, i in prog.fetches]
    from .prune import dead_code
    dead_code(prog)
    return {"merged": merged}
