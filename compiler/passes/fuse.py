"""Elementwise fusion: groups of elementwise ops and last-axis reductions -> one numba loop.

Every group lives on a 2-D view of one "domain" shape S: R = prod(S[:-1]) rows by C = S[-1]
columns. Each value in a group is, by its shape under NumPy broadcasting against S, `full`
(S), `row` (S[:-1] + (1,), e.g. a keepdims reduction), `col` (a trailing (C,) vector such as
a bias or LayerNorm's gamma) or `scalar`. Nodes are visited in topological order and a node
joins the group of one of its inputs when the group stays on one domain and no cycle
appears (an input reached from the group through a node outside it); then groups on one
domain that read the same full-size array merge when no cycle appears. Groups of at least
MIN_GROUP ops become one `fused` node whose kernel is `compiler.fused_kernel.compile_fused`.
A group numba cannot compile stays unfused, with the reason in the report.
"""
from __future__ import annotations

import copy
import threading

import numpy as np

from dualgrad import ops
from ..fused_kernel import compile_fused
from ..fused_spec import CodegenError, FusedSpec, combine_roles, reduce_seed
from ..fastcall import MISS, small_caller
from ..ir import INode, SyntheticNode, known

NAME = "fuse"
MIN_GROUP = 2
# NOTE: a cap keeps numba's compile time per kernel bounded (a 750-op loop took ~60 s) and
# makes equal stretches of a long chain one cached kernel.
MAX_GROUP = 64
_DTYPES = {"float32", "float64", "int32", "int64", "bool"}


def _is_reduction(n):
    if n.op.name not in ops.REDUCTION or not known(n.inputs[0][0].specs[n.inputs[0][1]]):
        return False
    shape = n.inputs[0][0].specs[n.inputs[0][1]].shape
    axis = n.attrs.get("axis")
    nd = len(shape)
    if nd == 0:
        return False
    axes = tuple(range(nd)) if axis is None else (axis,) if isinstance(axis, int) else axis
    return tuple(a % nd for a in axes) == (nd - 1,) and _same_on_empty_rows(n, shape[-1])


def _same_on_empty_rows(n, C):
    """The loop starts each row from its seed: fused, a reduction must give what its kernel
    gives, also over an empty last axis (a max without `initial` raises there, as NumPy's)."""
    seed = reduce_seed(n.op.reduce, n.spec.dtype.name)
    initial = n.attrs.get("initial")
    if initial is None:
        return C != 0 or n.op.reduce == "sum"
    return initial == seed


def candidate(n) -> bool:
    if not n.pure() or not known(n.spec) or n.spec.dtype.name not in _DTYPES:
        return False
    if any(src.specs[i].dtype.name not in _DTYPES or not known(src.specs[i])
           for src, i in n.inputs):
        return False
    return n.op.name in ops.ELEMENTWISE or _is_reduction(n)


def role(shape, S):
    """How a value of `shape` broadcasts against domain S: full/row/col/scalar or None."""
    if len(shape) > len(S):
        return None
    pad = (1,) * (len(S) - len(shape)) + tuple(shape)
    if pad == tuple(S):
        return "full"
    if all(d == 1 for d in pad):
        return "scalar"
    if all(d == 1 for d in pad[:-1]) and pad[-1] == S[-1]:
        return "col"
    if pad[-1] == 1 and pad[:-1] == tuple(S[:-1]):
        return "row"
    return None


def _domain(n):
    """The full shape a node needs: its output, or a reduction's input."""
    if n.op.name in ops.REDUCTION:
        return tuple(n.inputs[0][0].specs[n.inputs[0][1]].shape)
    return tuple(n.spec.shape)


class Group:
    def __init__(self, S):
        self.S, self.members = tuple(S), []
        self.role_of = {}   # id(member) -> its role on S

    def roles(self, members, S, only=None, known=None):
        """Each member's role on domain S, or None when the members don't fit S; with
        `only`, the roles of those members are computed and added to `known`."""
        roles = dict(known or {})
        inside = {id(m) for m in members}
        for m in (members if only is None else only):
            in_roles = []
            for src, i in m.inputs:
                shape = src.specs[i].shape
                r = role(shape, S)
                if r is None:
                    return None
                if id(src) in inside:
                    if roles[id(src)] != r:
                        return None
                elif src.tag == "const" and src.value.ndim == 0:
                    r = "scalar"
                in_roles.append(r)
            if m.op.reduce is not None:
                if in_roles[0] not in ("full", "col"):
                    return None
                if m.op.reduce == "max" and id(m.inputs[0][0]) in inside:
                    # NOTE: a max over values the loop recomputes may differ in the last bit
                    # from the stored values (fastmath contracts differently per pass), and
                    # max's gradient compares them for equality: reduce a stored array.
                    return None
                k = "row"
                if role(m.spec.shape, S) != "row" and len(m.spec.shape) != len(S) - 1:
                    return None
            else:
                k = combine_roles(in_roles)
                if role(m.spec.shape, S) != k:
                    return None
            roles[id(m)] = k
        return roles


def _widen(S, D):
    if len(S) != len(D):
        return None
    out = []
    for a, b in zip(S, D):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None
    return tuple(out)


def form_groups(prog, siblings=True):
    """The fusion groups; each is acyclic, and so is the program with every group contracted
    to one node (a sibling merge can close a cycle through another group: A feeds B's input
    and B feeds A's, with neither group cyclic by itself)."""
    groups = _form_groups(prog, siblings)
    if _contracted_acyclic(prog, groups):
        return groups
    if siblings:
        return form_groups(prog, siblings=False)
    return []   # NOTE: not seen; unfused is always correct


def _contracted_acyclic(prog, groups):
    """Kahn's sort over the program with each group one node: True when it orders them all."""
    rep = {id(m): ("g", k) for k, g in enumerate(groups) for m in g.members}
    deps, users = {}, {}
    for n in prog.nodes:
        a = rep.get(id(n), id(n))
        deps.setdefault(a, set())
        for src in [s for s, _ in n.inputs] + list(n.controls):
            b = rep.get(id(src), id(src))
            if b != a and b not in deps[a]:
                deps[a].add(b)
                users.setdefault(b, []).append(a)
    for d in list(deps.values()):
        for b in d:
            deps.setdefault(b, set())
    waiting = {a: len(d) for a, d in deps.items()}
    ready = [a for a, k in waiting.items() if k == 0]
    done = 0
    while ready:
        b = ready.pop()
        done += 1
        for a in users.get(b, ()):
            waiting[a] -= 1
            if waiting[a] == 0:
                ready.append(a)
    return done == len(waiting)


def _form_groups(prog, siblings):
    group_of, groups = {}, []
    position = {id(n): k for k, n in enumerate(prog.nodes)}
    for n in prog.nodes:
        if candidate(n):
            g = _join(n, group_of, position)
            if g is None:
                g = Group(_domain(n))
                g.role_of = g.roles([n], g.S)
                if g.role_of is None:
                    continue          # NOTE: n cannot sit on its own domain: never fused
                g.members.append(n)
                groups.append(g)
            group_of[id(n)] = g
    if siblings:
        _merge_siblings([g for g in groups if g.members], group_of, position)
    return [g for g in groups if g.members]


def _merge_siblings(groups, group_of, position):
    """Groups on one domain that read the same full-size value from outside become one loop
    when no cycle appears (an LSTM step's output-gate gradient reads dh as the other gates'
    do, but neither feeds the other): one call, and the shared value read once."""
    readers = {}
    for g in groups:
        for m in g.members:
            for src, i in m.inputs:
                if group_of.get(id(src)) is not g and tuple(src.specs[i].shape) == g.S:
                    gs = readers.setdefault((id(src), i), [])
                    if g not in gs:
                        gs.append(g)
    for gs in readers.values():
        live = []
        for g in gs:
            g = group_of[id(g.members[0])] if g.members else None
            if g is not None and g not in live:
                live.append(g)
        for other in live[1:]:
            first = live[0]
            if other.S == first.S and _try_add(first, other.members, position):
                for m in other.members:
                    group_of[id(m)] = first
                other.members = []


def _join(n, group_of, position):
    """The input group n joins (largest first; other input groups merge in), or None."""
    options = []
    for src, _ in n.inputs:
        g = group_of.get(id(src))
        if g is not None and g not in options:
            options.append(g)
    options.sort(key=lambda g: -len(g.members))
    for g in options:
        if _try_add(g, [n], position):
            for other in options:
                if other is not g and other.members and _try_add(g, other.members, position):
                    for m in other.members:
                        group_of[id(m)] = g
                    other.members = []
            return g
    return None


def _try_add(g, new, position):
    """Add nodes `new` to group g if the result stays on one domain, acyclic and at most
    MAX_GROUP ops."""
    if len(g.members) + len(new) > MAX_GROUP:
        return False
    S = g.S
    for m in new:
        S = _widen(S, _domain(m))
        if S is None:
            return False
    members = sorted(g.members + new, key=lambda m: position[id(m)])
    # NOTE: adding the newest node n can only close a cycle through n's own inputs (every
    # older member's inputs come before n); merging two groups can close one through any.
    newest = len(new) == 1 and position[id(new[0])] >= position[id(members[-1])]
    if not _acyclic(members, new if newest else members, position):
        return False
    # NOTE: the newest node feeds no member: on an unchanged domain the others' roles stand
    roles = g.roles(members, S, new, g.role_of) if newest and S == g.S else \
        g.roles(members, S)
    if roles is None:
        return False
    g.S, g.members, g.role_of = S, members, roles
    return True


def _acyclic(members, check, position, budget=4096):
    """No input (of the nodes `check`) from outside the group may depend on a member: that
    would be a cycle. One backward walk shared by all inputs, that never goes below the
    group's first position (nothing there can depend on a member); a walk longer than
    `budget` nodes refuses the join rather than cost more."""
    member_ids = {id(m) for m in members}
    lo = position[id(members[0])]
    seen, stack = set(), []
    for m in check:
        stack.extend(src for src, _ in m.inputs if id(src) not in member_ids)
        stack.extend(c for c in m.controls if id(c) not in member_ids)
    while stack:
        n = stack.pop()
        if id(n) in seen or position[id(n)] < lo:
            continue
        if id(n) in member_ids:
            return False
        seen.add(id(n))
        if len(seen) > budget:
            return False
        stack.extend(src for src, _ in n.inputs)
        stack.extend(n.controls)
    return True


def run(prog):
    groups = form_groups(prog)
    users = prog.users()
    fetched = {id(n) for n, _ in prog.fetches}
    fused, skipped, sizes = 0, [], []
    for g in groups:
        n_ops = len(g.members)
        if n_ops < MIN_GROUP:
            continue
        try:
            _fuse(prog, g, users, fetched)
        except CodegenError as e:
            skipped.append(f"{'+'.join(m.op.name for m in g.members)}: {e}")
            continue
        except _NoOutputs:
            skipped.append(f"{'+'.join(m.op.name for m in g.members)}: only control "
                           f"dependencies read the group (nothing to compute)")
            continue
        fused += 1
        sizes.append(n_ops)
    from ..ir import topo_sort
    from .prune import dead_code
    topo_sort(prog)
    dead_code(prog)
    return {"groups": fused, "sizes": sizes, "unfused": skipped}


class _NoOutputs(Exception):
    """No value of the group is read by an op or fetched: the group stays unfused."""


def _fuse(prog, g, users, fetched):
    S = g.S
    roles = g.roles(g.members, S)
    member_ids = {id(m) for m in g.members}
    inputs, in_index, nodes, index = [], {}, [], {}

    def ref(src, i):
        key = (id(src), i)
        if key in index:
            return index[key]
        if src.tag == "const" and src.value.ndim == 0 and src.value.dtype.name in _DTYPES:
            nodes.append(("const", src.value.item(), src.value.dtype.name))
        else:
            r = role(src.specs[i].shape, S)
            if src.tag == "const" and src.value.ndim == 0:   # NOTE: as Group.roles says
                r = "scalar"
            in_index[key] = len(inputs)
            inputs.append(((src, i), r))
            nodes.append(("in", in_index[key]))
        index[key] = len(nodes) - 1
        return index[key]

    for m in g.members:
        args = tuple(ref(src, i) for src, i in m.inputs)
        if m.op.reduce is not None:
            nodes.append(("reduce", m.op.reduce, args[0], m.spec.dtype.name))
        else:
            nodes.append(("ew", m.op.scalar_form(m.attrs), args, m.spec.dtype.name))
        index[(id(m), 0)] = len(nodes) - 1
    outs = [m for m in g.members
            if id(m) in fetched or any(id(u) not in member_ids for u, _ in users[id(m)])]
    if not outs:   # NOTE: e.g. a metric's update value run only as a tf.group's control input
        raise _NoOutputs
    spec = FusedSpec(
        inputs=tuple((src.specs[i].dtype.name, r) for (src, i), r in inputs),
        nodes=tuple(nodes), outputs=tuple(index[(id(m), 0)] for m in outs))
    kernel = compile_fused(spec)
    R = int(np.prod(S[:-1])) if len(S) > 1 else 1
    C = S[-1] if S else 1
    label = "fused(" + ",".join(m.op.name for m in g.members) + ")"
    last = outs[-1] if outs else g.members[-1]
    synthetic = SyntheticNode(f"{last.origin.name if last.origin else 'fused'}/fused", None,
                              {}, last.origin, label)
    runner = FusedRun(kernel, R, C, [(src.specs[i], r) for (src, i), r in inputs],
                      [m.spec for m in outs], synthetic, g.members,
                      [roles[id(m)] for m in outs])
    fnode = INode("fused", None, [ref_ for ref_, _ in inputs], {},
                  [m.spec for m in outs], origin=last.origin)
    fnode.fused, fnode.members = runner, tuple(g.members)
    prog.nodes.append(fnode)
    users[id(fnode)] = []
    for k, (src, i) in enumerate(fnode.inputs):
        users.setdefault(id(src), []).append((fnode, k))
    for k, m in enumerate(outs):
        _replace_uses(prog, users, m, (fnode, k))


def _replace_uses(prog, users, m, new):
    """Every use of (m, 0) reads `new`: only m's users are visited (not the whole program)."""
    for u, k in users[id(m)]:
        src, i = u.inputs[k]
        if src is m and i == 0:
            u.inputs[k] = new
            users[id(new[0])].append((u, k))
    prog.fetches = [new if (f[0] is m and f[1] == 0) else f for f in prog.fetches]


class FusedRun:
    """The step kernel of a fused node: run the loop on the R x C view, reshape back.

    `buffers` (set by the buffer pass) is (pool, per output: an index into the pool's
    arrays, reused on every run of the thread, or None for an output that leaves the plan
    (fetched or stored), which is freshly allocated each run so a result handed back is
    never overwritten).
    """

    def __init__(self, kernel, R, C, in_specs, out_specs, node, members, out_roles):
        self.kernel, self.R, self.C = kernel, R, C
        self.in_shapes = [tuple(s.shape) for s, _ in in_specs]
        self.out_shapes = [tuple(s.shape) for s in out_specs]
        self.out_dtypes = [s.dtype for s in out_specs]
        self.out_views = [_VIEWS[k](R, C) for k in out_roles]
        self.node, self.members, self.out_roles = node, members, out_roles
        self.buffers = None
        self._local = threading.local()               # this thread's resolved buffers
        self.fast, self._fast_pending = None, True   # see compiler/fastcall.py
        self.returns_ndarray = True                   # see graph/planfn.py

    def copy(self):
        """The same loop as a step of its own (its own buffers): rematerialisation's copy."""
        c = copy.copy(self)
        c.buffers, c._local = None, threading.local()
        c.fast, c._fast_pending = None, True
        return c

    def _thread_buffers(self):
        """Per output, this thread's preallocated array or None (see BufferPool)."""
        if self.buffers is None:
            return None
        bufs = getattr(self._local, "bufs", None)
        if bufs is None:
            pool, index = self.buffers
            mine = pool.arrays()
            bufs = self._local.bufs = [None if b is None else mine[b] for b in index]
        return bufs

    def __call__(self, *arrays):
        bufs = self._thread_buffers()
        if self.fast is not None:
            out = self.fast(bufs, *arrays)
            if out is not MISS:
                return out
        elif self._fast_pending:
            self._fast_pending = False
            self.fast = small_caller(self.kernel, self.R, self.C, self.in_shapes,
                                     self.out_shapes, self.out_views, self.out_dtypes, arrays)
        if [a.shape for a in arrays] != self.in_shapes:
            raise ValueError(f"fused kernel expected inputs of shapes {self.in_shapes}, got "
                             f"{[a.shape for a in arrays]}")
        if bufs is None and self.out_views == self.out_shapes:
            res = self.kernel(self.R, self.C, *arrays)     # NOTE: fresh, final-shaped arrays
            return res[0] if len(res) == 1 else res
        # NOTE: a fresh output is allocated in its final shape and the loop writes through a
        # reshaped view, so what the plan hands on owns its memory (Session.run copies views)
        owners = [np.empty(s, d) if b is None else b for b, s, d in
                  zip(bufs or [None] * len(self.out_shapes), self.out_shapes,
                      self.out_dtypes)]
        self.kernel(self.R, self.C, *arrays,
                    out=tuple(o.reshape(v) for o, v in zip(owners, self.out_views)))
        return owners[0] if len(owners) == 1 else tuple(owners)


_VIEWS = {"full": lambda R, C: (R, C), "row": lambda R, C: (R,), "col": lambda R, C: (C,),
          "scalar": lambda R, C: ()}
