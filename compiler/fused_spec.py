"""The fused-kernel spec: one SSA program over an R x C view, and what each node is in it.

The fusion pass (compiler/passes/fuse.py) describes each group of elementwise ops and
last-axis reductions as a `FusedSpec`; `codegen.generate_source` turns it into a kernel
module and `fused_kernel.compile_fused` compiles and calls it.

    >>> spec = FusedSpec(
    ...     inputs=(("float32", "full"),),
    ...     nodes=(("in", 0), ("const", 2.0, "float32"),
    ...            ("ew", "({0} * {1})", (0, 1), "float32"),
    ...            ("reduce", "sum", 2, "float32")),
    ...     outputs=(2, 3))
    >>> info = SpecInfo(spec)
    >>> info.role, info.level, info.flat
    (['full', 'scalar', 'full', 'row'], [0, 0, 0, 1], False)

Each value has a *role* on the R x C view: `full` (R, C), `row` (R,), `col` (C,) or
`scalar` ().
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from dualgrad.ops.rules import floating

from ._template import DTYPES

ROLES = ("full", "row", "col", "scalar")
REDUCTIONS = ("sum", "max", "min")


def reduce_seed(how: str, dtype: str):
    """What a fused reduction starts from, and so gives for an empty row: 0 for a sum, the
    lowest (highest) value of the dtype for a max (min), -inf (inf) for floats."""
    if how == "sum":
        return 0
    if dtype == "bool":
        return how == "min"
    if floating(np.dtype(dtype)):
        return float("-inf") if how == "max" else float("inf")
    info = np.iinfo(dtype)
    return int(info.min if how == "max" else info.max)


class CodegenError(Exception):
    """The spec cannot be compiled into a fused kernel; the message is a one-line reason."""


# -- the spec ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FusedSpec:
    """An SSA program over an R x C view. See the module docstring for an example.

    inputs:  ((dtype, role), ...) with role in full (R, C) | row (R,) | col (C,) | scalar ().
    nodes:   ("in", i) | ("const", value, dtype) | ("ew", template, (args...), dtype) |
             ("reduce", "sum"|"max"|"min", arg, dtype) | ("dim", "R"|"C", dtype) (the
             run-time row or column count as a scalar, e.g. for a mean over unknown C);
             node k uses only nodes < k.
    outputs: node indices; each is returned with the shape of its role.
    """
    inputs: tuple
    nodes: tuple
    outputs: tuple

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple((str(d), str(k)) for d, k in self.inputs))
        object.__setattr__(self, "nodes", tuple(_norm_node(n) for n in self.nodes))
        object.__setattr__(self, "outputs", tuple(int(o) for o in self.outputs))
        _validate(self)

    def canonical(self) -> str:
        """A stable text form (dtypes, roles, templates, constants): the cache key's base."""
        return repr((self.inputs, self.nodes, self.outputs))


def _norm_node(node):
    node = tuple(node)
    op = node[0]
    if op == "in":
        return ("in", int(node[1]))
    if op == "const":
        dt = str(node[2])
        conv = {"bool": bool, "int32": int, "int64": int}.get(dt, float)
        return ("const", conv(node[1]), dt)
    if op == "ew":
        return ("ew", str(node[1]), tuple(int(a) for a in node[2]), str(node[3]))
    if op == "reduce":
        return ("reduce", str(node[1]), int(node[2]), str(node[3]))
    if op == "dim":
        return ("dim", str(node[1]), str(node[2]))
    raise ValueError(f"FusedSpec: unknown node op {op!r} in {node!r}")


def _validate(spec):
    for dt, role in spec.inputs:
        if dt not in DTYPES or role not in ROLES:
            raise ValueError(f"FusedSpec: input ({dt!r}, {role!r}): dtype must be one of "
                             f"{DTYPES} and role one of {ROLES}")
    for k, node in enumerate(spec.nodes):
        if node[0] == "dim" and node[1] not in ("R", "C"):
            raise ValueError(f"FusedSpec: node {k}: dim must be 'R' or 'C', got {node[1]!r}")
        refs = {"in": (), "const": (), "dim": (), "ew": node[2] if node[0] == "ew" else (),
                "reduce": (node[2],) if node[0] == "reduce" else ()}[node[0]]
        if any(not 0 <= a < k for a in refs):
            raise ValueError(f"FusedSpec: node {k} {node!r} may only use nodes 0..{k - 1}")
        if node[0] == "in" and not 0 <= node[1] < len(spec.inputs):
            raise ValueError(f"FusedSpec: node {k} reads input {node[1]}, "
                             f"but there are {len(spec.inputs)} inputs")
        if node[0] == "reduce" and node[1] not in REDUCTIONS:
            raise ValueError(f"FusedSpec: node {k}: reduction {node[1]!r} not in {REDUCTIONS}")
        if node[0] != "in" and node[-1] not in DTYPES:
            raise ValueError(f"FusedSpec: node {k}: dtype {node[-1]!r} not in {DTYPES}")
    if not spec.outputs or any(not 0 <= o < len(spec.nodes) for o in spec.outputs):
        raise ValueError(f"FusedSpec: outputs {spec.outputs} must be node indices "
                         f"0..{len(spec.nodes) - 1} (at least one)")


# -- analysis: role, dtype and reduction level of every node -----------------------------------
def node_args(node):
    return node[2] if node[0] == "ew" else (node[2],) if node[0] == "reduce" else ()


def combine_roles(roles):
    """The role of an elementwise result from its inputs' (full wins; row with col is full)."""
    ks = set(roles) - {"scalar"}
    if "full" in ks or ks == {"row", "col"}:
        return "full"
    return ks.pop() if ks else "scalar"


class SpecInfo:
    """Per-node role, dtype and level (how many reductions deep it sits)."""

    def __init__(self, spec: FusedSpec):
        self.spec = spec
        self.role, self.dtype, self.level = [], [], []
        for node in spec.nodes:
            op, args = node[0], node_args(node)
            if op == "in":
                dt, role = spec.inputs[node[1]]
            elif op in ("const", "dim"):
                dt, role = node[2], "scalar"
            elif op == "ew":
                dt, role = node[3], combine_roles(self.role[a] for a in args)
            else:
                dt, role = node[3], "row"
            lvl = max((self.level[a] for a in args), default=0) + (op == "reduce")
            self.role.append(role)
            self.dtype.append(dt)
            self.level.append(lvl)
        self.needed = self.cone(spec.outputs, lambda k: True)
        self.flat = all(spec.nodes[k][0] != "reduce" and self.role[k] in ("full", "scalar")
                        for k in self.needed)
        self.depth = max((self.level[k] for k in self.needed), default=0)

    def cone(self, targets, inside, stop=frozenset()):
        """Sorted nodes reachable from targets through nodes for which inside(k) holds
        (nodes in `stop` are included but not looked through)."""
        seen, stack = set(), [t for t in targets if inside(t)]
        while stack:
            k = stack.pop()
            if k not in seen:
                seen.add(k)
                if k not in stop:
                    stack.extend(a for a in node_args(self.spec.nodes[k]) if inside(a))
        return sorted(seen)

