"""Shape primitives: reshape, transpose, broadcast, squeeze, concat, slicing, take, pad.

Gradient rules that need a shape use `*_like` ops, whose target shape is read from a tensor
at run time, so they work when dims are None in a graph.
"""
from __future__ import annotations

import math

import numpy as np
from .rules import floating

from .core import (Sample, ShapeError, Spec, bind, fmt_shape, is_value, primitive, register,
                   spec_of)
from . import refs
from .gemm import matvec, vecmat
from .symbolic import Dim, SymbolicValueError, as_dim, solved
from .rules import broadcast, norm_axes, norm_axis, numel, result_dtype, same, shapes_str

_SHAPE = "shape"


def _S(*args, **kw):
    return Sample(tuple(args), **kw)


# -- reshape ----------------------------------------------------------------------------------
def _reshape_infer(x, shape, **_):
    shape = tuple(shape)
    if sum(d == -1 for d in shape) > 1:
        raise ShapeError(f"reshape: can only infer one dimension (-1), got {shape}")
    n_in, known = numel(x.shape), numel([d for d in shape if d != -1])
    if isinstance(n_in, Dim) or isinstance(known, Dim):
        return _symbolic_reshape(x, shape, n_in, known)
    if -1 not in shape:
        if n_in is not None and n_in != known:
            raise ShapeError(f"reshape: cannot reshape {fmt_shape(x)} ({n_in} elements) "
                             f"into {fmt_shape(shape)} ({known} elements)")
        return same(x, shape=shape)
    if n_in is None:
        fill = None
    elif known == 0 or n_in % known:
        raise ShapeError(f"reshape: cannot reshape {fmt_shape(x)} ({n_in} elements) into "
                         f"{fmt_shape(shape)}: {n_in} is not a multiple of {known}")
    else:
        fill = n_in // known
    return same(x, shape=[fill if d == -1 else d for d in shape])


def _symbolic_reshape(x, shape, n_in, known):
    """reshape with symbolic dims (ops/symbolic.py): the sizes must agree for every value of
    the symbols, and a literal may not stand where the input had a bare symbol (the batch)."""
    head = f"reshape: cannot reshape {fmt_shape(x)} ({n_in} elements) into {fmt_shape(shape)}"
    if -1 not in shape:
        if n_in != known:
            fix = solved(n_in, known) if isinstance(n_in, Dim) else solved(known, n_in)
            raise ShapeError(f"{head} ({known} elements)" +
                             (f": the sizes agree only when {fix}" if fix else ""))
        out = shape
    else:
        if n_in is None or known is None:
            fill = None
        else:
            fill = n_in // known
            if fill * known != n_in:
                raise ShapeError(f"{head}: {n_in} is a multiple of {known} only for some values "
                                 f"of {_sym(n_in)}{_multiple(n_in, known)}{_per_row(x)}")
        out = tuple(fill if d == -1 else d for d in shape)
    for i, (before, after) in enumerate(zip(x.shape, out)):
        if isinstance(before, Dim) and before.is_symbol() and isinstance(after, int) \
                and after != 1 and shape[i] != -1 and any(
                    isinstance(d, Dim) and before.name in str(d) for d in out):
            raise ShapeError(f"reshape: {fmt_shape(x)} into {fmt_shape(shape)} puts {after} "
                             f"where the symbolic dim {before} was: the result "
                             f"{fmt_shape(out)} has the shape meant only when {before} = "
                             f"{after}; use x.shape[{i}] (or -1) for that dim")
    return same(x, shape=out)


def _sym(d):
    from .symbolic import symbols
    return ", ".join(symbols(d)) or str(d)


def _multiple(n, k):
    """` (N must be a multiple of 4)` for n = N*128, k = 512 (one symbol, no constant)."""
    if not isinstance(n, Dim) or len(n.terms) != 1 or n.const or not isinstance(k, int):
        return ""
    (name, coeff), = n.terms
    return f" ({name} must be a multiple of {k // math.gcd(coeff, k)})"


def _per_row(x):
    """`; each of the N rows has 128 elements` when the leading dim is a bare symbol."""
    lead, rest = (x.shape[0], numel(x.shape[1:])) if x.shape else (None, None)
    if isinstance(lead, Dim) and lead.is_symbol() and isinstance(rest, int):
        return f"; each of the {lead} rows of the input has {rest} elements"
    return ""


def _reshape_kernel(x, shape):
    return np.reshape(x, shape)


RESHAPE = register("reshape", _reshape_infer, _reshape_kernel,
                   lambda g, x, **kw: (reshape_like(g, x),), category=_SHAPE, view=True,
                   samples=(_S((3, 4), attrs={"shape": (4, 3)}),
                            _S((2, 3, 4), attrs={"shape": (-1, 4)}),
                            _S((), attrs={"shape": (1, 1)}),
                            _S((3, 4), attrs={"shape": (5, -1)},
                               match=r"cannot reshape \(3, 4\) \(12 elements\) into \(5, \?\)"
                                     r"|not a multiple"),
                            _S((3, 4), attrs={"shape": (5, 2)},
                               match=r"reshape: cannot reshape \(3, 4\) \(12 elements\)")),
                   ref=lambda np, x, shape: np.reshape(x, shape), alias_layout="reshape", complex=True, tf_name="Reshape")


def _like_shape_infer(name):
    def infer(x, like, **_):
        nx, nl = numel(x.shape), numel(like.shape)
        if nx is not None and nl is not None and nx != nl:
            raise ShapeError(f"{name}: cannot reshape {fmt_shape(x)} into {fmt_shape(like)}")
        return same(x, shape=like.shape)
    return infer


def _reshape_like_kernel(x, like):
    return np.reshape(x, np.shape(like))


RESHAPE_LIKE = register("reshape_like", _like_shape_infer("reshape_like"), _reshape_like_kernel,
                        lambda g, x, like, **kw: (reshape_like(g, x), None), category=_SHAPE,
                        view=True, shape_only_from=1, samples=(_S((3, 4), (2, 6)),),
                        ref=lambda np, x, like: np.reshape(x, like.shape), alias_layout="reshape", complex=True)


# -- transpose --------------------------------------------------------------------------------
def _transpose_infer(x, axes, **_):
    if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)) or len(axes) != x.ndim:
        raise ShapeError(f"transpose: axes {tuple(axes)} are not a permutation of the "
                         f"{x.ndim} dims of {fmt_shape(x)}")
    return same(x, shape=[x.shape[a] for a in axes])


def _transpose_kernel(x, axes, copy=False):
    """copy=True: a C-contiguous copy instead of a view (the optimiser asks for one when
    several matmuls read the same transposed matrix: BLAS runs 1.5-2x faster on it)."""
    t = x.transpose(axes) if type(x) is np.ndarray else np.transpose(x, axes)   # NOTE: the
    return np.ascontiguousarray(t) if copy else t      # method: 0.4 us less than np.transpose


def _transpose_vjp(g, x, axes, **kw):
    if axes == (1, 0):                 # NOTE: a matrix's transpose (a Linear's weight) is its own
        return (transpose(g, axes=axes),)                                         # inverse
    inverse = [0] * len(axes)          # the inverse permutation (np.argsort costs 3 us more)
    for i, a in enumerate(axes):
        inverse[a % len(axes)] = i
    return (transpose(g, axes=tuple(inverse)),)


TRANSPOSE = register("transpose", _transpose_infer, _transpose_kernel, _transpose_vjp,
                     category=_SHAPE, view=True, zero_from=(0,),
                     samples=(_S((3, 4), attrs={"axes": (1, 0)}),
                              _S((2, 3, 4), attrs={"axes": (2, 0, 1)}),
                              _S((2, 3), attrs={"axes": (0, 0)}, match="not a permutation")),
                     ref=lambda np, x, axes: np.transpose(x, axes), alias_layout="transpose", complex=True)


# -- broadcasting and its inverse -------------------------------------------------------------
def _broadcast_to_infer(x, shape, **_):
    shape = tuple(shape)
    out = broadcast("broadcast_to", x, Spec(shape, x.dtype))
    if len(shape) < x.ndim or out != tuple(d if d is not None else o for d, o in zip(shape, out)):
        raise ShapeError(f"broadcast_to: cannot broadcast {fmt_shape(x)} to {fmt_shape(shape)}")
    return same(x, shape=shape)


def _broadcast_to_kernel(x, shape):
    if type(x) is np.ndarray and x.size == _numel(shape) and x.flags.c_contiguous:
        return x.reshape(shape)     # NOTE: no element repeated: a writable view, as torch's
    return np.broadcast_to(x, shape)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


BROADCAST_TO = register("broadcast_to", _broadcast_to_infer, _broadcast_to_kernel,
                        lambda g, x, **kw: (sum_to_like(g, x),), category=_SHAPE, view=True,
                        samples=(_S((3, 1), attrs={"shape": (2, 3, 4)}),
                                 _S((), attrs={"shape": (2,)}),
                                 _S((3,), attrs={"shape": (4, 2)}, match="cannot broadcast")),
                        ref=lambda np, x, shape: np.broadcast_to(x, shape), alias_layout="strided", complex=True)


def _broadcast_like_infer(x, like, **_):
    return _broadcast_to_infer(x, like.shape)


def _broadcast_like_kernel(x, like):
    return _broadcast_to_kernel(x, np.shape(like))


BROADCAST_LIKE = register("broadcast_like", _broadcast_like_infer, _broadcast_like_kernel,
                          lambda g, x, like, **kw: (sum_to_like(g, x), None), category=_SHAPE,
                          view=True, shape_only_from=1, samples=(_S((3, 1), (2, 3, 4)), _S((), (3,))),
                          ref=lambda np, x, like: np.broadcast_to(x, like.shape), alias_layout="strided", complex=True)


def _sum_to_like_infer(x, like, **_):
    broadcast("sum_to_like", x, like)
    return same(x, shape=like.shape)


def _sum_to_like_kernel(x, like):
    """Sum x over the axes along which `like` was broadcast to x's shape."""
    shape = np.shape(like)
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and x.shape[lead + i] != 1)
    if not axes:
        return np.reshape(x, shape)
    r = _outer_axes_sum(x, axes)
    if r is not None:
        return r if r.shape == shape else r.reshape(shape)   # NOTE: an array of its own
    return np.reshape(np.add.reduce(x, axis=axes, keepdims=True), shape)


def _outer_axes_sum(x, axes):
    """x summed over its first k and its last j axes, the middle ones kept, as gemvs with a
    vector of ones, or None. NOTE: NumPy reduces these sizes row by row; a gemv is 3-5x
    faster on bias gradients (leading axes: 4.7 against 10.8 µs at (64, 8, 32) -> (32,)),
    a short last axis (2.5 against 12 µs at (64, 8, 32)) and a conv bias's gradient ((N, C,
    H, W) -> (C,): 3.4 against 17.7 µs at (64, 8, 6, 6)). The sum over leading axes is
    still sequential over rows. None unless x is C-contiguous float32/float64 with
    elements (an empty batch: NumPy's sum gives the zeros) and the axes have that form with
    a middle left; trailing rows longer than 1024 keep NumPy's pairwise sum, as
    `last_axis_sum`."""
    nd, n = x.ndim, len(axes)
    k = 0
    while k < n and axes[k] == k:
        k += 1
    j = n - k
    if (axes[k:] != tuple(range(nd - j, nd)) or nd - j <= k or not floating(x.dtype)
            or x.dtype.itemsize < 4 or not x.flags.c_contiguous or x.size == 0):
        return None
    a, b = math.prod(x.shape[:k]), math.prod(x.shape[nd - j:])
    if j and b > 1024:
        return None
    flat = x.reshape(a, -1)
    r = vecmat(_ones(a, x.dtype), flat) if k else flat[0]
    return matvec(r.reshape(-1, b), _ones(b, x.dtype)) if j else r


def last_axis_sum(x):
    """x summed over its last axis, keepdims, as one gemv with a vector of ones; None unless x
    is a C-contiguous float32/float64 array with at least 2 dims and elements.

    NOTE: NumPy reduces a short last axis row by row: 36 µs against 2.5 µs at (64, 4, 8, 8)
    (the attention softmax's gradient), 12 against 2.5 µs at (64, 8, 32) (layer norm's).
    Rows longer than 1024 keep NumPy's pairwise sum: gemv adds a row in a few running sums
    (float32 near-constant rows of 2**22: relative error 1.4e-6, NumPy's 9e-9)."""
    if (type(x) is not np.ndarray or x.ndim < 2 or x.dtype.kind != "f" or x.dtype.itemsize < 4
            or not x.flags.c_contiguous or x.size == 0 or x.shape[-1] > 1024):
        return None
    c = x.shape[-1]
    return matvec(x.reshape(-1, c), _ones(c, x.dtype)).reshape(x.shape[:-1] + (1,))


_ONES: dict = {}


def _ones(n, dtype):
    """A read-only vector of n ones (kept: the same few sizes recur every step)."""
    key = (n, dtype.str)
    v = _ONES.get(key)
    if v is None:
        if len(_ONES) > 64:
            _ONES.clear()
        v = np.ones(n, dtype)
        v.flags.writeable = False
        _ONES[key] = v
    return v


def _sum_to_like_ref(np, x, like):
    lead = x.ndim - len(np.shape(like))
    s = np.sum(x, axis=tuple(range(lead))) if lead else x
    axes = tuple(i for i, d in enumerate(np.shape(like)) if d == 1 and s.shape[i] != 1)
    return np.sum(s, axis=axes, keepdims=True) if axes else s


SUM_TO_LIKE = register("sum_to_like", _sum_to_like_infer, _sum_to_like_kernel,
                       lambda g, x, like, **kw: (broadcast_like(g, x), None), category=_SHAPE,
                       reads=(),
                       shape_only_from=1, may_alias=True,
                       samples=(_S((2, 3, 4), (3, 1)), _S((2, 3), ()), _S((4, 3), (4, 3)),
                                _S((2, 3, 4), (2, 3, 1)), _S((5, 2, 3), (2, 3))),
                       ref=_sum_to_like_ref, alias_layout="same_spec", complex=True)


# -- squeeze / expand_dims --------------------------------------------------------------------
def _expand_dims_infer(x, axis, **_):
    a = norm_axis("expand_dims", axis, x.ndim + 1, x)
    s = list(x.shape)
    s.insert(a, 1)
    return same(x, shape=s)


def _expand_dims_kernel(x, axis):
    if type(x) is np.ndarray and -x.ndim - 1 <= axis <= x.ndim:
        # NOTE: a reshape inserting a unit dim is always a view: 0.5 µs, np.expand_dims 1.9
        a = axis + x.ndim + 1 if axis < 0 else axis
        return x.reshape(x.shape[:a] + (1,) + x.shape[a:])
    return np.expand_dims(x, axis)


EXPAND_DIMS = register("expand_dims", _expand_dims_infer, _expand_dims_kernel,
                       lambda g, x, axis, **kw: (reshape_like(g, x),), category=_SHAPE, view=True,
                       samples=(_S((3, 4), attrs={"axis": 1}), _S((), attrs={"axis": 0}),
                                _S((3,), attrs={"axis": -1}),
                                _S((3,), attrs={"axis": 3}, match="out of range")),
                       ref=lambda np, x, axis: np.expand_dims(x, axis), alias_layout="reshape", complex=True, tf_name="ExpandDims")


def _squeeze_axes(x, axis):
    if axis is None:
        if None in x.shape:
            raise ShapeError(f"squeeze: cannot squeeze all size-1 dims of {fmt_shape(x)}: "
                             f"some dims are unknown; pass axis")
        return tuple(i for i, d in enumerate(x.shape) if d == 1)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(norm_axis("squeeze", a, x.ndim, x) for a in axes)
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ShapeError(f"squeeze: dimension {a} of {fmt_shape(x)} has size "
                             f"{x.shape[a]}, not 1")
    return axes


def _squeeze_infer(x, axis=None, **_):
    axes = _squeeze_axes(x, axis)
    return same(x, shape=[d for i, d in enumerate(x.shape) if i not in axes])


def _squeeze_kernel(x, axis=None):
    return np.squeeze(x, axis)


SQUEEZE = register("squeeze", _squeeze_infer, _squeeze_kernel,
                   lambda g, x, **kw: (reshape_like(g, x),), category=_SHAPE, view=True,
                   samples=(_S((3, 1, 4), attrs={"axis": 1}), _S((1, 3, 1), attrs={"axis": None}),
                            _S((3, 4), attrs={"axis": 0}, match="has size 3, not 1")),
                   ref=lambda np, x, axis: np.squeeze(x, axis), alias_layout="reshape", complex=True, tf_name="Squeeze")


# -- concat -----------------------------------------------------------------------------------
def _concat_infer(*xs, axis, **_):
    if not xs:
        raise ShapeError("concat: needs at least one tensor")
    nd = xs[0].ndim
    if any(x.ndim != nd for x in xs):
        raise ShapeError(f"concat: all inputs must have the same rank, got {shapes_str(*xs)}")
    a = norm_axis("concat", axis, nd, xs[0])
    out = []
    for i in range(nd):
        dims = [x.shape[i] for x in xs]
        if i == a:
            out.append(None if None in dims else sum(dims))
            continue
        known = {d for d in dims if d is not None}
        if len(known) > 1:
            raise ShapeError(f"concat: along axis {a}, inputs {shapes_str(*xs)} differ in "
                             f"dimension {i} ({' vs '.join(map(str, sorted(known)))})")
        out.append(known.pop() if known else None)
    return Spec(tuple(out), result_dtype(*xs))


def _concat_kernel(*xs, axis):
    return np.concatenate(xs, axis=axis)


def _concat_vjp(g, *xs, axis, out=None, **kw):
    return tuple(concat_part(g, *xs, axis=axis, index=i) if is_value(x) else None
                 for i, x in enumerate(xs))


CONCAT = register("concat", _concat_infer, _concat_kernel, _concat_vjp, category=_SHAPE, reads=(),
                  promote="common",
                  samples=(_S((2, 3), (4, 3), attrs={"axis": 0}),
                           _S((2, 3), (2, 1), (2, 2), attrs={"axis": -1}),
                           _S((2, 3), (2, 4), attrs={"axis": 0},
                              match=r"concat: along axis 0, inputs \(2, 3\), \(2, 4\) differ "
                                    r"in dimension 1 \(3 vs 4\)")),
                  ref=lambda np, *xs, axis: np.concatenate(xs, axis=axis), complex=True, tf_name="concat")


def _concat_part_infer(g, *xs, axis, index, **_):
    a = norm_axis("concat_part", axis, g.ndim, g)
    return same(g, shape=[xs[index].shape[a] if i == a else d for i, d in enumerate(g.shape)])


def _concat_part_kernel(g, *xs, axis, index):
    a = axis % g.ndim
    start = sum(np.shape(x)[a] for x in xs[:index])
    sl = [slice(None)] * g.ndim
    sl[a] = slice(start, start + np.shape(xs[index])[a])
    return g[tuple(sl)]


def _concat_part_vjp(gg, g, *xs, axis, index, **kw):
    parts = [gg if i == index else zeros_like(x, dtype=str(np.dtype(gg.dtype)))
             for i, x in enumerate(xs)]
    return (concat(*parts, axis=axis),) + (None,) * len(xs)


CONCAT_PART = register("concat_part", _concat_part_infer, _concat_part_kernel, _concat_part_vjp,
                       category=_SHAPE, view=True, shape_only_from=1,
                       samples=(_S((6, 3), (2, 3), (4, 3), attrs={"axis": 0, "index": 1}),),
                       ref=lambda np, g, *xs, axis, index: np.split(
                           g, [sum(x.shape[axis] for x in xs[:i]) for i in range(1, len(xs))],
                           axis=axis)[index], alias_layout="strided", complex=True)


# -- basic slicing ----------------------------------------------------------------------------
def _slice_dim(d, s: slice):
    if isinstance(d, Dim):
        return _symbolic_slice(d, s)
    if d is None:
        if (s.start is None or s.start >= 0) and s.stop is not None and s.stop >= 0 \
                and (s.step or 1) > 0:
            return max(0, -(-(s.stop - (s.start or 0)) // (s.step or 1)))
        return None
    return len(range(*s.indices(d)))


def _symbolic_slice(d, s):
    """The length of `s` over a symbolic dim: `[a:]`, `[:b]`, `[-k:]`, `[:-k]`, `[a:b]` with
    unit step (a concrete stop is taken to be within the dim: torch.export guards the same)."""
    if (s.step or 1) != 1:
        raise SymbolicValueError(f"a slice with step {s.step} of the symbolic dim {d}")
    lo = 0 if s.start is None else s.start if s.start >= 0 else d + s.start
    hi = d if s.stop is None else s.stop if s.stop >= 0 else d + s.stop
    n = hi - lo
    return max(n, 0) if isinstance(n, int) else n


def expand_index(index, ndim) -> tuple:
    """Normalise a basic index (int, slice, None, Ellipsis) to a tuple without Ellipsis."""
    index = index if isinstance(index, tuple) else (index,)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if sum(i is Ellipsis for i in index) > 1:
        raise ShapeError("slice: an index can only have a single ellipsis ('...')")
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(i)
    if Ellipsis not in index:
        out.extend([slice(None)] * (ndim - n_real))
    return tuple(out)


def _slice_infer(x, index, **_):
    idx = expand_index(index, x.ndim)
    n_real = sum(1 for i in idx if i is not None)
    if n_real > x.ndim:
        raise ShapeError(f"slice: too many indices for {fmt_shape(x)}: {n_real} indices for "
                         f"{x.ndim} dims")
    out, d = [], 0
    for i in idx:
        if i is None:
            out.append(1)
            continue
        size = x.shape[d]
        if isinstance(i, slice):
            out.append(_slice_dim(size, i))
        elif size is not None and not -size <= i < size:
            raise ShapeError(f"slice: index {i} is out of range for dimension {d} of "
                             f"{fmt_shape(x)} (size {size})")
        d += 1
    return same(x, shape=out)


def _slice_kernel(x, index):
    out = x[index]
    if isinstance(out, np.generic) and isinstance(x, np.ndarray):
        # NOTE: an int per dim gives a NumPy scalar, a copy; with `...` a 0-d view, as torch's
        return x[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
    return out


SLICE = register("slice", _slice_infer, _slice_kernel,
                 lambda g, x, index, **kw: (slice_grad(g, x, index=index),), category=_SHAPE,
                 view=True,
                 samples=(_S((4, 5), attrs={"index": (slice(1, 3), slice(None, None, 2))}),
                          _S((4, 5), attrs={"index": (1,)}),
                          _S((2, 3, 4), attrs={"index": (Ellipsis, -1)}),
                          _S((3, 4), attrs={"index": (None, slice(None), 2)}),
                          _S((3,), attrs={"index": (5,)}, match="index 5 is out of range")),
                 ref=lambda np, x, index: x[index], alias_layout="strided",
                 grad_at=lambda index: index, complex=True)


def _slice_grad_kernel(g, x, index):
    if type(g) is np.ndarray and type(x) is np.ndarray:   # NOTE: eager's case, 0.3 us less
        z = np.zeros(x.shape, g.dtype)
    else:
        z = np.zeros(np.shape(x), dtype=np.asarray(g).dtype)
    z[index] = g
    return z


SLICE_GRAD = register("slice_grad", lambda g, x, index, **_: same(x, dtype=g.dtype),
                      _slice_grad_kernel,
                      lambda gg, g, x, index, **kw: (slice_(gg, index=index), None),
                      category=_SHAPE, shape_only_from=1, zero_from=(0,),
                      samples=(_S((2, 5), (4, 5), attrs={"index": (slice(1, 3),)}),),
                      ref=lambda np, g, x, index: refs.scatter(np, g, refs.positions(x.shape)[index],
                                                               x.shape), complex=True)


# -- take (integer-array indexing, embedding lookup) ------------------------------------------
def _take_infer(x, idx, axis=0, **_):
    if idx.weak is None and idx.dtype.kind not in "iu":
        raise ShapeError(f"take: indices must be integers, got {idx.dtype} for {fmt_shape(idx)}")
    a = norm_axis("take", axis, x.ndim, x)
    return same(x, shape=x.shape[:a] + idx.shape + x.shape[a + 1:])


def _take_kernel(x, idx, axis=0, negative=True):
    n = np.shape(x)[axis]
    i = np.asarray(idx)
    if i.dtype.kind not in "iu":     # NOTE: a bool index would read rows 0 and 1
        raise TypeError(f"take: indices must be integers, got {i.dtype}")
    lo = -n if negative else 0
    if i.size and (i.max() >= n or i.min() < lo):
        bad = i.max() if i.max() >= n else i.min()
        raise IndexError(f"index {bad} is out of range for dimension {axis} (size {n})"
                         + ("" if negative else "; negative indices are not allowed"))
    return np.take(x, i, axis=axis)


TAKE = register("take", _take_infer, _take_kernel,
                lambda g, x, idx, axis=0, **kw: (take_grad(g, idx, x, axis=axis), None),
                category="other", reads=(1,),
                samples=(Sample(((5, 3), np.array([0, 4, 4, 1])), attrs={"axis": 0}),
                         Sample(((5, 3), np.array([[1, 2], [0, 0]])), attrs={"axis": 0}),
                         Sample(((2, 5), np.array([3, 1])), attrs={"axis": 1}),
                         Sample(((5, 3), (2,)), attrs={"axis": 0},
                                match="indices must be integers")),
                ref=lambda np, x, idx, axis=0: np.take(x, idx, axis=axis), complex=True)


def _take_grad_kernel(g, idx, x, axis=0):
    z = np.zeros(np.shape(x), dtype=np.asarray(g).dtype)
    zm = np.moveaxis(z, axis, 0)
    gm = np.moveaxis(np.asarray(g), axis, 0) if np.ndim(idx) == 1 else \
        np.moveaxis(np.asarray(g), list(range(axis, axis + np.ndim(idx))),
                    list(range(np.ndim(idx))))
    if axis == 0 and z.dtype.char in "fd" and zm.size >= _NATIVE_ROWS and \
            np.asarray(idx).dtype.kind in "iu":
        from . import native
        native.add_rows_at(zm, idx, gm)
    else:
        np.add.at(zm, np.asarray(idx), gm)
    return z


_NATIVE_ROWS = 4096   # NOTE: below this NumPy's add.at is quick and numba need not be imported


TAKE_GRAD = register("take_grad", lambda g, idx, x, axis=0, **_: same(x, dtype=g.dtype),
                     _take_grad_kernel,
                     lambda gg, g, idx, x, axis=0, **kw: (take(gg, idx, axis=axis), None, None),
                     category="other", reads=(1,),
                     samples=(Sample(((4, 3), np.array([0, 4, 4, 1]), (5, 3)),
                                     attrs={"axis": 0}),),
                     ref=lambda np_, g, idx, x, axis=0: refs.scatter(
                         np_, g, np.take(refs.positions(x.shape), idx, axis=axis), x.shape), complex=True)


# -- pad --------------------------------------------------------------------------------------
def _pad_infer(x, pad_width, value=0.0, **_):
    if len(pad_width) != x.ndim:
        raise ShapeError(f"pad: pad_width has {len(pad_width)} pairs for {fmt_shape(x)}, "
                         f"needs {x.ndim}")
    for axis, (d, (lo, hi)) in enumerate(zip(x.shape, pad_width)):
        if d is not None and d + min(lo, 0) + min(hi, 0) < 0:
            raise ShapeError(f"pad: negative padding ({lo}, {hi}) crops more than dim {axis} "
                             f"of {fmt_shape(x)} holds")
    return same(x, shape=[None if d is None else d + lo + hi
                          for d, (lo, hi) in zip(x.shape, pad_width)])


def _pad_kernel(x, pad_width, value=0.0):
    """np.pad, where a negative width crops (as torch's constant_pad_nd): crop, then pad."""
    if len(pad_width) != np.ndim(x):
        raise ValueError("pad_width does not match the input's rank")  # NOTE: np.pad broadcasts
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                 for n, (lo, hi) in zip(np.shape(x), pad_width))
    if any(c.stop < c.start for c in crop):
        raise ValueError("negative padding crops more than the dim holds")
    return np.pad(x[crop], [(max(lo, 0), max(hi, 0)) for lo, hi in pad_width],
                  constant_values=value)


def _pad_vjp(g, x, pad_width, **kw):
    if any(lo < 0 or hi < 0 for lo, hi in pad_width):
        return (pad(g, tuple((-lo, -hi) for lo, hi in pad_width)),)
    index = tuple(slice(lo, -hi if hi else None) for lo, hi in pad_width)
    return (slice_(g, index=index),)


PAD = register("pad", _pad_infer, _pad_kernel, _pad_vjp, category=_SHAPE, reads=(),
               samples=(_S((2, 3), attrs={"pad_width": ((1, 0), (2, 1))}),
                        _S((2, 3), attrs={"pad_width": ((0, 0), (1, 1)), "value": -1.0}),
                        _S((3, 4), attrs={"pad_width": ((-1, 2), (1, -2))}),
                        _S((2, 3), attrs={"pad_width": ((1, 1),)}, match="needs 2"),
                        _S((2, 3), attrs={"pad_width": ((0, 0), (-2, -2))}, match="crops")),
               ref=lambda np, x, pad_width, value=0.0: np.pad(
                   x[tuple(slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
                           for d, (lo, hi) in enumerate(pad_width))],
                   [(max(lo, 0), max(hi, 0)) for lo, hi in pad_width], constant_values=value), complex=True, tf_name="Pad")


# -- constants shaped like a tensor -----------------------------------------------------------
def _fill_like_infer(x, dtype=None, **_):
    return same(x, dtype=dtype or x.dtype)


def _zeros_like_kernel(x, dtype=None):
    return np.zeros(np.shape(x), dtype=dtype or np.asarray(x).dtype)


def _ones_like_kernel(x, dtype=None):
    return np.ones(np.shape(x), dtype=dtype or np.asarray(x).dtype)


ZEROS_LIKE = register("zeros_like", _fill_like_infer, _zeros_like_kernel, None, category="other",
                      shape_only_from=0,
                      samples=(_S((2, 3)),), ref=lambda np, x, dtype=None: np.zeros_like(x), tf="ZerosLike", complex=True)
ONES_LIKE = register("ones_like", _fill_like_infer, _ones_like_kernel, None, category="other",
                     shape_only_from=0,
                     samples=(_S((2, 3)),), ref=lambda np, x, dtype=None: np.ones_like(x), tf="OnesLike", complex=True)

reshape_like, transpose, broadcast_to, broadcast_like, sum_to_like, expand_dims, squeeze = (
    primitive(o) for o in (RESHAPE_LIKE, TRANSPOSE, BROADCAST_TO, BROADCAST_LIKE, SUM_TO_LIKE,
                         EXPAND_DIMS, SQUEEZE))
concat_part, slice_grad, take_grad, zeros_like, ones_like = (
    primitive(o) for o in (CONCAT_PART, SLICE_GRAD, TAKE_GRAD, ZEROS_LIKE, ONES_LIKE))
slice_ = primitive(SLICE)


def reverse(x, axis):
    """x with its elements in reverse order along `axis` (an int or a tuple of ints): one
    `slice` with step -1. `ops.flip` is this as a composite; cumsum's gradient uses it."""
    nd = spec_of(x).ndim
    axes = norm_axes("flip", axis, nd)
    return slice_(x, index=tuple(slice(None, None, -1) if d in axes else slice(None)
                                 for d in range(nd)))


def reshape(x, shape):
    return bind(RESHAPE, x, shape=tuple(as_dim(d) for d in shape))


def concat(*xs, axis=0):
    return bind(CONCAT, *xs, axis=int(axis))


def take(x, idx, axis=0, negative=True):
    """x's entries at integer indices along `axis`; negative=False refuses indices < 0."""
    if negative:
        return bind(TAKE, x, idx, axis=int(axis))
    return bind(TAKE, x, idx, axis=int(axis), negative=False)


def pad(x, pad_width, value=0.0):
    return bind(PAD, x, pad_width=tuple((int(a), int(b)) for a, b in pad_width),
                value=float(value))


RESHAPE.fn, CONCAT.fn, TAKE.fn, PAD.fn = reshape, concat, take, pad


def matrix_transpose(x):
    """Swap the last two axes (torch's x.mT, tf.linalg.matrix_transpose)."""
    nd = len(x.shape)
    return transpose(x, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))
