"""Indexing, ordering and gathering: `x[index]` for both engines' tensors, argsort, gather
(torch.gather / take_along_axis) and its gradient.

`sort` and `topk` are argsort followed by gather, so their values carry gradients through
gather's rule; indices have none.
"""
from __future__ import annotations

import numpy as np
from .rules import floating

from . import refs
from .core import Sample, ShapeError, Spec, bind, fmt_shape, is_value, register
from .rules import norm_axis, same
from .shape import slice_, take


# -- x[index] ---------------------------------------------------------------------------------
def getitem(x, index):
    """`x[index]` as NumPy reads it, for the indexing both engines support: basic indexing
    (ints, slices, None, ...) is one `slice` op; one integer array, list or tensor, with ':'
    elsewhere, is `take`. A boolean mask (a data-dependent shape) is an IndexError.

    >>> import numpy as np
    >>> from dualgrad import ops
    >>> x = np.arange(6.0).reshape(2, 3)
    >>> ops.getitem(x, (Ellipsis, [2, 0])).tolist(), ops.getitem(x, (1, slice(None, 2))).tolist()
    ([[2.0, 0.0], [5.0, 3.0]], [3.0, 4.0])
    """
    parts = index if isinstance(index, tuple) else (index,)
    if any(_is_mask(p) for p in parts):
        raise IndexError("boolean-mask indexing makes a data-dependent shape and is not "
                         "supported; use where(mask, x, 0) instead")
    arrays = _arrays(parts)
    if not arrays:
        return slice_(x, index=tuple(int(p) if isinstance(p, np.integer) else p for p in parts))
    if not _one_take(parts, arrays):
        raise IndexError("only one integer-array index, with ':' elsewhere, is supported "
                         "(e.g. x[idx] or x[:, idx]); see gather for more")
    axis = arrays[0]
    # NOTE: `is`, not `in`, which would call a tensor's __eq__
    if any(p is Ellipsis for p in parts[:axis]):
        axis = len(x.shape) - (len(parts) - axis)
    idx = parts[arrays[0]]
    return take(x, idx if is_value(idx) else np.asarray(idx, dtype=np.int64), axis=axis)


def torch_stages(index, ndim):
    """`index` (its tensors already NumPy arrays) as two NumPy indexes applied one after the
    other, `x[first][second]`, where NumPy's one reading differs from torch's: torch applies
    integers (and 0-d integer tensors) first, as `select`, before its advanced indexing, so
    in `x[0, :, idx]` the index arrays are adjacent once the integer is gone and their
    dimension stays in place, (5, 3) for x (4, 5, 6) and three positions, where NumPy counts
    the integer as an advanced index separated from `idx` by the slice and puts the
    broadcast dimension first, (3, 5). An Ellipsis is expanded first, so one that stands
    for no dimension does not part two index arrays (`x[:, [4], ..., idx]` of a 3-d x), as
    it does in NumPy. None when NumPy's reading is torch's: no index array, or neither an
    integer nor an Ellipsis beside it. The first index holds only ints, slices and None (a
    view, so assigning through `x[first][second]` writes x)."""
    parts = index if isinstance(index, tuple) else (index,)
    kinds = [_kind(p) for p in parts]
    if "array" not in kinds or "int" not in kinds and "ellipsis" not in kinds:
        return None
    used = sum(np.ndim(p) if k == "array" and _is_mask(p) else 1
               for p, k in zip(parts, kinds) if k in ("int", "slice", "array"))
    first, second = [], []
    for p, k in zip(parts, kinds):
        if k == "int":
            first.append(int(p))
        elif k == "array":
            first.extend([slice(None)] * (np.ndim(p) if _is_mask(p) else 1))
            second.append(p)
        elif k == "ellipsis":
            first.extend([slice(None)] * max(ndim - used, 0))
            second.extend([slice(None)] * max(ndim - used, 0))
        else:                                        # a slice, or None (a new dim of 1)
            first.append(p)
            second.append(slice(None))
    return tuple(first), tuple(second)


def _kind(p):
    if p is None:
        return "none"
    if p is Ellipsis:
        return "ellipsis"
    if isinstance(p, slice):
        return "slice"
    if isinstance(p, (bool, np.bool_)):
        return "array"                     # NOTE: x[True] adds a dim, as None and a 0-d mask
    if isinstance(p, (int, np.integer)):
        return "int"
    if isinstance(p, np.ndarray) and p.ndim == 0 and p.dtype.kind in "iu":
        return "int"
    return "array"


def torch_indexed(arr, index):
    """(base, last) such that base[last] reads, or is assigned, as torch's arr[index] (the
    first of torch_stages applied: a view of arr)."""
    stages = torch_stages(index, arr.ndim)
    return (arr, index) if stages is None else (arr[stages[0]], stages[1])


def index_positions(shape, index):
    """The flat positions of x[index] for an x of `shape`, read as torch reads the index."""
    base, last = torch_indexed(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape),
                               index)
    return base[last]


def staged(index):
    """Whether getitem can stage `index` without its values: no boolean mask and at most one
    index array, with ':' elsewhere. Eager computes the rest (torch's advanced indexing) from
    the index's values."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(_is_mask(p) for p in parts):
        return False
    arrays = _arrays(parts)
    return not arrays or _one_take(parts, arrays)


def _arrays(parts):
    return [k for k, p in enumerate(parts) if isinstance(p, (list, np.ndarray)) or is_value(p)]


def _one_take(parts, arrays):
    return len(arrays) == 1 and all(p is Ellipsis or p == slice(None)
                                    for k, p in enumerate(parts) if k != arrays[0])


def _is_mask(p):
    if isinstance(p, list):
        return np.asarray(p).dtype == np.bool_
    return (isinstance(p, np.ndarray) or is_value(p)) and p.dtype == np.bool_


# -- argsort ----------------------------------------------------------------------------------
def _argsort_infer(x, axis=-1, descending=False, **_):
    norm_axis("argsort", axis, max(x.ndim, 1), x)
    return same(x, dtype=np.int64)


def _argsort_kernel(x, axis=-1, descending=False, topk=0, topk_sorted=True, unstable=False):
    x = np.asarray(x)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if topk or unstable:    # NOTE: ties in torch's CPU order (topk's, or sort(stable=False)'s)
        from . import tie_order
        rows = np.moveaxis(x, axis, -1)
        if topk:
            return np.moveaxis(tie_order.topk_order(rows, topk, descending, topk_sorted), -1,
                               axis)
        if not tie_order.sorts_stably(rows, descending):
            return np.moveaxis(tie_order.sort_order(rows, descending), -1, axis)
    if descending:     # NOTE: negating keeps equal values in their original order (stable)
        neg = -(x.astype(np.int64) if x.dtype.kind in "bu" else x)
        if floating(x.dtype) and np.isnan(x).any():
            # NOTE: NaN counts as the largest value (first when descending), as torch's sort
            return np.moveaxis(np.lexsort((np.moveaxis(neg, axis, -1),
                                           ~np.isnan(np.moveaxis(x, axis, -1))), axis=-1), -1,
                               axis)
        x = neg
    return np.argsort(x, axis=axis, kind="stable")


ARGSORT = register(
    "argsort", _argsort_infer, _argsort_kernel, None, category="other",
    samples=(Sample(((3, 4),), {"axis": 1}, grad=False),
             Sample(((5,),), {"axis": 0, "descending": True}, grad=False),
             Sample(((2, 3, 2),), {"axis": 0}, grad=False),
             Sample(((3, 4),), {"axis": 2}, match=r"argsort: axis 2 is out of range")),
    ref=lambda np, x, axis=-1, descending=False: np.argsort(-x if descending else x, axis=axis))


# -- gather -----------------------------------------------------------------------------------
def _gather_infer(x, idx, axis, **_):
    if idx.weak is None and idx.dtype.kind not in "iu":
        raise ShapeError(f"gather: index must be integers, got {idx.dtype} for {fmt_shape(idx)}")
    if 0 in idx.shape:   # NOTE: torch takes an empty index of any rank
        return same(x, shape=idx.shape)
    if max(idx.ndim, 1) != max(x.ndim, 1):   # NOTE: torch reads 0-d as 1-d of one element
        raise ShapeError(f"gather: index {fmt_shape(idx)} and input {fmt_shape(x)} must have "
                         f"the same number of dimensions")
    a = norm_axis("gather", axis, x.ndim, x)
    for d, (i, n) in enumerate(zip(idx.shape, x.shape)):
        if d != a and i is not None and n is not None and i > n:
            raise ShapeError(f"gather: index {fmt_shape(idx)} is larger than input "
                             f"{fmt_shape(x)} in dimension {d} ({i} > {n})")
    return same(x, shape=idx.shape)


def _gather_kernel(x, idx, axis):
    x, idx = np.asarray(x), np.asarray(idx)
    if idx.size == 0:
        return np.zeros(idx.shape, x.dtype)
    if x.ndim == 0 or idx.ndim == 0:   # NOTE: torch reads 0-d as 1-d of one element
        return _gather_kernel(x.reshape(-1), idx.reshape(-1), 0).reshape(idx.shape)
    a = axis % x.ndim
    n = x.shape[a]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = idx.max() if idx.max() >= n else idx.min()
        raise IndexError(f"index {bad} is out of bounds for dimension {a} with size {n}")
    sl = tuple(slice(None) if d == a else slice(0, s) for d, s in enumerate(idx.shape))
    return np.take_along_axis(x[sl], idx, axis=a)


def _gather_ref(np, x, idx, axis):
    if x.ndim == 0:
        return x.reshape(1)[idx.reshape(1)].reshape(idx.shape)
    a = axis % x.ndim
    sl = tuple(slice(None) if d == a else slice(0, s) for d, s in enumerate(idx.shape))
    return np.take_along_axis(x[sl], idx, axis=a)


GATHER = register(
    "gather", _gather_infer, _gather_kernel,
    lambda g, x, idx, axis, **kw: (gather_grad(g, idx, x, axis=axis), None), category="other",
    samples=(Sample(((3, 4), np.array([[0, 1], [2, 0], [3, 3]])), {"axis": 1}),
             Sample(((3, 4), np.array([[2, 0, 1, 1]])), {"axis": 0}),
             Sample(((2, 3, 2), np.array([[[1], [0]], [[2], [2]]])), {"axis": 1}),
             Sample(((), np.array(0)), {"axis": 0}),
             Sample(((3, 4), (3, 2)), {"axis": 1}, match="index must be integers"),
             Sample(((3, 4), np.array([0, 1])), {"axis": 0},
                    match=r"gather: index \(2,\) and input \(3, 4\) must have the same number")),
    ref=_gather_ref, complex=True)


def _gather_grad_infer(g, idx, x, axis, **_):
    return same(x, dtype=g.dtype)


def _gather_grad_kernel(g, idx, x, axis, into=False):
    """Scatter-add g into zeros shaped like x at gather's positions (repeats accumulate);
    into=True: into x itself, one addition after another in index order, each rounded in
    g's dtype (torch's scatter_add and scatter_reduce / index_reduce's sums: float16 and
    float32 round as theirs)."""
    g, idx = np.asarray(g), np.asarray(idx)
    if idx.size == 0:
        return np.array(x, g.dtype) if into else np.zeros(np.shape(x), g.dtype)
    if np.ndim(x) == 0 or idx.ndim == 0:   # NOTE: as gather's 0-d
        return _gather_grad_kernel(g.reshape(-1), idx.reshape(-1), np.reshape(x, -1), 0,
                                   into).reshape(np.shape(x))
    z = np.array(x, g.dtype) if into else np.zeros(np.shape(x), g.dtype)
    a = axis % z.ndim
    grid = np.indices(idx.shape, sparse=True)
    np.add.at(z, tuple(idx if d == a else grid[d] for d in range(z.ndim)), g)
    return z


GATHER_GRAD = register(
    "gather_grad", _gather_grad_infer, _gather_grad_kernel,
    lambda gg, g, idx, x, axis, into=False, **kw: (gather(gg, idx, axis=axis), None,
                                                  gg if into else None), category="other",
    samples=(Sample(((3, 2), np.array([[0, 1], [2, 2], [3, 3]]), (3, 4)), {"axis": 1}),
             Sample(((3, 2), np.array([[0, 1], [2, 2], [3, 3]]), (3, 4)),
                    {"axis": 1, "into": True})),
    ref=lambda np_, g, idx, x, axis, into=False: refs.scatter(
        np_, g, _gather_ref(np, refs.positions(x.shape), idx, axis), x.shape) +
    (x if into else 0), complex=True)


def argsort(x, axis=-1, descending=False, topk=0, topk_sorted=True, unstable=False):
    """Indices that sort x along axis (stable: equal values keep their order). topk=k > 0:
    the first k are torch's CPU topk's (k largest when descending, else smallest; among
    equal values its order, sorted unless topk_sorted=False), the rest unspecified.
    unstable=True: equal values in torch's CPU sort(stable=False) order."""
    if topk:
        return bind(ARGSORT, x, axis=int(axis), descending=bool(descending), topk=int(topk),
                    topk_sorted=bool(topk_sorted))
    if unstable:
        return bind(ARGSORT, x, axis=int(axis), descending=bool(descending), unstable=True)
    return bind(ARGSORT, x, axis=int(axis), descending=bool(descending))


def gather(x, idx, axis):
    return bind(GATHER, x, idx, axis=int(axis))


def gather_grad(g, idx, x, axis, into=False):
    if into:
        return bind(GATHER_GRAD, g, idx, x, axis=int(axis), into=True)
    return bind(GATHER_GRAD, g, idx, x, axis=int(axis))


ARGSORT.fn, GATHER.fn, GATHER_GRAD.fn = argsort, gather, gather_grad
_ = Spec
