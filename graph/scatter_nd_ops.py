"""TF1's scatters into new tensors: `scatter_nd(indices, updates, shape)` (repeated indices
add up) and `tensor_scatter_nd_update / _add / _sub / _max / _min(tensor, indices, updates)`
(and TF1's older names `tensor_scatter_update / _add / _sub`).

`indices` has shape (..., M): each row names an element (M = the output's rank) or a slice
(M smaller) of the output, and `updates` has shape indices.shape[:-1] + shape[M:]. An index
outside the output raises InvalidArgumentError when run, naming the node, as TF on the CPU
(never wrapping around). Two graph ops do the work no registry op does: `scatter_nd_index`
checks the indices and makes them row numbers of the output seen as (rows, *slice), and
`scatter_rows` combines rows into a tensor (update: the last one wins, as TF's CPU kernel;
max, min, prod). Sums are the registry's `take_grad`. Gradients are TF's: the updates get
`gather_nd(grad, indices)` (for update every row, also one a later row overwrote), max / min
share the gradient evenly among the tied elements, the tensor's own included.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> a = tf.scatter_nd([[1], [3], [1]], tf.constant([1.0, 2.0, 3.0]), [5])
>>> b = tf.tensor_scatter_nd_max(tf.ones([3]), [[0], [2]], tf.constant([4.0, -1.0]))
>>> with tf.Session() as s:
...     s.run([a, b])
[array([0., 4., 0., 2., 0.], dtype=float32), array([4., 1., 1.], dtype=float32)]
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec, fmt_shape, located

from .array_ops import FILL, _dims_tensor, _node, dynamic_reshape
from .core import Tensor, check_tf1_types, constant, convert_to_tensor, graph_op
from .naming import named

__all__ = ["scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
           "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
           "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub"]


# -- the two graph ops ---------------------------------------------------------------------------
def _index_kernel(node):
    what = node.attrs["what"]

    def run(indices, shape):
        idx, dims = np.asarray(indices).astype(np.int64), tuple(int(d) for d in shape)
        m = idx.shape[-1]
        neg = [d for d in dims if d < 0]
        if neg:
            raise ValueError(f"{what}: the output shape {list(dims)} has a negative dim {neg[0]}")
        n_updates = idx.size // m if m else int(np.prod(idx.shape[:-1], dtype=np.int64))
        if n_updates and (m == 0 or 0 in dims):
            raise ValueError(f"{what}: indices {fmt_shape(idx.shape)} specified for an empty "
                             f"output shape {list(dims)} (or indices of no elements), as TF "
                             f"refuses")
        rows = idx.reshape(-1, m) if m else idx.reshape(-1, 0)
        bad = ((rows < 0) | (rows >= np.array(dims[:m], np.int64))).any(axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            at = [int(a) for a in np.unravel_index(k, idx.shape[:-1])]
            raise IndexError(f"{what}: indices{at} = {rows[k].tolist()} does not index into "
                             f"shape {list(dims)}")
        if m == 0:
            return np.zeros(idx.shape[:-1], np.int64)
        return np.ravel_multi_index(tuple(rows.T), dims[:m]).reshape(idx.shape[:-1])
    return run, False


SCATTER_ND_INDEX = graph_op("scatter_nd_index", _index_kernel)


def _rows_kernel(node):
    how = node.attrs["how"]

    def run(updates, rows, into):
        out = np.array(into, copy=True)
        rows = np.asarray(rows).reshape(-1)
        upd = np.asarray(updates, out.dtype).reshape((rows.size,) + out.shape[1:])
        if how == "update":
            # NOTE: the last of repeated rows wins, as TF's CPU kernel writes them in order
            last = np.unique(rows[::-1], return_index=True)[1]
            keep = rows.size - 1 - last
            out[rows[keep]] = upd[keep]
        elif how != "prod" and out.dtype.kind == "f" and (np.isnan(upd).any() or
                                                          np.isnan(out).any()):
            _nan_extreme(out, rows, upd, how, node.attrs.get("tie_into", True))
        else:
            {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[how].at(out, rows, upd)
        return out
    return run, False


def _nan_extreme(out, rows, upd, how, tensor_scatter):
    """TF's CPU kernels with NaN. TensorScatterMax / Min replace an element only by a
    strictly larger / smaller update: a NaN update is skipped, a NaN element stays.
    UnsortedSegmentMax / Min take std::max(value, current) row after row: a NaN row becomes
    the current value, and the next row replaces it."""
    if tensor_scatter:
        stays = np.isnan(out)
        (np.fmax if how == "max" else np.fmin).at(out, rows, upd)
        out[stays] = np.nan
        return
    for r, v in zip(rows, upd):
        cur = out[r]
        out[r] = np.where(v < cur if how == "max" else cur < v, cur, v)


def _rows_vjp(g, updates, rows, into, out, how, tie_into=True, **_):
    """TF's gradients: update (TensorScatterUpdate's), max / min (TensorScatterMax's and
    UnsortedSegmentMax's: ties share evenly), prod (UnsortedSegmentProd's)."""
    if how == "update":
        hit = ops.take_grad(ops.ones_like(ops.cast(rows, g.dtype)), rows,
                            ops.zeros_like(ops.slice_(g, index=(slice(None),) +
                                                      (0,) * (g.ndim - 1))))
        hit = ops.reshape(hit, (-1,) + (1,) * (g.ndim - 1))
        return ops.take(g, rows, axis=0), None, ops.where(ops.gt(hit, 0), ops.zeros_like(g), g)
    if how == "prod":
        return _prod_vjp(g, updates, rows, into, out), None, None
    chosen = ops.eq(updates, ops.take(out, rows, axis=0))
    count = ops.take_grad(ops.cast(chosen, g.dtype), rows, ops.zeros_like(g))
    if not tie_into:   # NOTE: unsorted_segment_max: the start value is no element
        # NOTE: a segment no row chose (its max is NaN) has count 0: 1 keeps 0 / 0 out
        share = ops.take(g / ops.maximum(count, ops.ones_like(count)), rows, axis=0)
        return ops.where(chosen, share, ops.zeros_like(share)), None, None
    own = ops.cast(ops.eq(into, out), g.dtype)
    count = own + count
    return ops.take(g / count, rows, axis=0) * ops.cast(chosen, g.dtype), None, g * own / count


def _prod_vjp(g, x, rows, ones, out):
    zero = ops.eq(x, ops.zeros_like(x))
    zeros = ops.take_grad(ops.cast(zero, g.dtype), rows, ops.zeros_like(g))
    g = ops.where(ops.gt(zeros, 1), ops.zeros_like(g), g)
    nonzero = ops.where(zero, ops.ones_like(x), x)
    nonzero_prod = scatter_rows(nonzero, rows, ones, "prod")
    # NOTE: divided by the non-zero factors (a zero's own share is the product of the others)
    each = ops.where(zero, ops.take(nonzero_prod, rows, axis=0),
                     ops.take(out, rows, axis=0) / nonzero)
    return ops.take(g, rows, axis=0) * each


SCATTER_ROWS = graph_op("scatter_rows", _rows_kernel, vjp=_rows_vjp)


def scatter_rows(updates, rows, into, how, tie_into=True):
    """`into` with `updates` combined into its rows `rows` (int64, checked): "update", "max",
    "min", "prod"; tie_into=False: `into` is a start value, not an element (segment ops)."""
    attrs = {"how": how} if tie_into else {"how": how, "tie_into": False}
    return _node(SCATTER_ROWS, [updates, rows, into], attrs, into.spec, f"scatter_{how}")


# -- arguments -----------------------------------------------------------------------------------
def _indices(what, indices):
    i = convert_to_tensor(indices)
    if i.dtype not in (np.int32, np.int64):
        raise TypeError(f"{what}: indices must be int32 or int64, got {i.dtype.name} ('{i.name}')")
    if i.ndim in (None, 0) or i.shape[-1] is None:
        raise located(f"{what}: indices must be at least 1-d with a known last dim, got "
                      f"{fmt_shape(i.spec)}")
    return i


def _shape(what, shape):
    """(the output shape as an int64 tensor, its static dims)."""
    if isinstance(shape, Tensor):
        if shape.dtype not in (np.int32, np.int64):
            raise TypeError(f"{what}: shape must be int32 or int64, got {shape.dtype.name}")
        if shape.node.type == "const":
            shape = np.asarray(shape.node.attrs["value"])
    mixed = isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape)
    if not isinstance(shape, Tensor) and not mixed:
        shape = np.asarray(shape)
        if shape.ndim != 1 or shape.dtype.kind not in "iu":
            raise TypeError(f"{what}: shape must be a 1-d list of ints, got {shape.tolist()}")
        if (shape < 0).any():
            raise ValueError(f"{what}: shape {shape.tolist()} has a negative dim")
        shape = [int(d) for d in shape]
    t, static = _dims_tensor(shape, what)
    if static is None:
        raise located(f"{what}: the output shape's length must be known")
    return t, tuple(static)


def _check_updates(what, i, u, static):
    m = i.shape[-1]
    if m > len(static):
        raise ValueError(f"{what}: indices {fmt_shape(i.spec)} index {m} dims of an output of "
                         f"shape {fmt_shape(static)}, which has only {len(static)}")
    want = tuple(i.shape[:-1]) + tuple(static[m:])
    if u.ndim is not None and (u.ndim != len(want) or any(
            a is not None and b is not None and a != b for a, b in zip(u.shape, want))):
        raise ValueError(f"{what}: updates {fmt_shape(u.spec)} must have the shape "
                         f"indices.shape[:-1] + shape[{m}:] = {fmt_shape(want)} (indices "
                         f"{fmt_shape(i.spec)}, output {fmt_shape(static)})")


def _rows(what, i, t, static):
    """(the row of the output (rows, *shape[M:]) that each index names, checked; the dims
    of that view as a tensor and statically)."""
    m = i.shape[-1]
    rows = _node(SCATTER_ND_INDEX, [i, t], {"what": what}, Spec(i.shape[:-1], np.dtype(np.int64)),
                 f"{what}_index")
    known = None not in static[:m]
    n = int(np.prod(static[:m], dtype=np.int64)) if known else None
    lead = constant(np.array([n], np.int64)) if known else \
        ops.reshape(ops.prod(ops.slice_(t, index=(slice(0, m),))), (1,))
    dims = ops.concat(lead, ops.slice_(t, index=(slice(m, None),)), axis=0)
    return rows, dims, (n,) + tuple(static[m:])


def _filled(dims, static, value, dtype):
    return _node(FILL, [dims, constant(np.asarray(value, dtype))], {}, Spec(static, dtype),
                 "zeros")


def _as_rows(x, dims, static):
    return ops.reshape(x, static) if None not in static else dynamic_reshape(x, dims)


def _unrows(out, t, static):
    return ops.reshape(out, static) if None not in static else dynamic_reshape(out, t)


# -- the functions -------------------------------------------------------------------------------
@named
def scatter_nd(indices, updates, shape):
    """A tensor of `shape` that is zero but where `indices` put `updates` (repeated indices
    add up; a bool output ors them)."""
    return scatter_nd_as("scatter_nd", indices, updates, shape)


def scatter_nd_as(what, indices, updates, shape):
    """scatter_nd whose errors name `what` (confusion_matrix is one)."""
    i, u = _indices(what, indices), convert_to_tensor(updates)
    t, static = _shape(what, shape)
    _check_updates(what, i, u, static)
    rows, dims, rstatic = _rows(what, i, t, static)
    out = ops.take_grad(u, rows, _filled(dims, rstatic, 0, u.dtype), axis=0)
    return _unrows(out, t, static)


def _tensor_scatter(what, tensor, indices, updates):
    x = convert_to_tensor(tensor)
    u = convert_to_tensor(updates) if isinstance(updates, Tensor) else \
        constant(np.asarray(updates, x.dtype))
    if u.dtype != x.dtype:
        raise TypeError(f"{what}: updates '{u.name}' have dtype {u.dtype.name}, tensor '{x.name}' "
                        f"{x.dtype.name}: TF1 needs one dtype")
    if x.ndim is None:
        raise located(f"{what}: the tensor's rank must be known")
    i = _indices(what, indices)
    static = tuple(x.shape)
    from .array_ops import shape as shape_of
    t = constant(np.array(static, np.int64)) if None not in static else \
        ops.cast(shape_of(x), np.int64)
    _check_updates(what, i, u, static)
    rows, dims, rstatic = _rows(what, i, t, static)
    return x, i, u, t, static, rows, dims, rstatic


@named
def tensor_scatter_nd_update(tensor, indices, updates):
    """`tensor` with `updates` written at `indices` (of repeated indices the last wins, as
    TF's CPU kernel)."""
    x, _, u, t, static, rows, dims, rstatic = _tensor_scatter(
        "tensor_scatter_nd_update", tensor, indices, updates)
    return _unrows(scatter_rows(u, rows, _as_rows(x, dims, rstatic), "update"), t, static)


def _add_or_sub(what, tensor, indices, updates, sign):
    x, _, u, t, static, rows, dims, rstatic = _tensor_scatter(what, tensor, indices, updates)
    check_tf1_types("tensor_scatter_add", x)
    added = _unrows(ops.take_grad(u, rows, _filled(dims, rstatic, 0, u.dtype), axis=0), t,
                    static)
    return x + added if sign > 0 else x - added


@named
def tensor_scatter_nd_add(tensor, indices, updates):
    """`tensor` with `updates` added at `indices` (repeated indices add each)."""
    return _add_or_sub("tensor_scatter_nd_add", tensor, indices, updates, 1)


@named
def tensor_scatter_nd_sub(tensor, indices, updates):
    """`tensor` with `updates` subtracted at `indices` (repeated indices subtract each)."""
    return _add_or_sub("tensor_scatter_nd_sub", tensor, indices, updates, -1)


def _extreme(what, how, tensor, indices, updates):
    x, _, u, t, static, rows, dims, rstatic = _tensor_scatter(what, tensor, indices, updates)
    check_tf1_types("tensor_scatter_add", x)
    return _unrows(scatter_rows(u, rows, _as_rows(x, dims, rstatic), how), t, static)


@named
def tensor_scatter_nd_max(tensor, indices, updates):
    """The elementwise max of `tensor` and the `updates` at `indices`."""
    return _extreme("tensor_scatter_nd_max", "max", tensor, indices, updates)


@named
def tensor_scatter_nd_min(tensor, indices, updates):
    """The elementwise min of `tensor` and the `updates` at `indices`."""
    return _extreme("tensor_scatter_nd_min", "min", tensor, indices, updates)


tensor_scatter_update = tensor_scatter_nd_update   # NOTE: TF1's older names, the same functions
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub
