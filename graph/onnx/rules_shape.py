"""Reader rules for shapes and data movement: Reshape, Slice, Gather, Expand, Pad, ...

Shape-like inputs (a Reshape's shape, a Slice's starts) are read with `r.ints`: a value
known while reading, or a graph input, which the reader then treats as a value input.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .values import partial, static
from .rules_math import arg, axes_attr, axes_input, scalar

BIG = 2 ** 62     # Slice bounds at or past this mean "to the end"


def _identity(r, node, ins, at):
    return [ins[0]]


def _shape(r, node, ins, at):
    d = list(ins[0].shape)
    n = len(d)
    start, end = at.get("start", 0), at.get("end", n)
    d = d[max(min(start + n if start < 0 else start, n), 0):
          max(min(end + n if end < 0 else end, n), 0)]
    return [np.array(d, object) if None in d else np.asarray(d, np.int64)]


def _size(r, node, ins, at):
    d = list(ins[0].shape)
    if None in d:
        return [ops.cast(ops.count(r.tensor(ins[0]), axis=None), "int64")]
    return [np.asarray(int(np.prod(d)), np.int64)]


def _constant_of_shape(r, node, ins, at):
    shape = r.ints(ins[0], "the shape", node)
    value = np.asarray(at.get("value", np.zeros(1, np.float32))).reshape(-1)
    if None in shape:
        r.fail(node, "a shape only known at run time")
    r.check_size(shape, value.dtype)
    return [np.full(shape, value[0], value.dtype)]


def _range(r, node, ins, at):
    start, limit, delta = [r.known(v, "Range's bounds", node) for v in ins]
    if any(partial(v) for v in (start, limit, delta)):
        r.fail(node, "Range bounds from a dynamic dim")
    if delta == 0:
        r.fail(node, "delta is 0")
    n = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    r.check_size([n], start.dtype)
    return [(start + np.arange(n).astype(start.dtype) * delta).astype(start.dtype)]


def _reshape(allowzero_attr):
    def rule(r, node, ins, at):
        x, shape = ins[0], r.ints(ins[1], "the target shape", node)
        in_shape = list(x.shape)
        if not (allowzero_attr and at.get("allowzero", 0)):
            shape = [in_shape[i] if d == 0 else d for i, d in enumerate(shape)]
        if static(x):
            if None in shape or partial(x):
                r.fail(node, "reshape of a dynamic shape value")
            return [x.reshape(shape)]
        unknown = [i for i, d in enumerate(shape) if d is None]
        if len(unknown) == 1 and -1 in shape:
            # NOTE: both None are the one dynamic dim (the batch): -1 is the known rest
            if in_shape.count(None) != 1:
                r.fail(node, f"reshape of {in_shape} to {shape}: too many unknown dims")
            known = int(np.prod([d for d in in_shape if d is not None]))
            rest = int(np.prod([d for d in shape if d not in (None, -1)]))
            shape = [known // rest if d == -1 else d for d in shape]
        if len([d for d in shape if d is None]) > 1:
            r.fail(node, f"reshape to {shape}: more than one dim unknown")
        return [ops.reshape(x, tuple(-1 if d is None else d for d in shape))]
    return rule


def _flatten(r, node, ins, at):
    x, axis = ins[0], at.get("axis", 1)
    shape = list(x.shape)
    axis = axis + len(shape) if axis < 0 else axis
    left, right = shape[:axis], shape[axis:]
    if None in right:
        r.fail(node, f"flatten of {shape}: the dims after axis {axis} must be known")
    rest = int(np.prod(right))
    lead = int(np.prod(left)) if None not in left else -1
    return [ops.reshape(arg(r, x), (lead, rest))]


def _transpose(r, node, ins, at):
    x = ins[0]
    perm = at.get("perm", list(reversed(range(len(x.shape)))))
    return [np.transpose(x, perm) if static(x) else ops.transpose(x, axes=tuple(perm))]


def _concat(r, node, ins, at):
    vals = [v for v in ins if v is not None]
    if all(static(v) for v in vals):
        return [np.concatenate(vals, axis=at["axis"])]
    return [ops.concat(*[r.tensor(v) for v in vals], axis=at["axis"])]


def _unsqueeze(axes_of):
    def rule(r, node, ins, at):
        x, axes = ins[0], axes_of(r, node, ins, at)
        nd = len(x.shape) + len(axes)
        for a in sorted(a % nd for a in axes):
            x = np.expand_dims(x, a) if static(x) else ops.expand_dims(x, axis=a)
        return [x]
    return rule


def _squeeze(axes_of):
    def rule(r, node, ins, at):
        x, axes = ins[0], axes_of(r, node, ins, at)
        axis = None if axes is None else tuple(axes)
        if static(x):
            return [np.squeeze(x, axis=axis)]
        return [ops.squeeze(x, axis=axis)]
    return rule


def _slice_of(r, node, x, starts, ends, axes, steps):
    nd = len(x.shape)
    if nd == 0:
        r.fail(node, "Slice of a 0-d input")
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        r.fail(node, f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ "
                     f"in length")
    index = [slice(None)] * nd
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st == 0:
            r.fail(node, "a step of 0")
        if not -nd <= a < nd:
            r.fail(node, f"axis {a} is out of range for a {nd}-d input")
        e = None if abs(e) >= BIG else e
        s = None if abs(s) >= BIG else s
        index[a % nd] = slice(s, e, st)
    if static(x):
        return np.asarray(x[tuple(index)], x.dtype)
    return ops.slice_(x, index=tuple(index))


def _slice_1(r, node, ins, at):
    return [_slice_of(r, node, ins[0], list(at["starts"]), list(at["ends"]),
                      list(at["axes"]) if "axes" in at else None, None)]


def _slice_10(r, node, ins, at):
    vals = [None if len(ins) <= k or ins[k] is None else r.ints(ins[k], name, node)
            for k, name in ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps"))]
    if None in vals[0] or None in vals[1]:
        r.fail(node, "slice bounds must be known while reading")
    return [_slice_of(r, node, ins[0], *vals)]


def _index(r, v, d):
    """Integer indices as int64 with negatives counted from the end of a dim of size d."""
    if static(v):
        v = v.astype(np.int64)
        return np.where(v < 0, v + d, v) if d is not None else v
    v = ops.cast(v, "int64") if np.dtype(v.dtype) != np.int64 else v
    return ops.where(ops.lt(v, scalar(v, 0)), v + scalar(v, d), v) if d is not None else v


def _gather(r, node, ins, at):
    x, idx = ins
    axis = at.get("axis", 0) % max(len(x.shape), 1)
    if static(x) and static(idx):
        return [np.asarray(np.take(x, idx.astype(np.int64), axis=axis), x.dtype)]
    return [ops.take(r.tensor(x), _index(r, idx, x.shape[axis]), axis=axis)]


def _gather_elements(r, node, ins, at):
    x, idx = arg(r, ins[0]), ins[1]
    axis = at.get("axis", 0) % len(x.shape)
    return [ops.gather(r.tensor(x), _index(r, idx, x.shape[axis]), axis=axis)]


def _gather_nd(r, node, ins, at):
    x, idx = arg(r, ins[0]), ins[1]
    if at.get("batch_dims", 0):
        r.fail(node, f"batch_dims={at['batch_dims']} is not supported")
    k = idx.shape[-1]
    shape = list(x.shape)
    if None in shape[:k] or k is None:
        r.fail(node, "GatherND needs the indexed dims known")
    strides = np.cumprod([1] + shape[:k][::-1])[:-1][::-1].astype(np.int64)
    lead = int(np.prod(shape[:k]))
    flat = ops.reshape(x, (lead,) + tuple(-1 if d is None else d for d in shape[k:]))
    cols = [_index(r, ops.slice_(arg(r, idx), index=(Ellipsis, i)), shape[i]) for i in range(k)]
    lin = cols[0] * scalar(cols[0], strides[0])
    for i in range(1, k):
        lin = lin + cols[i] * scalar(cols[i], strides[i])
    return [ops.take(r.tensor(flat), lin, axis=0)]


def _expand(r, node, ins, at):
    x, shape = ins[0], r.ints(ins[1], "the target shape", node)
    if None in shape or None in list(x.shape):
        r.fail(node, "expand to or of a shape only known at run time")
    target = np.broadcast_shapes(tuple(x.shape), tuple(shape))
    if static(x):
        r.check_size(target, x.dtype)
        return [np.broadcast_to(x, target).copy()]
    return [ops.broadcast_to(x, shape=tuple(target))]


def _tile(r, node, ins, at):
    x, reps = ins[0], r.ints(ins[1], "repeats", node)
    if static(x):
        r.check_size([int(d) * k for d, k in zip(x.shape, reps)], x.dtype)
        return [np.tile(x, reps)]
    return [ops.tile(x, tuple(reps))]


def _split_sizes(r, node, x, axis, sizes, n_out):
    d = x.shape[axis]
    if sizes is None:
        if d is None:
            r.fail(node, "splitting an unknown dim into equal parts")
        if n_out < 1:
            r.fail(node, f"splitting into {n_out} outputs")
        if d == 0:
            return list(ops.split(arg(r, x), [0] * n_out, axis=axis))
        part = -(-d // n_out)
        sizes = [part] * (d // part) + ([d % part] if d % part else [])
    return list(ops.split(arg(r, x), list(sizes), axis=axis))


def _split_attr(r, node, ins, at):
    x = ins[0]
    sizes = at.get("split")
    if sizes is None and len(ins) > 1 and ins[1] is not None:
        sizes = r.ints(ins[1], "split", node)
    return _split_sizes(r, node, x, at.get("axis", 0) % len(x.shape), sizes, len(node.output))


def _split_13(r, node, ins, at):
    x = ins[0]
    sizes = r.ints(ins[1], "split", node) if len(ins) > 1 and ins[1] is not None else None
    n = at.get("num_outputs", len(node.output))
    return _split_sizes(r, node, x, at.get("axis", 0) % len(x.shape), sizes, n)


def _pad_of(r, node, x, pads, value, mode, axes=None):
    nd = len(x.shape)
    axes = list(range(nd)) if axes is None else [a % nd for a in axes]
    if len(pads) != 2 * len(axes):
        r.fail(node, f"pads {pads} must hold two numbers per axis {axes}")
    pw = [[0, 0] for _ in range(nd)]
    for k, a in enumerate(axes):
        pw[a] = [pads[k], pads[k + len(axes)]]
    if any(p < 0 for q in pw for p in q):
        x = _crop(r, x, pw)
        pw = [[max(p, 0) for p in q] for q in pw]
    x = arg(r, x)
    if mode == "constant":
        return ops.pad(x, tuple(map(tuple, pw)), value=value)
    for a, (lo, hi) in enumerate(pw):
        if lo or hi:
            x = _pad_axis(r, node, x, a, lo, hi, mode)
    return x


def _crop(r, x, pw):
    index = tuple(slice(-lo if lo < 0 else None, hi if hi < 0 else None) for lo, hi in pw)
    return np.asarray(x[index]) if static(x) else ops.slice_(x, index=index)


def _take_range(x, a, start, stop, step=1):
    return ops.slice_(x, index=(slice(None),) * a + (slice(start, stop, step),))


def _pad_axis(r, node, x, a, lo, hi, mode):
    d = x.shape[a]
    if d is None:
        r.fail(node, f"{mode} padding of an unknown dim")
    if mode == "reflect":
        if lo >= d or hi >= d:
            r.fail(node, f"reflect pads {lo, hi} must be smaller than the dim {d}")
        parts = [ops.flip(_take_range(x, a, 1, lo + 1), a), x,
                 ops.flip(_take_range(x, a, d - 1 - hi, d - 1), a)]
    elif mode == "edge":
        reps = [1] * len(x.shape)
        first, last = _take_range(x, a, 0, 1), _take_range(x, a, d - 1, d)
        parts = [ops.tile(first, tuple(lo if i == a else 1 for i in range(len(reps)))), x,
                 ops.tile(last, tuple(hi if i == a else 1 for i in range(len(reps))))]
    elif mode == "wrap":
        if lo > d or hi > d:
            r.fail(node, f"wrap pads {lo, hi} larger than the dim {d}")
        parts = [_take_range(x, a, d - lo, d), x, _take_range(x, a, 0, hi)]
    else:
        r.fail(node, f"mode={mode!r} is not supported")
    return ops.concat(*[p for p in parts if p.shape[a] != 0], axis=a)


def _pad_2(r, node, ins, at):
    x = ins[0]
    return [_pad_of(r, node, x, list(at.get("pads", at.get("paddings", []))),
                    scalar(x, at.get("value", 0.0)), at.get("mode", "constant"))]


def _pad_11(r, node, ins, at):
    x = ins[0]
    pads = r.ints(ins[1], "pads", node)
    value = scalar(x, 0) if len(ins) < 3 or ins[2] is None else \
        r.known(ins[2], "the constant value", node).astype(x.dtype).reshape(())
    axes = r.ints(ins[3], "axes", node) if len(ins) > 3 and ins[3] is not None else None
    return [_pad_of(r, node, x, pads, value, at.get("mode", "constant"), axes)]


def _trilu(r, node, ins, at):
    x = arg(r, ins[0])
    k = r.ints(ins[1], "k", node)[0] if len(ins) > 1 and ins[1] is not None else 0
    keep = (np.triu if at.get("upper", 1) else np.tril)(np.ones(x.shape[-2:], bool), k)
    return [ops.where(keep, x, scalar(x, 0))]


def _eye_like(r, node, ins, at):
    x = ins[0]
    if len(x.shape) != 2 or None in x.shape:
        r.fail(node, f"EyeLike needs a 2-d input of known shape, got {x.shape}")
    dt = r.dtype(at["dtype"], node, "attribute 'dtype'") if "dtype" in at else x.dtype
    r.check_size(x.shape, dt)
    return [np.eye(x.shape[0], x.shape[1], at.get("k", 0), dtype=dt)]


def _one_hot(r, node, ins, at):
    idx, depth, values = ins
    depth = int(r.known(depth, "depth", node).reshape(-1)[0])
    values = arg(r, values)
    nd = len(idx.shape) + 1
    axis = at.get("axis", -1) % nd
    idx = _index(r, arg(r, idx) if static(idx) else ops.cast(idx, "int64")
                 if np.dtype(idx.dtype).kind == "f" else idx, depth)
    shape = [1] * nd
    shape[axis] = depth
    classes = np.arange(depth, dtype=np.int64).reshape(shape)
    hot = ops.eq(ops.expand_dims(idx, axis=axis), classes)
    off = ops.slice_(values, index=(0,))
    on = ops.slice_(values, index=(1,))
    return [ops.where(hot, on, off)]


def _space_to_depth(r, node, ins, at):
    x, b = arg(r, ins[0]), at["blocksize"]
    n, c, h, w = x.shape
    y = ops.reshape(x, (-1 if n is None else n, c, h // b, b, w // b, b))
    crd = at.get("mode", "DCR") == "CRD"
    y = ops.transpose(y, axes=(0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4))
    return [ops.reshape(y, (-1 if n is None else n, c * b * b, h // b, w // b))]


def _depth_to_space(r, node, ins, at):
    x, b = arg(r, ins[0]), at["blocksize"]
    n, c, h, w = x.shape
    n = -1 if n is None else n
    if at.get("mode", "DCR") == "DCR":
        y = ops.transpose(ops.reshape(x, (n, b, b, c // (b * b), h, w)), axes=(0, 3, 4, 1, 5, 2))
    else:
        y = ops.transpose(ops.reshape(x, (n, c // (b * b), b, b, h, w)), axes=(0, 1, 4, 2, 5, 3))
    return [ops.reshape(y, (n, c // (b * b), h * b, w * b))]


def _compress(r, node, ins, at):
    x, cond = arg(r, ins[0]), r.known(ins[1], "the condition", node)
    keep = np.nonzero(cond.reshape(-1))[0].astype(np.int64)
    if "axis" not in at:
        return [ops.take(ops.reshape(x, (-1,)), keep, axis=0)]
    axis = at["axis"] % len(x.shape)
    return [ops.take(x, keep[keep < x.shape[axis]], axis=axis)]


def _nonzero(r, node, ins, at):
    x = r.known(ins[0], "the input (the output's shape depends on its values)", node)
    return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


TABLE = {
    "Identity": {1: _identity}, "Shape": {1: _shape}, "Size": {1: _size},
    "ConstantOfShape": {9: _constant_of_shape}, "Range": {11: _range},
    "Reshape": {5: _reshape(False), 14: _reshape(True)}, "Flatten": {1: _flatten},
    "Transpose": {1: _transpose}, "Concat": {1: _concat},
    "Unsqueeze": {1: _unsqueeze(axes_attr), 13: _unsqueeze(axes_input)},
    "Squeeze": {1: _squeeze(axes_attr), 13: _squeeze(axes_input)},
    "Slice": {1: _slice_1, 10: _slice_10}, "Gather": {1: _gather},
    "GatherElements": {11: _gather_elements}, "GatherND": {11: _gather_nd},
    "Expand": {8: _expand}, "Tile": {6: _tile},
    "Split": {1: _split_attr, 13: _split_13}, "Pad": {2: _pad_2, 11: _pad_11},
    "Trilu": {14: _trilu}, "EyeLike": {9: _eye_like}, "OneHot": {9: _one_hot},
    "SpaceToDepth": {1: _space_to_depth}, "DepthToSpace": {1: _depth_to_space},
    "Compress": {9: _compress}, "NonZero": {9: _nonzero},
}
