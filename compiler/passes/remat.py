"""Rematerialisation: under a memory budget, recompute values instead of keeping them.

Run only when the plan has a budget (`Session(memory_budget=...)`, `compile(fn,
memory_budget=...)`; `prog.memory_budget`, in bytes or as a fraction of the unbudgeted peak).
The forward pass of a training step computes activations the backward pass reads much later;
between the two they only occupy memory. Greedily, while the planned peak
(compiler/plan_memory.py) is over the budget: at the step where memory peaks, among the
values alive there and read only before and after it, take the one that saves the most bytes
there per operation recomputed (its bytes, less those of inputs it would keep alive across
the peak) and compute it again, by a copy of its node, just before its first reader after the
peak; views of it read after the peak are copied onto the copy. Cheap element-wise loops go
first, then matrix products. Only pure ops and fused loops are copied (never a random or
stateful node), with the same inputs: the copy computes the same bits as the original, so
results are exactly those of the plan without a budget.

The buffers pass runs after this one and preallocates the fused loops' outputs by shape, so
the pass weighs each round by the peak the buffers will give, and tightens its own target when
they waste some. When no copy lowers the peak any more it stops; optimize() then warns that
the budget was not met, naming it and the peak reached.
"""
from __future__ import annotations

import copy

import numpy as np

from .. import plan_memory as PM
from . import buffers

NAME = "remat"
MAX_COPIES = 2000
TRIES = 8          # candidates tried per step before giving up


def run(prog):
    budget = prog.memory_budget
    unbudgeted = _peak(prog, budgeted=False)
    target = budget_bytes(budget, unbudgeted)
    prog.memory_target = (target, unbudgeted)
    copies, moves, goal = 0, 0, target
    for _ in range(8):
        if _peak(prog) <= target:
            break
        made = _greedy(prog, goal)
        copies, moves = copies + made[0], moves + made[1]
        over = _peak(prog) - target
        if over <= 0 or sum(made) == 0:
            break
        goal -= over
    from .prune import dead_code
    dead_code(prog)
    prog.recomputed = prog.recomputed + copies
    return {"recomputed": copies, "moved": moves, "budget": target,
            "unbudgeted": unbudgeted, "peak": _peak(prog)}


def budget_bytes(budget, unbudgeted) -> int:
    """A memory_budget in bytes: an int is bytes, a float in (0, 1] a fraction of the peak
    the plan has without a budget."""
    if isinstance(budget, float):
        return int(budget * unbudgeted)
    return int(budget)


def _peak(prog, budgeted=None):
    assigned, pool = buffers.plan(prog, budgeted)
    return PM.summarise(prog, set(assigned), buffers.pool_bytes(pool)).peak


def _greedy(prog, goal):
    """Copy nodes until the all-transient peak is at most `goal` or no copy lowers it; a
    copy that does not lower the peak (or the number of steps at it) is undone."""
    made, skip = [0, 0], set()      # copies, moves; skip: copies, and nodes that did not help
    while sum(made) < MAX_COPIES:
        live, root, size, start, end = PM.profile(prog)
        top = max(live)
        if top <= goal:
            break
        p = live.index(top)
        tries = [(n, "move") for n in _movable(prog, p, root, size, end, skip)[:TRIES]] + \
            [(n, "copy") for n in _ranked(prog, p, root, size, end, skip)[:TRIES]]
        for n, how in tries:
            saved = _snapshot(prog)
            if how == "copy":
                n, also = n
                copies = _copy(prog, n, p, also)
            else:
                copies = _move(prog, n, p)
            _renumber(prog)
            after = PM.profile(prog)[0]
            if max(after) < top or (max(after) == top and after.count(top) < live.count(top)):
                skip.update(id(c) for c in copies)
                made[how == "move"] += len(copies)
                break
            _restore(prog, saved)
            skip.add(id(n))
        else:
            break
    return made


def _snapshot(prog):
    return list(prog.nodes), [list(n.inputs) for n in prog.nodes], list(prog.fetches)


def _restore(prog, saved):
    nodes, inputs, fetches = saved
    prog.nodes, prog.fetches = nodes, fetches
    for n, ins in zip(nodes, inputs):
        n.inputs = ins
    _renumber(prog)


def _renumber(prog):
    """Node ids follow the order again (copies and moves keep it topological)."""
    for k, n in enumerate(prog.nodes):
        n.id = k


def _reads(prog, root):
    reads = {}
    for k, n in enumerate(prog.nodes):
        for src, i in n.inputs:
            r = root.get((id(src), i))
            if r is not None:
                reads.setdefault(r, []).append(k)
    return reads


def _ranked(prog, p, root, size, end, skip):
    """Nodes before `p` whose copy after it would save bytes at `p`, best first (bytes saved
    there per operation recomputed)."""
    reads, last = _reads(prog, root), len(prog.nodes) - 1
    scored = []
    for n in prog.nodes[:p]:
        if id(n) in skip or not _copyable(n):
            continue
        own = [(id(n), i) for i in range(len(n.specs)) if root.get((id(n), i)) == (id(n), i)]
        if not own or any(end[r] >= last for r in own):
            continue      # NOTE: fetched or stored: it lives to the end anyway
        at_p = [r for r in own if end[r] > p]
        uses = [u for r in own for u in reads.get(r, ())]
        if not at_p or p in uses:
            continue
        extra, cost, also = 0, _cost(n), []
        for src, i in n.inputs:
            r = root.get((id(src), i))
            if r is None or end[r] >= p:
                continue          # NOTE: alive at p anyway (or not allocated by the run)
            if _copyable(src) and all(root.get((id(s2), j)) is None or
                                      end[root[(id(s2), j)]] >= p for s2, j in src.inputs):
                also.append(src)  # NOTE: recomputed too, from what is alive at p
                cost += _cost(src)
            else:
                extra += size[r]
        gain = sum(size[r] for r in at_p) - extra
        if gain > 0:
            scored.append((gain / (cost + 1.0), n.id, (n, also)))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [n for _, _, n in scored]


def _movable(prog, p, root, size, end, skip):
    """Nodes after `p` that could run before it (their inputs are ready) and are the last
    reader of values alive at `p` larger than their own outputs (a weight's gradient, read
    from an activation's gradient): run earlier, they free those sooner. Best first."""
    position = {id(n): k for k, n in enumerate(prog.nodes)}
    scored = []
    for k in range(p + 1, len(prog.nodes)):
        n = prog.nodes[k]
        if id(n) in skip or not _copyable(n) or \
                any(position[id(src)] >= p and not _ready_view(src, position, p)
                    for src, _ in n.inputs):
            continue
        freed = {r for r in (root.get((id(src), i)) for src, i in n.inputs)
                 if r is not None and end[r] == k}
        gain = sum(size[r] for r in freed) - \
            sum(size.get((id(n), i), 0) for i in range(len(n.specs)))
        if gain > 0:
            scored.append((-gain, k, n))
    scored.sort(key=lambda t: t[:2])
    return [n for _, _, n in scored]


def _ready_view(n, position, p):
    """`n` is a view whose input (through views) is computed before `p`."""
    while _is_view(n) and not n.controls:
        n = n.inputs[0][0]
        if position[id(n)] < p:
            return True
    return False


def _is_view(n):
    return n.tag == "op" and n.op.may_alias and len(n.inputs) == 1


def _move(prog, n, p=None):
    """Run `n` right after the last of its inputs (a pure node: only its position moves), with
    the views it reads that come later."""
    moved = []
    if p is None:
        p = prog.nodes.index(n)
    for src, _ in n.inputs:
        if _is_view(src) and prog.nodes.index(src) >= p:
            moved += _move(prog, src, p)
    prog.nodes.remove(n)
    position = {id(m): k for k, m in enumerate(prog.nodes)}
    at = max([position[id(src)] for src, _ in n.inputs], default=-1) + 1
    prog.nodes.insert(at, n)
    return moved + [n]


def _copyable(n):
    return (n.tag == "op" and n.pure() and not n.op.may_alias) or \
        (n.tag == "fused" and not n.controls)


def _cost(n):
    """Operations to recompute `n`, roughly: multiply-adds for products, elements otherwise."""
    out = sum(_elements(s) for s in n.specs)
    if n.tag == "fused":
        return out * len(n.members)
    ins = [src.specs[i] for src, i in n.inputs]
    if "matmul" in n.op.name and ins and ins[0].shape:
        return out * (ins[0].shape[-1] or 1)
    if "conv" in n.op.name and len(ins) > 1:
        return out * max(_elements(ins[1]) // max(ins[1].shape[-1] or 1, 1), 1)
    return out + sum(_elements(s) for s in ins)


def _elements(spec):
    return int(np.prod([d or 1 for d in spec.shape], dtype=np.int64)) if spec.shape else 1


def _copy(prog, n, p, also=()):
    """Recompute `n` (and the views of it read after `p`) just before its first reader after
    `p`: those readers read the copies. The inputs of `n` in `also` are recomputed too, for
    the copy of `n` to read."""
    position = {id(m): k for k, m in enumerate(prog.nodes)}
    users = prog.users()
    copies, first = {}, [len(prog.nodes)]

    def copy_of(m):
        if id(m) not in copies:
            c = _clone(m)
            if m is not n:
                src, i = m.inputs[0]
                c.inputs[0] = (copy_of(src), i)
            copies[id(m)] = c
        return copies[id(m)]

    def visit(m):
        for u, k in users[id(m)]:
            if position[id(u)] > p:
                first[0] = min(first[0], position[id(u)])
                u.inputs[k] = (copy_of(m), u.inputs[k][1])
            elif u.tag == "op" and u.op.may_alias and k == 0:
                visit(u)

    visit(n)
    if id(n) in copies:
        c = copies[id(n)]
        for a in also:
            ca = _clone(a)
            copies[id(a)] = ca
            c.inputs = [(ca, i) if src is a else (src, i) for src, i in c.inputs]
    block = sorted(copies.values(), key=lambda c: c.id)
    prog.nodes[first[0]:first[0]] = block
    return block


def _clone(m):
    c = copy.copy(m)     # NOTE: the same op, attributes, specs and origin (for errors)
    c.inputs, c.attrs, c.specs = list(m.inputs), dict(m.attrs), list(m.specs)
    if m.tag == "fused":
        c.fused = m.fused.copy()
    return c
