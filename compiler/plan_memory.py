"""A plan's memory, computed from its schedule: `MemoryReport` and the model behind it.

Every value of an optimised program has a concrete shape, so its bytes are known; the plan
frees a value after its last reader (graph/plan.py `plan_frees`). Walking the schedule gives
the high-water mark of the arrays a run allocates:

- a step's outputs are allocated when it runs and live until their last reader has run
  (an output nobody reads: during its own step only);
- a view (an op whose kernel may return its input: reshape, transpose, ...) allocates
  nothing and keeps the array it views alive as long as itself;
- feeds, constants and variable reads allocate nothing; a fetched value, or one stored in a
  variable, lives to the end of the run; an assign releases the variable's previous value
  once the last reader of that value has run;
- the fused kernels' preallocated buffers (compiler/passes/buffers.py) are held by the plan
  across runs: `buffers` bytes, counted in `peak` at every step.

`peak = buffers + transient`, `transient` being the high-water mark of the rest. What the
model does not see: temporaries inside one kernel (NumPy's own, a copy of a non-contiguous
input), and a view op that had to copy. tests/compiler/test_plan_memory.py checks it against
tracemalloc.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class MemoryReport:
    """What `Plan.memory` and `Session.plan_memory` report, in bytes."""
    peak: int              # buffers + transient
    buffers: int           # fused kernels' preallocated buffers, held across runs
    transient: int         # high-water mark of the arrays allocated during a run
    at: str                # the step running at the high-water mark
    steps: int
    budget: int | None = None      # the memory_budget the plan was made for, in bytes
    unbudgeted: int | None = None  # the peak without a budget (when a budget was given)
    recomputed: int = 0            # steps added to recompute values (rematerialisation)

    def __str__(self):
        s = (f"planned peak {_mib(self.peak)} ({_mib(self.buffers)} preallocated buffers + "
             f"{_mib(self.transient)} allocated during a run, at '{self.at}'), "
             f"{self.steps} steps")
        if self.budget is not None:
            s += (f"; budget {_mib(self.budget)} (unbudgeted peak {_mib(self.unbudgeted)}), "
                  f"{self.recomputed} steps recompute values")
        return s


def _mib(n):
    return f"{n / 2**20:.2f} MiB"


def nbytes(spec) -> int:
    if spec.shape is None or None in spec.shape:
        return 0      # NOTE: unknown until run time (a data-dependent shape): not counted
    return int(np.prod(spec.shape, dtype=np.int64)) * np.dtype(spec.dtype).itemsize


def _fresh_value(ref, spec):
    """The value is a fused kernel's output of exactly `spec` that leaves the plan: such an
    output is allocated anew on every run (compiler/passes/buffers.py), so an assign may keep
    it as the variable's value instead of copying it."""
    src, i = ref
    if src.tag != "fused":
        return False
    got = src.specs[i]
    return tuple(got.shape) == tuple(spec.shape) and got.dtype == spec.dtype


def adopts(n) -> bool:
    """`n` is an assign that keeps the array it is given as the variable's value."""
    return n.tag == "graph" and n.origin.type == "assign" and \
        _fresh_value(n.inputs[0], n.origin.outputs[0].spec)


def _view(n, contiguous, i=0):
    """(is a view of input 0, its result is C-contiguous) for output `i` of node `n`."""
    if n.tag != "op" or not n.op.may_alias or not n.inputs:
        return False, True
    src, j = n.inputs[0]
    layout, c = n.op.alias_layout, contiguous.get((id(src), j), True)   # NOTE: ops/core.py Op
    if layout == "same_spec":
        same = tuple(src.specs[j].shape) == tuple(n.specs[i].shape) and \
            src.specs[j].dtype == n.specs[i].dtype
        return same, c if same else True
    if layout == "reshape":
        return c, True
    if layout == "transpose":
        return True, c and _moves_nothing(n.attrs.get("axes"), n.specs[i].shape)
    if layout == "strided":
        return True, False
    return True, c


def _moves_nothing(axes, shape):
    if axes is None:
        return sum(d != 1 for d in shape) <= 1
    kept = [a for a in axes if shape[list(axes).index(a)] != 1]
    return kept == sorted(kept)


def _gtype(n):
    return n.origin.type if n.tag == "graph" and n.origin is not None else None


def profile(prog, pooled=frozenset()):
    """Live bytes during each step of `prog.nodes` (feeds count as steps of 0), not counting
    the values in `pooled` ((id(node), index) pairs with a preallocated buffer)."""
    N = len(prog.nodes)
    root, size, end, start, contiguous = {}, {}, {}, {}, {}
    release = [0] * (N + 1)
    reads = {}                     # variable name -> last position its read value is used
    assigns = []                   # (position, variable name, bytes)
    for k, n in enumerate(prog.nodes):
        for src, i in n.inputs:
            r = root.get((id(src), i))
            if r is not None:
                end[r] = max(end[r], k)
            if _gtype(src) == "variable":
                reads[src.origin.name] = max(reads.get(src.origin.name, k), k)
        gt = _gtype(n)
        for i, spec in enumerate(n.specs):
            key = (id(n), i)
            if n.tag in ("feed", "const") or gt == "variable" or key in pooled:
                continue
            view, contiguous[key] = _view(n, contiguous, i)
            if (view or (gt or "").startswith("assign")) and n.inputs:
                src, j = n.inputs[0]
                if (id(src), j) in root:
                    root[key] = root[(id(src), j)]
                if not gt:
                    continue
            else:
                root[key] = key
                size[key], start[key], end[key] = nbytes(spec), k, k
            if gt and gt.startswith("assign"):
                assigns.append((k, n.origin.attrs.get("var"), nbytes(spec)))
                if adopts(n):
                    if key in root:
                        end[root[key]] = N - 1
                else:   # NOTE: the variable keeps a copy (graph/variables.py)
                    size[("copy", k)], start[("copy", k)], end[("copy", k)] = \
                        nbytes(spec), k, N - 1
    for f, i in prog.fetches:
        r = root.get((id(f), i)) if i is not None else None
        if r is not None:
            end[r] = N - 1
    delta = [0] * (N + 1)
    for r, b in size.items():
        delta[start[r]] += b
        delta[end[r] + 1] -= b
    for k, var, b in assigns:
        release[max(k, reads.get(var, k)) + 1] += b
    live, cur = [], 0
    for k in range(N):
        cur += delta[k] - release[k]
        live.append(cur)
    return live, root, size, start, end


def report(prog, budget=None, unbudgeted=None, recomputed=0) -> MemoryReport:
    """The MemoryReport of a program whose buffers are planned (after the buffers pass)."""
    pooled, held, seen = set(), 0, set()
    for n in prog.nodes:
        if n.tag == "fused" and n.fused.buffers is not None:
            pool, index = n.fused.buffers
            pooled.update((id(n), k) for k, b in enumerate(index) if b is not None)
            if id(pool) not in seen:
                seen.add(id(pool))
                from .passes.buffers import pool_bytes
                held += pool_bytes(pool)
    return summarise(prog, pooled, held, budget, unbudgeted, recomputed)


def summarise(prog, pooled, held, budget=None, unbudgeted=None, recomputed=0):
    live = profile(prog, pooled)[0]
    k = max(range(len(live)), key=live.__getitem__) if live else 0
    top = max(live, default=0)
    at = _name(prog.nodes[k]) if prog.nodes else ""
    steps = sum(1 for n in prog.nodes if n.tag != "feed")
    return MemoryReport(held + max(top, 0), held, max(top, 0), at, steps, budget, unbudgeted,
                        recomputed)


def _name(n):
    if n.tag == "fused":
        return n.fused.node.name
    return n.origin.name if n.origin is not None else n.name
