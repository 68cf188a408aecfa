"""Algebraic simplification: a table of small local rewrites, run to a fixed point.

Each rule looks at one node (and, where it matters, who uses its inputs: `users`) and
returns the value that replaces its output, or None. A replacement must have exactly the
node's shape and dtype and equal values, NaN where the node gives NaN (no fast-math: a
product with a zero is zeros only where that is exact, see `_zero_is_exact`); a zero's sign
may differ (x + 0 -> x keeps -0.0).
"""
from __future__ import annotations

import numpy as np
from dualgrad.ops.rules import floating, inexact

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
    # NOTE: -0.0 + 0 is +0.0 where this keeps -0.0: equal values (the sign of a zero is the
    # one difference simplify allows, as a sum's rounding is sum_of_products')
    return _identity_operand(n, 0) if n.op.name == "add" else None


def sub_zero(n, users):
    return _identity_operand(n, 0, (1,)) if n.op.name == "sub" else None


def mul_one(n, users):
    return _identity_operand(n, 1) if n.op.name == "mul" else None


def div_one(n, users):
    return _identity_operand(n, 1, (1,)) if n.op.name == "div" else None


def pow_one(n, users):
    return _identity_operand(n, 1, (1,)) if n.op.name == "pow" else None


def _zero_is_exact(n, k):
    """Is n's result all (positive) zeros whenever its input k is? Only when no other input
    enters the arithmetic (the others are read for their shape: transpose(0), slice_grad(0,
    x)) or the result is an integer or bool: in floats 0 * inf and 0 * nan are nan, as the
    unoptimised graph and eager give (a zero initial state times a weight holding an inf)."""
    if not inexact(n.spec.dtype):
        return True
    shape_only = n.op.shape_only_from
    return all(j == k or (shape_only is not None and j >= shape_only)
               for j in range(len(n.inputs)))


def _zeros_from(n, positions):
    if None in n.spec.shape:
        return None
    if any(_const_eq(n.inputs[k], 0) and _zero_is_exact(n, k) for k in positions):
        return _new_const(np.zeros(n.spec.shape, n.spec.dtype), n)
    return None


def mul_zero(n, users):
    """x * 0 -> zeros, where exact (integers, bools)."""
    return _zeros_from(n, range(len(n.inputs))) if n.op.name == "mul" else None


def zero_product(n, users):
    """transpose(0), slice_grad(0, x) -> zeros; matmul(0, w), matmul(x, 0),
    sigmoid_grad(y, 0), tanh_grad(y, 0) -> zeros where exact (integer results)."""
    # NOTE: the op declares which inputs (Op.zero_from): a zero gradient of a slice, and its
    # transposes
    return _zeros_from(n, n.op.zero_from) if n.op.zero_from else None


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


def elementwise_of_transposes(n, users):
    """f(transpose(a, p), transpose(b, p)) -> transpose(f(a, b), p) for an elementwise f over
    operands of one shape, each transpose read only here: the loop reads its inputs in memory
    order (a sum of eight (256, 64) transposed arrays: 130 -> 6 us), and the result stays a
    view. Not for transposed matrix products (a traced LSTM's per-step weight gradients
    (h_t^T g_t)^T): layout computes those as g_t^T h_t, so their sum is C-ordered."""
    if n.op.name not in ops.ELEMENTWISE or len(n.inputs) < 2:
        return None
    srcs = [src for src, _ in n.inputs]
    if len({id(s) for s in srcs}) < len(srcs) or not all(
            s.tag == "op" and s.op.name == "transpose" and s.pure() and
            len(users.get(id(s), ())) == 1 for s in srcs):
        return None
    axes = tuple(srcs[0].attrs["axes"])
    inner = [s.inputs[0] for s in srcs]
    if any(_product_read_once(r, users) for r in inner):
        return None     # NOTE: the layout pass computes each transposed, in C order
    shape = tuple(_spec_of(inner[0]).shape)
    if None in shape or any(tuple(s.attrs["axes"]) != axes or tuple(_spec_of(r).shape) != shape
                            for s, r in zip(srcs, inner)):
        return None
    spec = ops.Spec(shape, n.spec.dtype)
    m = INode("op", n.op, inner, dict(n.attrs), [spec], origin=n.origin)
    return _new_op(srcs[0].op, [(m, 0)], {"axes": axes}, n)


def _product_read_once(ref, users):
    """ref is a matmul of matrices read only by its transpose: what layout computes as
    b^T @ a^T, in C order (so the sum it is part of is left alone)."""
    m = ref[0]
    return m.tag == "op" and m.op.name == "matmul" and len(users.get(id(m), ())) == 1 and \
        len(m.spec.shape) == 2 and all(len(_spec_of(r).shape) == 2 for r in m.inputs)


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
    if n.op.name != "count":
        return None
    shape = n.inputs[0][0].specs[n.inputs[0][1]].shape
    if shape is None or None in shape:   # NOTE: a dim known only at run time (a tf.data batch)
        return None
    return _new_const(ops.REGISTRY["count"].kernel(np.empty(shape, np.int8), **n.attrs).astype(
        n.spec.dtype), n)


def slice_grads_to_concat(n, users):
    """A sum of slice_grads whose slices (or single indices) along one axis of the same shape
    do not overlap -> one concat of their gradients, zeros where none is (the LSTM's four
    gates: 4 zero-filled (B, 4H) arrays and 3 adds per step become one (B, 4H) concat;
    attention's q, k, v = qkv[0], qkv[1], qkv[2]; an eager cell's sigmoid over i, f, o)."""
    if n.op.name != "add" or None in n.spec.shape:
        return None
    leaves = _add_leaves(n, users)
    if leaves is None or len(leaves) < 2:
        return None
    spans = [_span(s, n.spec) for s, _ in leaves]
    if None in spans or len({sp[0] for sp in spans}) != 1:
        return None
    axis = spans[0][0]
    spans = sorted(((lo, hi, drop, s.inputs[0]) for (_, lo, hi, drop), (s, _) in
                    zip(spans, leaves)), key=lambda sp: sp[0])
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None
    parts, at = [], 0
    for lo, hi, drop, g in spans + [(n.spec.shape[axis],) * 2 + (False, None)]:
        if lo > at:
            parts.append(_zeros_along(n, axis, lo - at))
        if g is not None:
            parts.append(_unsqueezed(g, axis, n) if drop else g)
        at = hi
    return _new_op(ops.REGISTRY["concat"], parts, {"axis": axis}, n)


def _zeros_along(n, axis, size):
    shape = tuple(n.spec.shape[:axis]) + (size,) + tuple(n.spec.shape[axis + 1:])
    return _new_const(np.zeros(shape, n.spec.dtype), n)


def elementwise_of_sparse_concat(n, users):
    """f(concat(p_1, .., 0, .., p_k), y) -> concat(f(p_1, y_1), .., f(0, y_j), .., f(p_k, y_k))
    for an elementwise f over the concat's shape, the concat read only here and one of its
    parts a zero constant; y_i are y's slices along the axis (y itself where it broadcasts
    along it). The zero part's result then folds where f keeps zeros, and a slice_grad added
    over its span fills it (an eager LSTM cell: sigmoid's gradient over i, f, o; tanh's
    over g): no full-size zero-filled arrays."""
    if n.op.name not in ops.ELEMENTWISE or None in n.spec.shape:
        return None
    hits = [k for k, (c, i) in enumerate(n.inputs)
            if c.tag == "op" and c.op.name == "concat" and len(users.get(id(c), ())) == 1
            and tuple(_spec_of((c, i)).shape) == tuple(n.spec.shape)
            and all(_spec_of(p).dtype == c.spec.dtype for p in c.inputs)
            and any(_const_eq(p, 0) for p in c.inputs)]
    if len(hits) != 1:
        return None
    k, cat, shape = hits[0], n.inputs[hits[0]][0], tuple(n.spec.shape)
    axis, at, pieces = cat.attrs["axis"] % len(shape), 0, []
    for part in cat.inputs:
        size = _spec_of(part).shape[axis]
        ins = [part if j == k else _slice_along(ref, axis - len(shape), at, at + size, n)
               for j, ref in enumerate(n.inputs)]
        spec = ops.Spec(shape[:axis] + (size,) + shape[axis + 1:], n.spec.dtype)
        pieces.append((INode("op", n.op, ins, dict(n.attrs), [spec], origin=n.origin), 0))
        at += size
    return _new_op(cat.op, pieces, {"axis": axis}, n)


def _slice_along(ref, axis, lo, hi, n):
    """ref's [lo, hi) along `axis` (counted from the end), or ref where it broadcasts there."""
    spec = _spec_of(ref)
    if -axis > len(spec.shape) or spec.shape[axis] == 1:
        return ref
    a = len(spec.shape) + axis
    index = (slice(None),) * a + (slice(lo, hi),)
    shape = tuple(spec.shape[:a]) + (hi - lo,) + tuple(spec.shape[a + 1:])
    return (INode("op", ops.REGISTRY["slice"], [ref], {"index": index},
                  [ops.Spec(shape, spec.dtype)], origin=n.origin), 0)


def slice_grad_into_concat(n, users):
    """concat(p_1, .., p_k) + slice_grad(g, the span of p_j) -> concat(p_1, .., p_j + g, ..,
    p_k), the concat and the slice_grad read only here; a span inside a zero-constant part
    splits that part around g. No zero-filled full-size array, no full-size add (an eager
    LSTM cell's tanh-gate gradient into its sigmoid gates')."""
    if n.op.name != "add" or None in n.spec.shape:
        return None
    for k in (0, 1):
        (cat, i), sg = n.inputs[k], n.inputs[1 - k][0]
        if cat.tag != "op" or cat.op.name != "concat" or sg.tag != "op" or \
                sg.op.name != "slice_grad" or not _same_spec((cat, i), n.spec) or \
                len(users.get(id(cat), ())) != 1 or len(users.get(id(sg), ())) != 1:
            continue
        span = _span(sg, n.spec)
        if span is None or span[0] != cat.attrs["axis"] % len(n.spec.shape):
            continue
        axis, lo, hi, drop = span
        g = _unsqueezed(sg.inputs[0], axis, n) if drop else sg.inputs[0]
        parts = _parts_with(cat, axis, lo, hi, g, n)
        if parts is not None:
            return _new_op(cat.op, parts, {"axis": axis}, n)
    return None


def _parts_with(cat, axis, lo, hi, g, n):
    """The concat's parts with g added over [lo, hi) along axis: to the part spanning exactly
    that, or in place of that stretch of a zero-constant part; None if neither is there."""
    at, parts = 0, list(cat.inputs)
    for j, part in enumerate(parts):
        spec = _spec_of(part)
        end = at + spec.shape[axis]
        if spec.dtype != n.spec.dtype or not (at <= lo and hi <= end):
            at = end
            continue
        if (at, end) == (lo, hi):
            total = INode("op", ops.REGISTRY["add"], [part, g], {}, [spec], origin=n.origin)
            parts[j] = (total, 0)
            return parts
        if not _const_eq(part, 0):
            return None
        around = [_zeros_along(n, axis, lo - at)] if lo > at else []
        around.append(g)
        around += [_zeros_along(n, axis, end - hi)] if end > hi else []
        return parts[:j] + around + parts[j + 1:]
    return None


def _unsqueezed(g, axis, n):
    spec = _spec_of(g)
    shape = tuple(spec.shape[:axis]) + (1,) + tuple(spec.shape[axis:])
    e = INode("op", ops.REGISTRY["expand_dims"], [g], {"axis": axis},
              [ops.Spec(shape, spec.dtype)], origin=n.origin)
    return (e, 0)


def add_of_sums_to_like(n, users):
    """sum_to_like(a, L) + sum_to_like(b, L') -> sum_to_like(a + b, L) when a and b, L and L'
    have the same specs and nothing else reads the two sums: the LSTM's bias gradient adds
    8 per-step batch sums; once rewritten, one fused add and one batch sum."""
    if n.op.name != "add" or None in n.spec.shape:
        return None
    (p, _), (q, _) = n.inputs
    if p is q or not all(s.tag == "op" and s.op.name == "sum_to_like"
                         and len(users.get(id(s), ())) == 1 and _same_spec((s, 0), n.spec)
                         for s in (p, q)):
        return None
    a, b = p.inputs[0], q.inputs[0]
    sa = _spec_of(a)
    if None in sa.shape or not _same_spec(b, sa) or \
            not _same_spec(p.inputs[1], _spec_of(q.inputs[1])):
        return None
    total = INode("op", ops.REGISTRY["add"], [a, b], {}, [sa], origin=n.origin)
    return _new_op(p.op, [(total, 0), p.inputs[1]], {}, n)


def row_sum_to_like(n, users):
    """sum_to_like(x, like) that sums only x's last axis -> sum(x, axis=-1, keepdims=True),
    a reduction the fuse pass folds into the loop producing x (LayerNorm's and softmax's
    gradients: (B, T, D) -> (B, T, 1))."""
    if n.op.name != "sum_to_like":
        return None
    x = _spec_of(n.inputs[0])
    shape = tuple(n.spec.shape)
    if None in x.shape or None in shape or len(x.shape) < 2 or \
            shape != tuple(x.shape[:-1]) + (1,) or x.shape[-1] == 1 or not floating(x.dtype):
        return None
    return _new_op(ops.REGISTRY["sum"], [n.inputs[0]], {"axis": len(shape) - 1,
                                                        "keepdims": True}, n)


# A sum of products is turned into one only when each product's inner dimension is at most
# this: thin products (an RNN's weight gradient at every step, k = the batch) run far below
# the gemm rate, wide ones already reach it and would only pay for the copies.
STACK_MAX_K = 256


def sum_of_products(n, users):
    """X_1 @ Y_1 + ... + X_T @ Y_T -> concat(X, axis=1) @ concat(Y, axis=0): T thin products
    and a T-term sum become one gemm over the stacked inner dimension (a recurrent layer's
    weight gradient, the sum over steps of (h_t^T g_t)^T: 49 products (1024, 64) @ (64, 256)
    and a 49-term sum, 30 ms, become (1024, 3136) @ (3136, 256)). A term may be a product's
    transpose, (X Y)^T = Y^T X^T; transposed operands are stacked as the transpose of the
    stack of what they transpose (a view BLAS reads as it is, no copy of the transposes).
    Products (and their transposes) read only by the sum, 2-D float operands of the sum's
    dtype, inner dims <= STACK_MAX_K, and no operand shared by every term (X (Y_1 + Y_2) is
    the better form there, and stacking would only copy X). The sum is then BLAS's over all the terms: it rounds
    as one product of that size does, not as T products and T - 1 adds."""
    if n.op.name != "add" or None in n.spec.shape or len(n.spec.shape) != 2 or \
            not floating(n.spec.dtype):
        return None
    up = users.get(id(n), ())
    if len(up) == 1 and up[0][0].tag == "op" and up[0][0].op.name == "add" and \
            _same_spec((up[0][0], 0), n.spec):
        return None     # NOTE: an inner add of a longer sum: its root takes the whole tree
    leaves = _add_leaves(n, users, want=("matmul", "transpose"))
    if leaves is None or len(leaves) < 2:
        return None
    lefts, rights = [], []
    for leaf, i in leaves:
        if not _same_spec((leaf, i), n.spec):
            return None
        mm, flip = (leaf.inputs[0][0], True) if leaf.op.name == "transpose" else (leaf, False)
        if flip and (_transposed(leaf) is None or mm.tag != "op" or mm.op.name != "matmul"
                     or len(users.get(id(mm), ())) != 1):
            return None
        if len(users.get(id(leaf), ())) != 1 or not _plain_product(mm, n.spec.dtype):
            return None
        x, y = (_as_transposed(r) for r in mm.inputs)   # (transposed?, what it reads)
        left, right = ((not y[0], y[1]), (not x[0], x[1])) if flip else (x, y)
        if _oriented_shape(left)[1] > STACK_MAX_K:
            return None
        lefts.append(left)
        rights.append(right)
    if len(set(map(_key, lefts))) == 1 or len(set(map(_key, rights))) == 1:
        return None     # NOTE: one operand shared by every term: stacking only copies it
    left = _stacked(lefts, 1, n)
    right = _stacked(rights, 0, n)
    return _new_op(ops.REGISTRY["matmul"], [left, right], {}, n)


def _key(part):
    return part[0], id(part[1][0]), part[1][1]


def _plain_product(mm, dtype):
    return mm.tag == "op" and mm.op.name == "matmul" and mm.pure() and \
        all(len(_spec_of(r).shape) == 2 and _spec_of(r).dtype == dtype for r in mm.inputs)


def _transposed(node):
    """What a 2-D transpose node reads, or None (not a plain 2-D transpose)."""
    if node.tag == "op" and node.op.name == "transpose" and node.pure() and \
            tuple(node.attrs["axes"]) == (1, 0):
        return node.inputs[0]
    return None


def _as_transposed(ref):
    """(True, a) when ref is transpose(a), else (False, ref)."""
    inner = _transposed(ref[0])
    return (False, ref) if inner is None else (True, inner)


def _oriented_shape(part):
    shape = tuple(_spec_of(part[1]).shape)
    return shape[::-1] if part[0] else shape


def _stacked(parts, axis, n):
    """The matrices `parts` ((transposed?, ref) each) joined along axis: transpose(concat of
    what they transpose) when all are transposes, else one concat (transposing the few)."""
    dt = n.spec.dtype
    shapes = [_oriented_shape(p) for p in parts]
    whole = list(shapes[0])
    whole[axis] = sum(s[axis] for s in shapes)
    if all(t for t, _ in parts):
        inner = _new_op(ops.REGISTRY["concat"], [r for _, r in parts], {"axis": 1 - axis}, n,
                        ops.Spec(tuple(whole[::-1]), dt))
        return _new_op(ops.REGISTRY["transpose"], [inner], {"axes": (1, 0)}, n,
                       ops.Spec(tuple(whole), dt))
    refs = [_new_op(ops.REGISTRY["transpose"], [r], {"axes": (1, 0)}, n, ops.Spec(s, dt))
            if t else r for (t, r), s in zip(parts, shapes)]
    return _new_op(ops.REGISTRY["concat"], refs, {"axis": axis}, n, ops.Spec(tuple(whole), dt))


def _spec_of(ref):
    return ref[0].specs[ref[1]]


def _add_leaves(n, users, want=("slice_grad",)):
    """The operands of the tree of adds rooted at n (inner adds used only inside it), or
    None as soon as one is not a node of an op named in `want` (so a long chain of adds
    costs little)."""
    out, stack = [], list(reversed(n.inputs))
    while stack:
        src, i = stack.pop()
        if (src.tag == "op" and src.op.name == "add" and len(users.get(id(src), ())) == 1
                and _same_spec((src, i), n.spec)):
            stack.extend(reversed(src.inputs))
        elif src.tag == "op" and src.op.name in want:
            out.append((src, i))
        else:
            return None
    return out


def _span(sg, spec):
    """(axis, start, stop, dropped) of a slice_grad of `spec`'s shape and dtype whose index
    is one step-1 slice or one integer along one axis (the others whole), or None."""
    from dualgrad.ops.shape import expand_index
    if not _same_spec((sg, 0), spec) or \
            not _same_spec(sg.inputs[0], _sliced_spec(sg, spec)):
        return None
    index = expand_index(sg.attrs["index"], len(spec.shape))
    if len(index) != len(spec.shape) or \
            not all(isinstance(i, (slice, int)) and not isinstance(i, bool) for i in index):
        return None
    cut = [(a, i, d) for a, (i, d) in enumerate(zip(index, spec.shape))
           if not isinstance(i, slice) or i.indices(d) != (0, d, 1)]
    if len(cut) != 1:
        return None
    a, i, d = cut[0]
    if isinstance(i, int):
        return (a, i % d, i % d + 1, True) if -d <= i < d else None
    lo, hi, step = i.indices(d)
    return (a, lo, hi, False) if step == 1 and lo < hi else None


def _sliced_spec(sg, spec):
    return ops.REGISTRY["slice"].infer(spec, index=sg.attrs["index"])


RULES = [add_zero, sub_zero, mul_one, div_one, pow_one, mul_zero, zero_product, double_neg,
         identity_like, transpose_transpose, elementwise_of_transposes, reshape_reshape,
         static_count, slice_grads_to_concat, slice_grad_into_concat,
         elementwise_of_sparse_concat, add_of_sums_to_like, row_sum_to_like, sum_of_products]


def _new_const(value, n):
    c = const_node(value, origin=n.origin)
    return (c, 0)


def _new_op(op, inputs, attrs, n, spec=None):
    """A new op node with n's spec (or `spec`), credited to n's origin (n: the node whose
    value the rule replaces)."""
    m = INode("op", op, inputs, attrs, [spec or n.spec], origin=n.origin)
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


def _adopt(prog, node):
    """Add a rule's new node, and the new nodes it reads, to the program."""
    have = {id(m) for m in prog.nodes}
    stack = [node]
    while stack:
        m = stack.pop()
        if id(m) not in have:
            have.add(id(m))
            prog.nodes.append(m)
            stack.extend(src for src, _ in m.inputs)


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
                _adopt(prog, new[0])
                prog.replace_uses((n, 0), new)
                # NOTE: n's readers now read the new node: rules later in this sweep see its
                # users (a chain of k rewrites then takes one sweep, not k)
                users[id(new[0])] = users.get(id(new[0]), []) + users.get(id(n), [])
                counts[rule.__name__] = counts.get(rule.__name__, 0) + 1
                changed = True
                break
        if changed:
            topo_sort(prog)
            dead_code(prog)
    return {"rewrites": counts}
