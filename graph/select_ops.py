"""Ordering, selecting and slicing with TF1's names: `sort`, `argsort`, `nn.top_k`,
`nn.in_top_k`, `sequence_mask`, `slice`, `strided_slice`, `boolean_mask`, `where(condition)`
(indices), `gather_nd`, `tensordot`, `einsum`.

Values that select (top_k's values, boolean_mask, gather_nd, slices) differentiate through
the op library's gather / take / slice rules. Two graph-only ops compute what depends on
the values: `where_indices` (TF's `Where`: the coordinates of the True elements, a shape
known only at run time; it lives in array_ops.py, below math_ops' `where`) and
`ravel_index` (gather_nd's flat index, checking every index against the params' dims as TF
does).

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> x = tf.constant([[1.0, 3.0, 2.0]])
>>> v, i = tf.nn.top_k(x, k=2)
>>> with tf.Session() as s:
...     s.run([v, i, tf.sequence_mask([1, 3], 4)])[1:]
[array([[1, 2]], dtype=int32), array([[ True, False, False, False],
       [ True,  True,  True, False]])]
"""
from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec, fmt_shape, located
from dualgrad.ops.rules import norm_axis

from .array_ops import _node, range as range_, shape as shape_, where_indices
from .core import Tensor, check_tf1_types, constant, convert_to_tensor, graph_op
from .dtypes import as_dtype
from .math_ops import named, reshape, trunc_div

__all__ = ["unsorted_segment_sum", "segment_sum", "segment_mean", "sort", "argsort", "top_k", "in_top_k", "sequence_mask", "slice",
           "strided_slice", "boolean_mask", "where_indices", "gather_nd", "tensordot", "einsum",
           "unique", "reverse_sequence"]

TopKV2 = namedtuple("TopKV2", "values indices")


# -- ordering ----------------------------------------------------------------------------------
def _direction(direction, what):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{what}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    return direction == "DESCENDING"


@named
def argsort(values, axis=-1, direction="ASCENDING", stable=False):
    """int32 indices that sort `values` along `axis` (equal values keep their order)."""
    desc = _direction(direction, "argsort")
    check_tf1_types("sort", values)
    return ops.cast(ops.argsort(convert_to_tensor(values), axis=axis, descending=desc),
                    np.int32)


@named
def sort(values, axis=-1, direction="ASCENDING"):
    """`values` sorted along `axis`; the gradient flows back to the sorted positions."""
    x = convert_to_tensor(values)
    check_tf1_types("sort", x)
    idx = ops.argsort(x, axis=axis, descending=_direction(direction, "sort"))
    return ops.gather(x, idx, axis=axis)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF's names
    """(values, indices) of the k largest entries along the last axis, largest first; equal
    values are ordered by index, lower first (TF's rule). indices are int32."""
    check_tf1_types("top_k", input)
    return _top_k(input, k, name=name)


@named
def _top_k(x, k):
    x = convert_to_tensor(x)
    if isinstance(k, Tensor):
        raise NotImplementedError("top_k: k must be a Python int (a tensor k gives a shape "
                                  "known only at run time)")
    if x.ndim in (None, 0):
        raise located(f"top_k: input must have a known rank of at least 1, got "
                      f"{fmt_shape(x.spec)}")
    n = x.shape[-1]
    if n is None:
        raise located(f"top_k: the last dim of {fmt_shape(x.spec)} must be known")
    if not 0 <= int(k) <= n:
        raise located(f"top_k: input {fmt_shape(x.spec)} must have at least k={k} columns")
    idx = ops.slice_(ops.argsort(x, axis=-1, descending=True),
                     index=(Ellipsis, builtins.slice(0, int(k))))
    return TopKV2(ops.gather(x, idx, axis=-1), ops.cast(idx, np.int32))


@named
def in_top_k(predictions, targets, k):
    """Whether targets[i] is among the k largest of predictions[i] (batch, classes). As TF:
    classes tied with the target at the boundary count as in the top k, and a row with a
    non-finite prediction, or a target out of range, gives False."""
    p = convert_to_tensor(predictions)
    t = convert_to_tensor(targets)
    check_tf1_types("in_top_k", p)
    if p.ndim != 2 or t.ndim != 1:
        raise located(f"in_top_k: predictions must be 2-d and targets 1-d, got "
                      f"{fmt_shape(p.spec)} and {fmt_shape(t.spec)}")
    if t.dtype.kind not in "iu":
        raise TypeError(f"in_top_k: targets must be int32 or int64, got {t.dtype.name}")
    t = ops.cast(t, np.int64)
    n = p.shape[1] if p.shape[1] is not None else ops.cast(shape_(p)[1], np.int64)
    valid = ops.logical_and(ops.ge(t, 0), ops.lt(t, n))
    at = ops.gather(p, ops.expand_dims(ops.where(valid, t, 0), axis=1), axis=1)
    k = int(k)
    # NOTE: one count per row: each class above the target counts 1, each non-finite one
    # k + 1, so the count is below k exactly when TF says True
    bad = ops.logical_or(ops.ne(p, p), ops.eq(ops.abs(p), np.inf))
    score = ops.cast(ops.gt(p, at), np.int64) + ops.cast(bad, np.int64) * (k + 1)
    return ops.lt(ops.where(valid, ops.sum(score, axis=1), k), k)


# -- masks -------------------------------------------------------------------------------------
@named
def sequence_mask(lengths, maxlen=None, dtype="bool"):
    """mask[..., j] = j < lengths[...], of shape lengths.shape + (maxlen,); maxlen defaults
    to max(lengths) (0 for none)."""
    n = convert_to_tensor(lengths)
    if n.dtype.kind not in "iuf":
        raise TypeError(f"sequence_mask: lengths must be numbers, got {n.dtype.name}")
    n = ops.cast(n, np.int64)
    if maxlen is None:
        maxlen = ops.max(n, initial=0)
    if isinstance(maxlen, Tensor):
        if maxlen.ndim not in (0, None):
            raise located(f"sequence_mask: maxlen must be a scalar, got {fmt_shape(maxlen.spec)}")
        row = ops.cast(range_(ops.reshape(maxlen, ())), np.int64)
    else:
        row = np.arange(int(maxlen), dtype=np.int64)
    with ops.core.quiet_broadcast():   # NOTE: the outer comparison is the point here
        mask = ops.lt(row, ops.expand_dims(n, axis=-1))
    dt = as_dtype(dtype)
    return mask if dt == np.bool_ else ops.cast(mask, dt)


# -- slices ------------------------------------------------------------------------------------
def _ints(v, what, arg):
    if isinstance(v, Tensor):
        raise NotImplementedError(f"{what}: {arg} must be known when the graph is built (a "
                                  f"list of ints), not a tensor")
    return [int(a) for a in np.ravel(v)]


@named
def slice(input_, begin, size):  # noqa: A001 - TF's name
    """input_[begin[i] : begin[i] + size[i]] along each dim; size -1 takes the rest."""
    x = convert_to_tensor(input_)
    b, sz = _ints(begin, "slice", "begin"), _ints(size, "slice", "size")
    if x.ndim is None or len(b) != x.ndim or len(sz) != x.ndim:
        raise located(f"slice: begin {b} and size {sz} must have one entry per dim of "
                      f"{fmt_shape(x.spec)}")
    index = []
    for d, (lo, n, dim) in enumerate(zip(b, sz, x.shape)):
        if lo < 0 or n < -1:
            raise located(f"slice: begin {b} and size {sz} must be >= 0 (size -1: the rest)")
        if n != -1 and dim is None:
            raise NotImplementedError(f"slice: size {n} of the unknown dim {d} of "
                                      f"{fmt_shape(x.spec)} cannot be checked against it; "
                                      f"pass -1 there")
        if dim is not None and lo + max(n, 0) > dim:
            raise located(f"slice: begin {b} + size {sz} exceeds {fmt_shape(x.spec)} in "
                          f"dim {d}")
        index.append(builtins.slice(lo, None if n == -1 else lo + n))
    return ops.slice_(x, index=tuple(index))


def _bit(mask, i):
    return bool(int(mask) >> i & 1)


@named
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None):
    """TF's strided_slice with Python ints for begin, end and strides: entry i is
    begin[i]:end[i]:strides[i] (clamped as Python slices are), with the masks' bit i
    meaning: begin / end ignored, '...', a new axis, or an index that removes the dim."""
    x = convert_to_tensor(input_)
    b, e = _ints(begin, "strided_slice", "begin"), _ints(end, "strided_slice", "end")
    st = [1] * len(b) if strides is None else _ints(strides, "strided_slice", "strides")
    if not len(b) == len(e) == len(st):
        raise ValueError(f"strided_slice: begin {b}, end {e} and strides {st} must have "
                         f"one length")
    index = []
    for i, (lo, hi, s) in enumerate(zip(b, e, st)):
        if s == 0:
            raise ValueError("strided_slice: strides must be nonzero")
        if _bit(ellipsis_mask, i):
            index.append(Ellipsis)
        elif _bit(new_axis_mask, i):
            index.append(None)
        elif _bit(shrink_axis_mask, i):
            index.append(lo)
        else:
            index.append(builtins.slice(None if _bit(begin_mask, i) else lo,
                                        None if _bit(end_mask, i) else hi, s))
    return ops.slice_(x, index=tuple(index))


# -- selections whose size depends on the values ---------------------------------------------------
@named
def boolean_mask(tensor, mask, axis=None):
    """The elements (or slices) of `tensor` where the bool `mask` is True: mask covers the
    dims axis .. axis + mask.ndim - 1, which become one dim of the kept entries."""
    x, m = convert_to_tensor(tensor), convert_to_tensor(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"boolean_mask: mask must be bool, got {m.dtype.name}")
    if m.ndim in (None, 0) or x.ndim is None:
        raise located(f"boolean_mask: the mask's rank must be known and not 0, got "
                      f"{fmt_shape(m.spec)}")
    a = 0 if axis is None else norm_axis("boolean_mask", axis, x.ndim, x.spec, frontend=True)
    k = m.ndim
    if a + k > x.ndim or any(None not in (d, n) and d != n
                             for d, n in zip(m.shape, x.shape[a:a + k])):
        raise located(f"boolean_mask: mask {fmt_shape(m.spec)} must match the dims {a}.."
                      f"{a + k - 1} of tensor {fmt_shape(x.spec)}")
    if k > 1:
        dims = [d if d is not None else shape_(x)[i] for i, d in enumerate(x.shape)]
        x = reshape(x, dims[:a] + [-1] + dims[a + k:])
        m = ops.reshape(m, (-1,))
    idx = ops.reshape(where_indices(m), (-1,))
    return ops.take(x, idx, axis=a)


def _unique_kernel(node):
    out_idx = np.dtype(node.attrs["out_idx"])

    def run(x):
        x = np.asarray(x)
        _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        order = np.argsort(first)              # NOTE: TF keeps the order of first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return x[np.sort(first)], rank[inverse.reshape(-1)].astype(out_idx)
    return run, False


UNIQUE = graph_op("unique", _unique_kernel)
Unique = namedtuple("Unique", "y idx")


def unique(x, out_idx="int32", name=None):
    """(y, idx): the distinct values of the 1-d `x` in the order they first occur, and for
    each element of x the position of its value in y (tf.unique). No gradient."""
    t = convert_to_tensor(x)
    if t.ndim != 1:
        raise located(f"unique: x must be 1-d, got {fmt_shape(t.spec)}")
    dt = as_dtype(out_idx)
    if dt not in (np.int32, np.int64):
        raise TypeError(f"unique: out_idx must be int32 or int64, got {dt}")
    g = t.graph
    node = g.create_node(UNIQUE, (t,), {"out_idx": dt.name},
                         [Spec((None,), t.dtype), Spec(t.shape, dt)], name or "Unique")
    return Unique(*node.outputs)


def _ravel_index_kernel(node):
    def run(indices, params_shape):
        idx = np.asarray(indices).astype(np.int64)
        dims = tuple(int(d) for d in params_shape)
        bad = (idx < 0) | (idx >= np.array(dims, np.int64))
        if bad.any():
            at = np.argwhere(bad.any(axis=-1))[0]
            raise IndexError(f"gather_nd: index {idx[tuple(at)].tolist()} (at {at.tolist()}) "
                             f"is out of bounds for the params' dims {list(dims)}")
        if not dims:
            return np.zeros(idx.shape[:-1], np.int64)
        return np.ravel_multi_index(np.moveaxis(idx, -1, 0), dims).astype(np.int64)
    return run, False


RAVEL_INDEX = graph_op("ravel_index", _ravel_index_kernel)


@named
def gather_nd(params, indices, batch_dims=0):
    """params[indices[..., 0], indices[..., 1], …]: shape indices.shape[:-1] +
    params.shape[M:] with M = indices.shape[-1]; an index out of range raises, as TF on the
    CPU."""
    if batch_dims:
        raise NotImplementedError("gather_nd: batch_dims other than 0 is not supported")
    p = convert_to_tensor(params)
    i = indices if isinstance(indices, Tensor) else constant(np.asarray(indices, np.int64))
    if i.dtype.kind not in "iu" or i.ndim in (None, 0) or i.shape[-1] is None:
        raise located(f"gather_nd: indices must be integers with a known last dim, got "
                      f"{i.dtype.name} {fmt_shape(i.spec)}")
    m = i.shape[-1]
    if p.ndim is None or m > p.ndim:
        raise located(f"gather_nd: indices {fmt_shape(i.spec)} index {m} dims of params "
                      f"{fmt_shape(p.spec)}, which must have at least as many")
    dims = constant(np.array(p.shape[:m], np.int64)) if None not in p.shape[:m] else \
        ops.cast(ops.slice_(shape_(p), index=(builtins.slice(0, m),)), np.int64)
    flat_idx = _node(RAVEL_INDEX, [i, dims], {}, Spec(i.shape[:-1], np.dtype(np.int64)),
                     "ravel_index")
    rest = p.shape[m:]
    if None in rest:
        dims = [d if d is not None else shape_(p)[m + k] for k, d in enumerate(rest)]
        flat = reshape(p, [-1] + dims)
    else:
        flat = ops.reshape(p, (-1,) + tuple(rest))
    return ops.take(flat, flat_idx, axis=0)


# -- products ------------------------------------------------------------------------------------
def _tensordot_axes(axes, a, b):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise ValueError(f"tensordot: axes={n} must be in [0, min(ranks)] for "
                             f"{fmt_shape(a.spec)} and {fmt_shape(b.spec)}")
        return list(builtins.range(a.ndim - n, a.ndim)), list(builtins.range(n))
    if isinstance(axes, Tensor):
        raise NotImplementedError("tensordot: axes must be Python ints or lists")
    aa, bb = axes
    aa = [aa] if np.ndim(aa) == 0 else list(aa)
    bb = [bb] if np.ndim(bb) == 0 else list(bb)
    if len(aa) != len(bb):
        raise ValueError(f"tensordot: axes {aa} and {bb} must have one length")
    return ([norm_axis("tensordot", int(x), a.ndim, a.spec, frontend=True) for x in aa],
            [norm_axis("tensordot", int(x), b.ndim, b.spec, frontend=True) for x in bb])


@named
def tensordot(a, b, axes):
    """The sum over a's axes[0] and b's axes[1] (an int n: a's last n, b's first n) of
    a * b; the result has a's free dims, then b's. A transpose, a matmul and reshapes."""
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    if a.ndim is None or b.ndim is None:
        raise located("tensordot: the ranks of both inputs must be known")
    ca, cb = _tensordot_axes(axes, a, b)
    for x, y in zip(ca, cb):
        if None not in (a.shape[x], b.shape[y]) and a.shape[x] != b.shape[y]:
            raise located(f"tensordot: dim {x} of {fmt_shape(a.spec)} and dim {y} of "
                          f"{fmt_shape(b.spec)} differ ({a.shape[x]} != {b.shape[y]})")
    csize = [a.shape[x] if a.shape[x] is not None else b.shape[y] for x, y in zip(ca, cb)]
    if None in csize:
        raise located(f"tensordot: the contracted dims of {fmt_shape(a.spec)} and "
                      f"{fmt_shape(b.spec)} must be known")
    fa = [d for d in builtins.range(a.ndim) if d not in ca]
    fb = [d for d in builtins.range(b.ndim) if d not in cb]
    k = int(np.prod(csize, dtype=np.int64))
    a2 = ops.reshape(ops.transpose(a, axes=tuple(fa + ca)), (-1, k))
    b2 = ops.reshape(ops.transpose(b, axes=tuple(cb + fb)), (k, -1))
    out_dims = [a.shape[d] if a.shape[d] is not None else shape_(a)[d] for d in fa] + \
        [b.shape[d] if b.shape[d] is not None else shape_(b)[d] for d in fb]
    return reshape(ops.matmul(a2, b2), out_dims)


def einsum(equation, *inputs, name=None, **kwargs):
    """tf.einsum(equation, *inputs): np.einsum's notation ('...' too); a letter repeated
    within one operand (a diagonal) raises NotImplementedError."""
    if kwargs:
        raise TypeError(f"einsum: unexpected arguments {sorted(kwargs)}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    inputs = [convert_to_tensor(x) for x in inputs]
    check_tf1_types("einsum", *inputs)
    return _einsum(*inputs, equation=equation, name=name)


_einsum = named(ops.einsum)


# -- segment reductions ----------------------------------------------------------------------------
def _segment_ids_kernel(node):
    a = node.attrs

    def run(ids, num_segments):
        ids, n = np.asarray(ids).astype(np.int64), int(num_segments)
        bad = ids[ids >= n]
        if bad.size:
            raise IndexError(f"{a['what']}: segment id {int(bad[0])} is out of range [0, {n})")
        if a["sorted"] and (ids < 0).any():
            raise IndexError(f"{a['what']}: segment ids must be >= 0, got {int(ids.min())}")
        if a["sorted"] and (np.diff(ids) < 0).any():
            raise IndexError(f"{a['what']}: segment ids are not increasing")
        return np.where(ids < 0, n, ids)   # NOTE: a negative id is dropped, as TF: a spare row
    return run, False


SEGMENT_IDS = graph_op("segment_ids", _segment_ids_kernel)


def segment_rows(what, data, segment_ids, num_segments, sorted_ids=False):
    """(data as rows (ids.size, *rest), the checked ids with a negative one as row n, n as
    an int64 scalar tensor, rest's dims (tensors where unknown), n when known). segment_ids'
    shape is a prefix of data's (TF's unsorted segment ops; the sorted ones take 1-d ids)."""
    x, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    if ids.dtype not in (np.int32, np.int64):
        raise TypeError(f"{what}: segment_ids must be int32 or int64, got {ids.dtype.name} "
                        f"('{ids.name}')")
    k = ids.ndim
    if k is None or x.ndim is None or k > x.ndim or (sorted_ids and k != 1) or x.ndim == 0:
        raise located(f"{what}: segment_ids {fmt_shape(ids.spec)} must be "
                      f"{'1-d' if sorted_ids else 'of a known rank'} and data "
                      f"{fmt_shape(x.spec)} at least as many dims")
    for a, b in zip(ids.shape, x.shape):
        if None not in (a, b) and a != b:
            raise located(f"{what}: segment_ids {fmt_shape(ids.spec)} must be a prefix of "
                          f"data's shape {fmt_shape(x.spec)}")
    if num_segments is None:
        n = ops.max(ops.cast(ids, np.int64), initial=-1) + 1
    else:
        n = num_segments if isinstance(num_segments, Tensor) else \
            constant(np.int64(num_segments))
        if isinstance(num_segments, Tensor) and n.dtype not in (np.int32, np.int64):
            raise TypeError(f"{what}: num_segments must be int32 or int64, got {n.dtype.name}")
        if not isinstance(num_segments, Tensor) and int(num_segments) < 0:
            raise ValueError(f"{what}: num_segments must be non-negative, got {num_segments}")
    n = ops.reshape(ops.cast(n, np.int64), ())
    if k != 1:
        ids = ops.reshape(ids, (-1,))
        x = reshape(x, [-1] + [d if d is not None else shape_(x)[k + j]
                               for j, d in enumerate(x.shape[k:])])
    safe = _node(SEGMENT_IDS, [ids, n], {"what": what, "sorted": sorted_ids},
                 Spec(ids.shape, np.dtype(np.int64)), "segment_ids")
    rest = [d if d is not None else shape_(x)[j + 1] for j, d in enumerate(x.shape[1:])]
    static_n = None if isinstance(num_segments, Tensor) or num_segments is None else \
        int(num_segments)
    return x, safe, n, rest, static_n


def segment_result(out, x, static_n):
    """The n rows of a result over n + 1 (the spare last one took the dropped rows)."""
    out = ops.slice_(out, index=(builtins.slice(0, -1),))
    if static_n is not None and None not in x.shape[1:]:
        out = ops.reshape(out, (static_n,) + tuple(x.shape[1:]))
    return out


def _segment_sum(what, data, segment_ids, num_segments, sorted_ids):
    check_tf1_types("segment_sum", convert_to_tensor(data))
    x, safe, n, rest, static_n = segment_rows(what, data, segment_ids, num_segments,
                                              sorted_ids)
    from .array_ops import zeros
    like = zeros([n + 1] + rest, x.dtype)   # NOTE: one spare row for the dropped ids
    return segment_result(ops.take_grad(x, safe, like, axis=0), x, static_n)


@named
def unsorted_segment_sum(data, segment_ids, num_segments):
    """out[i] = the sum of the rows data[j] with segment_ids[j] == i, for i < num_segments;
    rows with a negative id are dropped, an id >= num_segments raises, as TF."""
    return _segment_sum("unsorted_segment_sum", data, segment_ids, num_segments, False)


@named
def segment_sum(data, segment_ids):
    """unsorted_segment_sum over max(segment_ids) + 1 segments; the ids must be sorted and
    non-negative, as TF's CPU kernel requires."""
    return _segment_sum("segment_sum", data, segment_ids, None, True)


@named
def segment_mean(data, segment_ids):
    """The mean of each segment's rows (0 for an empty segment)."""
    x = convert_to_tensor(data)
    total = _segment_sum("segment_mean", x, segment_ids, None, True)
    ones = ops.ones_like(ops.slice_(x, index=(builtins.slice(None),) + (0,) * (x.ndim - 1)))
    count = _segment_sum("segment_mean", ones, segment_ids, None, True)
    count = ops.reshape(count, (-1,) + (1,) * (x.ndim - 1))
    count = ops.maximum(count, 1)
    return total / count if x.dtype.kind == "f" else trunc_div(total, count)


# -- reverse_sequence --------------------------------------------------------------------------
def _reverse_index_kernel(node):
    axis = node.attrs["seq_axis"]

    def run(lengths, steps):
        n, t = np.asarray(lengths).astype(np.int64), int(steps)
        for bad, rel in ((n > t, ">"), (n < 0, "<")):
            if bad.any():
                b = int(np.argmax(bad))
                raise ValueError(f"reverse_sequence: seq_lengths[{b}] = {int(n[b])} {rel} "
                                 f"{t if rel == '>' else 0} (input dim {axis} is {t})")
        k = np.arange(t, dtype=np.int64)[None, :]
        within = k < n[:, None]
        step = np.where(within, n[:, None] - 1 - k, k)
        return np.arange(n.size, dtype=np.int64)[:, None] * t + step
    return run, False


REVERSE_INDEX = graph_op("reverse_sequence_index", _reverse_index_kernel)


def _axis_arg(new, old, what):
    if new is not None and old is not None and new != old:
        raise ValueError(f"reverse_sequence: cannot give both {what}_axis={new} and "
                         f"{what}_dim={old}")
    return new if new is not None else old


@named
def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, seq_dim=None,  # noqa: A002
                     batch_dim=None):
    """Reverse the first seq_lengths[b] entries along seq_axis of each example b along
    batch_axis (the rest stay), as tf.reverse_sequence; a length above the sequence's or
    below 0 raises when run. The gradient is the gradient reversed alike."""
    seq_axis = _axis_arg(seq_axis, seq_dim, "seq")
    batch_axis = _axis_arg(batch_axis, batch_dim, "batch")
    if seq_axis is None:
        raise TypeError("reverse_sequence: expected an int for seq_axis (or seq_dim), not None")
    batch_axis = 0 if batch_axis is None else int(batch_axis)
    seq_axis = int(seq_axis)
    x, n = convert_to_tensor(input), convert_to_tensor(seq_lengths)
    if x.ndim is None:
        raise located("reverse_sequence: the input's rank must be known")
    for a, what in ((seq_axis, "seq_axis"), (batch_axis, "batch_axis")):
        if not 0 <= a < x.ndim:   # NOTE: TF takes no negative axes
            raise ValueError(f"reverse_sequence: {what}={a} must be in [0, {x.ndim}) for "
                             f"{fmt_shape(x.spec)}")
    if seq_axis == batch_axis:
        raise ValueError(f"reverse_sequence: seq_axis and batch_axis are both {seq_axis}")
    if n.dtype.kind not in "iu" or n.ndim != 1:
        raise located(f"reverse_sequence: seq_lengths must be a 1-d integer tensor, got "
                      f"{n.dtype.name} {fmt_shape(n.spec)}")
    b = x.shape[batch_axis]
    if None not in (b, n.shape[0]) and b != n.shape[0]:
        raise ValueError(f"reverse_sequence: seq_lengths {fmt_shape(n.spec)} must have one "
                         f"entry per example: input {fmt_shape(x.spec)} has {b} along "
                         f"batch_axis {batch_axis}")
    perm = [batch_axis, seq_axis] + [d for d in builtins.range(x.ndim)
                                     if d not in (batch_axis, seq_axis)]
    xp = x if perm == list(builtins.range(x.ndim)) else ops.transpose(x, axes=tuple(perm))
    dims = [d if d is not None else shape_(xp)[k] for k, d in enumerate(xp.shape)]
    steps = constant(np.int64(dims[1])) if isinstance(dims[1], int) else \
        ops.cast(dims[1], np.int64)
    pos = _node(REVERSE_INDEX, [n, steps], {"seq_axis": seq_axis},
                Spec((xp.shape[0] if xp.shape[0] is not None else n.shape[0], xp.shape[1]),
                     np.dtype(np.int64)), "reverse_sequence_index")
    rows = reshape(xp, [-1] + dims[2:]) if xp.ndim > 1 else xp
    out = ops.take(rows, pos, axis=0)
    inv = [perm.index(d) for d in builtins.range(x.ndim)]
    return out if inv == list(builtins.range(x.ndim)) else ops.transpose(out, axes=tuple(inv))
