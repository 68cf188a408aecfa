"""Constant folding: a pure op whose inputs are all constants becomes a constant.

The value comes from the op's own kernel (no second implementation of any arithmetic).
Variables are not constants; random and other stateful nodes are never folded.
"""
from __future__ import annotations

import numpy as np

from ..ir import const_node

NAME = "constant_fold"
MAX_ELEMENTS = 1 << 24   # NOTE: don't materialise huge broadcasts at optimisation time


def run(prog):
    folded = 0
    for n in prog.nodes:
        if not n.pure() or not all(src.tag == "const" for src, _ in n.inputs):
            continue
        size = n.spec.shape and int(np.prod(n.spec.shape))
        if size and size > MAX_ELEMENTS:
            continue
        try:
            value = n.op.kernel(*[src.value for src, _ in n.inputs], **n.attrs)
        except Exception:  # noqa: BLE001 - leave it to fail at run time, naming the node
            continue
        c = const_node(np.array(value, dtype=n.spec.dtype), origin=n.origin)
        _become(n, c)
        folded += 1
    return {"folded": folded}


def _become(n, c):
    """Turn node n into constant c in place (users keep pointing at n)."""
    n.tag, n.op, n.inputs, n.attrs = "const", None, [], {}
    n.value, n.specs = c.value, c.specs
