"""torch's layout and indexing functions beyond eager/functions.py: select, the *stack and
*split families, atleast_*d, movedim, swapaxes, take_along_dim, rot90, sum_to_size, and the
out-of-place index writes (index_add, index_fill, index_copy, masked_scatter, put) that the
in-place methods of eager/inplace.py apply; the Tensor methods of the same names.

All are compositions of the op library's layout and gather/scatter ops: gradients reach both
the tensor written into and the values written.

>>> from dualgrad import eager
>>> x = eager.zeros(3, 2)
>>> x.index_add(0, eager.tensor([0, 2, 0]), eager.ones(3, 2)).tolist()
[[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.rules import finfo, floating, norm_axis

from .core import Tensor
from .refusals import index_tensors, same_dtype_source
from .functions import (_arr, _no_grad_tensor, _scatter_index, _scatter_prep, _t, diag,
                        floor_divide, meshgrid, scatter_add)


def _seq(tensors):
    return [_t(t) for t in tensors]


def _dim_index(name, x, dim, index):
    """(dim, index) normalised, with torch's IndexError for an index outside the dim."""
    d = norm_axis(name, dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"{name}(): index {index} out of range for tensor of size "
                         f"{list(x.shape)} at dimension {dim}")
    return d, int(index) % n


def select(input, dim, index):  # noqa: A002 - torch's argument names
    x = _t(input)
    d, i = _dim_index("select", x, dim, index)
    return ops.getitem(x, (slice(None),) * d + (i,))


def _atleast(nd, tensors):
    def grow(t):
        t = _t(t)
        if t.ndim >= nd:
            return t
        if t.ndim == 2:                       # only for nd 3: (m, n) -> (m, n, 1)
            return t.reshape(tuple(t.shape) + (1,))
        return t.reshape((1,) * nd if t.ndim == 0 else (1, -1, 1)[:nd])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(grow(t) for t in tensors[0])
    out = tuple(grow(t) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


def cat(tensors, dim=0):
    """torch.cat. A 1-d tensor of size 0, torch's legacy empty tensor, joins tensors of any
    rank and adds nothing (it still takes part in the dtype promotion, and gets a gradient)."""
    ts = _seq(tensors)
    like = next((t for t in ts if not _legacy_empty(t)), None)
    if like is not None and len(ts) > 1:
        axis = norm_axis("cat", dim, like.ndim, like, frontend=True)
        empty = tuple(0 if d == axis else n for d, n in enumerate(like.shape))
        ts = [ops.reshape(t, empty) if _legacy_empty(t) else t for t in ts]
    return ops.concat(*ts, axis=dim)


def _legacy_empty(t):
    return t.shape == (0,)


concat = concatenate = cat


def hstack(tensors):
    ts = [atleast_1d(t) for t in tensors]
    return ops.concat(*ts, axis=0 if all(t.ndim == 1 for t in ts) else 1)


def vstack(tensors):
    return ops.concat(*[atleast_2d(t) for t in tensors], axis=0)


row_stack = vstack


def dstack(tensors):
    return ops.concat(*[atleast_3d(t) for t in tensors], axis=2)


def column_stack(tensors):
    ts = [_t(t) for t in tensors]
    return ops.concat(*[t.reshape(-1, 1) if t.ndim <= 1 else t for t in ts], axis=1)


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """Sections as equal as possible (the first size % n one longer), or splits at indices."""
    x = _t(input)
    d = norm_axis("tensor_split", dim, x.ndim)
    n = x.shape[d]
    spec = _arr(indices_or_sections)
    if spec.ndim == 0:
        k = int(spec)
        if k <= 0:
            raise RuntimeError(f"tensor_split(): number of sections must be larger than 0, "
                               f"got {k}")
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
        cuts = np.cumsum([0] + sizes)
    else:
        cuts = np.concatenate([[0], np.clip(spec, 0, n), [n]])
    lead = (slice(None),) * d
    return tuple(ops.slice_(x, index=lead + (slice(int(a), int(max(a, b))),))
                 for a, b in zip(cuts[:-1], cuts[1:]))


def _split_along(name, x, spec, dim, need):
    x = _t(x)
    if x.ndim < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, "
                           f"but got a tensor with {x.ndim} dimensions!")
    if np.ndim(spec) == 0 and x.shape[dim] % int(spec):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {x.shape[dim]} is not divisible by the "
                           f"split_size {int(spec)}!")
    return tensor_split(x, spec, dim)


def hsplit(input, indices_or_sections):  # noqa: A002
    x = _t(input)
    return _split_along("hsplit", x, indices_or_sections, 1 if x.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def movedim(input, source, destination):  # noqa: A002
    x = _t(input)
    src = [source] if np.ndim(source) == 0 else list(source)
    dst = [destination] if np.ndim(destination) == 0 else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} "
                           f"dims)")
    src = [norm_axis("movedim", s, x.ndim) for s in src]
    dst = [norm_axis("movedim", s, x.ndim) for s in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
    rest = iter(k for k in range(x.ndim) if k not in src)
    where = dict(zip(dst, src))
    return x.permute(*[where[k] if k in where else next(rest) for k in range(x.ndim)])


moveaxis = movedim


def swapaxes(input, axis0, axis1):  # noqa: A002
    return _t(input).transpose(axis0, axis1)


def swapdims(input, dim0, dim1):  # noqa: A002
    return _t(input).transpose(dim0, dim1)


def t(input):  # noqa: A002
    return _t(input).t()


def masked_fill(input, mask, value):  # noqa: A002
    return _t(input).masked_fill(mask, value)


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """input's values at indices along dim (input and indices broadcast on the other dims);
    without dim, indices into the flattened input."""
    x, idx = _t(input), _arr(indices)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"take_along_dim(): dtype of indices should be Long but got "
                           f"{idx.dtype}")
    if dim is None:
        x, idx, d = x.reshape(-1), idx.reshape(-1), 0
    else:
        d = norm_axis("take_along_dim", dim, x.ndim)
        if idx.ndim != x.ndim:
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the "
                               f"same number of dimensions, but got {x.ndim} dimensions for "
                               f"input, and {idx.ndim} dimensions for indices")
        both = np.broadcast_shapes(*[tuple(s[:d]) + (1,) + tuple(s[d + 1:])
                                     for s in (x.shape, idx.shape)])
        x = ops.broadcast_to(x, shape=both[:d] + (x.shape[d],) + both[d + 1:])
        idx = np.broadcast_to(idx, both[:d] + (idx.shape[d],) + both[d + 1:])
    # NOTE: as torch: negative indices count from the end along dim, not into the flat input
    _in_range("take_along_dim", idx, x.shape[d], d, negative=dim is not None)
    return ops.gather(x, idx % max(x.shape[d], 1), axis=d)


def _in_range(name, idx, n, dim, negative):
    lo = -n if negative else 0
    if idx.size and (idx.min() < lo or idx.max() >= n):
        bad = idx.min() if idx.min() < lo else idx.max()
        raise IndexError(f"{name}(): index {int(bad)} is out of bounds for dimension {dim} "
                         f"with size {n}")


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    x = _t(input)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (norm_axis("rot90", d, x.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return x.flip(d1).transpose(d0, d1)
    if k == 2:
        return x.flip((d0, d1))
    if k == 3:
        return x.flip(d0).transpose(d0, d1)
    return x.clone()


def sum_to_size(input, *size):  # noqa: A002
    """input summed over its broadcast dims so its shape is `size` (torch.Tensor.sum_to_size)."""
    x = _t(input)
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    lead = x.ndim - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, x.shape[lead:])):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(x.shape)}")
    axes = tuple(range(lead)) + tuple(lead + k for k, (s, n) in
                                      enumerate(zip(size, x.shape[lead:])) if s == 1 and n != 1)
    if not size:
        return x.sum()      # NOTE: size (): the sum of all, of a 0-d input too (torch's sum_to)
    if axes:
        return x.sum(dim=axes, keepdim=True).reshape(size)
    return x                # NOTE: nothing to sum: x itself, as torch's


# -- out-of-place index writes -------------------------------------------------------------
def _index_vector(name, index, x, d, negative):
    idx = _arr(index)
    if idx.dtype.kind not in "iu" or idx.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector of integers, got "
                         f"{idx.dtype} of shape {idx.shape}")
    idx = idx.reshape(-1).astype(np.int64)
    n = x.shape[d] if x.ndim else 1
    _in_range(name, idx, n, d, negative)
    return idx % n if n else idx


def _source_like(name, x, d, idx, source):
    src = _t(source)
    want = tuple(x.shape[:d]) + (len(idx),) + tuple(x.shape[d + 1:]) if x.ndim else (len(idx),)
    if tuple(src.shape) != want and not (x.ndim == 0 and src.numel() == len(idx)):
        raise RuntimeError(f"{name}(): source of shape {tuple(src.shape)} does not match "
                           f"self's shape {tuple(x.shape)} with index of length {len(idx)} "
                           f"along dim {d} (expected {want})")
    return src.reshape(want)


def _dim_mask(x, d, idx):
    mask = np.zeros(x.shape[d] if x.ndim else 1, bool)
    mask[idx] = True
    return mask.reshape((-1,) + (1,) * (x.ndim - d - 1)) if x.ndim else mask.reshape(())


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """input with alpha * source's slices added at index along dim (repeats accumulate)."""
    x = _t(input)
    d = norm_axis("index_add", dim, max(x.ndim, 1))
    same_dtype_source("index_add", x, source)
    idx = _index_vector("index_add", index, x, d, negative=False)
    src = _source_like("index_add", x, d, idx, source)
    src = src if alpha == 1 else src * alpha
    base = x.reshape(1) if x.ndim == 0 else x
    return x + ops.take_grad(src, idx, base, axis=d).reshape(tuple(x.shape))


def index_fill(input, dim, index, value):  # noqa: A002
    x = _t(input)
    d = norm_axis("index_fill", dim, max(x.ndim, 1))
    idx = _index_vector("index_fill", index, x, d, negative=True)
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    v = value if isinstance(value, Tensor) and value.requires_grad else \
        np.asarray(_arr(value), x.dtype)
    return ops.where(_dim_mask(x, d, idx), v, x)


def _unique(name, idx):
    if len(np.unique(idx)) != len(idx):
        raise NotImplementedError(f"{name}: duplicate indices (torch leaves which value wins "
                                  f"unspecified) are not supported by dualgrad")


def index_copy(input, dim, index, source):  # noqa: A002
    x = _t(input)
    d = norm_axis("index_copy", dim, max(x.ndim, 1))
    same_dtype_source("index_copy", x, source)
    idx = _index_vector("index_copy", index, x, d, negative=False)
    _unique("index_copy", idx)
    src = _source_like("index_copy", x, d, idx, source)
    base = x.reshape(1) if x.ndim == 0 else x
    placed = ops.take_grad(ops.cast(src, x.dtype), idx, base, axis=d).reshape(tuple(x.shape))
    return ops.where(_dim_mask(x, d, idx), placed, x)


def masked_scatter(input, mask, source):  # noqa: A002
    """input with source's first elements (in order) written where mask is True."""
    x, src, m = _t(input), _t(source), _arr(mask)
    same_dtype_source("masked_scatter", x, source)
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_: expected BoolTensor for mask, got {m.dtype}")
    shape = np.broadcast_shapes(tuple(x.shape), m.shape)   # NOTE: torch broadcasts both
    x, m = (x if tuple(x.shape) == shape else ops.broadcast_to(x, shape=shape)), \
        np.broadcast_to(m, shape)
    pos = np.flatnonzero(m)
    if len(pos) > src.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least {len(pos)} "
                           f"elements (the mask's count), got {src.numel()}")
    vals = ops.take(ops.cast(src.reshape(-1), x.dtype), np.arange(len(pos)), axis=0)
    placed = ops.take_grad(vals, pos, x.reshape(-1), axis=0)
    return ops.where(m, placed.reshape(tuple(x.shape)), x)


def put(input, index, source, accumulate=False):  # noqa: A002
    """input (seen flat) with source written (or added, accumulate=True) at index."""
    same_dtype_source("put", _t(input), source)
    return _put(input, index, source, accumulate)


def _put(input, index, source, accumulate=False):  # noqa: A002
    x, src = _t(input), _t(source)
    idx = _arr(index).reshape(-1).astype(np.int64)
    if idx.size != src.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {src.numel()}, index.numel() "
                           f"= {idx.size}")
    _in_range("put", idx, x.numel(), 0, negative=True)
    idx = idx % max(x.numel(), 1)
    src = ops.cast(src.reshape(-1), x.dtype)
    if accumulate:   # NOTE: added into self one by one in index order, as torch's (half rounds each)
        return ops.gather_grad(src, idx, x.reshape(-1), axis=0, into=True).reshape(tuple(x.shape))
    placed = ops.take_grad(src, idx, x.reshape(-1), axis=0).reshape(tuple(x.shape))
    _unique("put", idx)
    mask = np.zeros(x.numel(), bool)
    mask[idx] = True
    return ops.where(mask.reshape(tuple(x.shape)), placed, x)



def unflatten(input, dim, sizes):  # noqa: A002
    x = _t(input)
    d = norm_axis("unflatten", dim, x.ndim)
    known = int(np.prod([s for s in sizes if s != -1]))
    if (-1 not in sizes and known != x.shape[d]) or (known and x.shape[d] % known):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({x.shape[d]}) in the input tensor")
    return x.reshape(tuple(x.shape[:d]) + tuple(sizes) + tuple(x.shape[d + 1:]))


def ravel(input):  # noqa: A002
    """A contiguous flattened tensor, as torch's: a copy unless input is row-major (NumPy's
    reshape would give a strided view of a strided input)."""
    return _t(input).contiguous().reshape(-1)


def fliplr(input):  # noqa: A002
    x = _t(input)
    if x.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return x.flip(1)


def flipud(input):  # noqa: A002
    x = _t(input)
    if x.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return x.flip(0)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """Each last-dim vector on the diagonal (offset) of a matrix over dims dim1, dim2."""
    x = _t(input)
    nd = x.ndim + 1
    d1, d2 = norm_axis("diag_embed", dim1, nd), norm_axis("diag_embed", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(offset)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    onto = np.zeros((x.shape[-1], n * n), x.dtype if floating(x.dtype) else np.float32)
    onto[i, r * n + c] = 1
    mats = ops.reshape(ops.matmul(x, onto.astype(x.dtype)), tuple(x.shape[:-1]) + (n, n))
    rest = [k for k in range(nd) if k not in (d1, d2)]
    order = [0] * nd
    for k, src in zip(rest + [d1, d2], range(nd)):
        order[k] = src
    return mats.permute(*order)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    x = _t(input)
    d = norm_axis("split_with_sizes", dim, x.ndim)
    if sum(split_sizes) != x.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{x.shape[d]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(split_sizes)}")
    return x.split(list(split_sizes), d)


def msort(input):  # noqa: A002
    return _t(input).sort(dim=0).values


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """input with values written (or added, accumulate=True) at input[indices]."""
    x, v = _t(input), _t(values)
    same_dtype_source("index_put", x, values)
    indices = index_tensors(tuple(indices), values)
    pos = np.arange(x.numel()).reshape(tuple(x.shape))[tuple(_arr(i) for i in indices)]
    if tuple(v.shape) != pos.shape:
        v = ops.broadcast_to(v, shape=pos.shape)
    return _put(x, pos.reshape(-1), v, accumulate)



_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """input with src's values reduced into it at index along dim: "sum", "prod", "mean",
    "amax", "amin" (torch's gradients: amax/amin share among the elements equal to the
    result, prod's factors get the product of the others)."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)   # NOTE: torch's aliases
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    x = _t(input)
    if x.ndim == 0:   # NOTE: torch reads 0-d tensors as their one element along dim 0 or -1
        norm_axis("scatter_reduce", dim, 1)
        flat = [v.reshape(1) if isinstance(v, Tensor) else np.reshape(v, 1) for v in (index, src)]
        return scatter_reduce(x.reshape(1), 0, *flat, reduce,
                              include_self=include_self).reshape(())
    idx, d, src = _scatter_prep("scatter_reduce", x, dim, index, src)
    src = ops.cast(_t(src), x.dtype)
    hits = _arr(ops.gather_grad(np.ones(idx.shape, np.int64), idx, np.zeros(x.shape, np.int64),
                                axis=d))
    keep = np.ones(x.shape, bool) if include_self else hits == 0   # NOTE: self's own value
    if reduce in ("sum", "mean"):
        # NOTE: added into self one by one in index order, as torch's (float16 rounds each)
        out = ops.gather_grad(src, idx, ops.where(keep, x, 0), axis=d, into=True)
        if reduce == "sum":
            return ops.cast(out, x.dtype) if x.dtype == np.bool_ else out   # NOTE: bool: or
        count = (hits + keep).astype(x.dtype)
        return out / np.maximum(count, 1) if floating(x.dtype) else \
            floor_divide(out, np.maximum(count, 1))
    if reduce == "prod":
        return _scatter_prod(x, d, idx, src, keep)
    return _scatter_extreme(x, d, idx, src, keep, hits, reduce)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """input with src (or value) written at index along dim. A value (or a 0-d src) is the
    same at every index, so repeated indices are fine; a src tensor with repeated indices,
    where torch's pick is unspecified, raises."""
    fill = src if value is None else value
    if reduce is not None:
        if reduce == "add":
            return scatter_add(input, dim, index, fill)
        if reduce == "multiply":   # NOTE: a value multiplies once per index that hits
            if not isinstance(fill, Tensor) and np.ndim(fill) == 0:
                fill = np.full(np.shape(_arr(index)), fill, dtype=_t(input).dtype)
            return scatter_reduce(input, dim, index, fill, "prod")
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
    x = _t(input)
    one_value = not isinstance(fill, Tensor) and np.ndim(fill) == 0
    # NOTE: a value's index stays a tensor (compile() traces it); a src tensor's duplicate
    # check reads the index's values
    idx, d, src = (_scatter_index if one_value else _scatter_prep)("scatter", x, dim, index,
                                                                     fill)
    hits = ops.gather_grad(np.ones(tuple(idx.shape), np.float32), idx,
                           np.zeros(tuple(x.shape), np.float32), axis=d)
    if one_value:
        return ops.where(ops.gt(hits, 0), np.asarray(fill).astype(x.dtype), x)
    if np.max(_arr(hits), initial=0) > 1:
        raise NotImplementedError("scatter: duplicate indices along dim (torch leaves which "
                                  "value wins unspecified); use scatter_add or unique indices")
    return ops.where(ops.gt(hits, 0), ops.gather_grad(src, idx, x, axis=d), x)


def _where_at(idx, d):
    """The NumPy index of idx along d and idx's own positions elsewhere (idx may be smaller
    than the tensor in the other dims, as torch's scatter index may)."""
    grid = np.indices(idx.shape, sparse=True)
    return tuple(idx if k == d else grid[k] for k in range(idx.ndim))


def _at_index(arr, idx, d):
    """arr at idx along d (gather's value)."""
    return arr[_where_at(idx, d)]


def _scatter_prod(x, d, idx, src, keep):
    """prod: the value with NumPy; each factor's gradient the product of the others in its
    group, as torch's (result / factor where the group has no zero; with one zero, that
    factor's the product of the rest and the others' 0; with more, 0)."""
    xa, sa = _arr(x), _arr(src)
    at = _where_at(idx, d)
    mine = np.where(keep, xa, 1).astype(x.dtype)
    res = mine.copy()
    np.multiply.at(res, at, sa)
    if x.dtype == np.bool_ or not floating(x.dtype):
        return _t(res)
    nonzero = np.where(mine == 0, 1, mine).astype(x.dtype)         # product of the non-zeros
    np.multiply.at(nonzero, at, np.where(sa == 0, 1, sa).astype(x.dtype))
    zeros = (keep & (xa == 0)).astype(np.int64)
    np.add.at(zeros, at, (sa == 0).astype(np.int64))

    big = float(finfo(x.dtype).max)

    def coef(v, n_zero, prod_nz, total):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            c = np.where(n_zero == 0, total / np.where(v == 0, 1, v),
                         np.where((n_zero == 1) & (v == 0), prod_nz, 0))
        # NOTE: finite, or the 0 * c below that carries the gradient is NaN in the value: a
        # product that overflows (float16's 65504) has its slope at the dtype's largest
        return np.where(np.isnan(c), 0, np.clip(c, -big, big)).astype(x.dtype)
    c_self = np.where(keep, coef(xa, zeros, nonzero, res), 0).astype(x.dtype)
    c_src = coef(sa, _at_index(zeros, idx, d), _at_index(nonzero, idx, d), _at_index(res, idx, d))
    fx = ops.where(np.isfinite(xa), x, 0)      # NOTE: x - x is NaN at inf: no slope there
    fs = ops.where(np.isfinite(sa), src, 0)
    moved = (fx - ops.stop_gradient(fx)) * c_self + ops.gather_grad(
        (fs - ops.stop_gradient(fs)) * c_src, idx, x, axis=d)
    return moved + res


def _identity_of(reduce, dtype):
    """The start of an amax / amin where self is left out: the dtype's lowest / highest."""
    hi = reduce == "amin"
    if floating(dtype):
        return np.inf if hi else -np.inf
    if dtype.kind == "b":
        return hi
    info = np.iinfo(dtype)
    return info.max if hi else info.min


def _scatter_extreme(x, d, idx, src, keep, hits, reduce):
    """amax / amin: the value with NumPy, the gradient shared among the equal elements."""
    ufunc = np.maximum if reduce == "amax" else np.minimum
    res = np.where(keep, _arr(x), _identity_of(reduce, x.dtype)).astype(x.dtype)
    ufunc.at(res, _where_at(idx, d), _arr(src))
    if not floating(x.dtype):
        return _t(res)
    at_src = _at_index(res, idx, d)
    m_self = keep & (_arr(x) == res)
    m_src = _arr(src) == at_src
    count = m_self + _arr(ops.gather_grad(m_src.astype(np.int64), idx,
                                          np.zeros(x.shape, np.int64), axis=d))
    share = (1.0 / np.maximum(count, 1)).astype(x.dtype)
    fx = ops.where(np.isfinite(_arr(x)), x, 0)      # NOTE: x - x is NaN at inf: no slope there
    fs = ops.where(np.isfinite(_arr(src)), src, 0)
    moved = ops.where(m_self, (fx - ops.stop_gradient(fx)) * share, 0) + ops.gather_grad(
        ops.where(m_src, fs - ops.stop_gradient(fs), 0), idx, x, axis=d) * share
    return moved + res



def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle, row by row (torch's)."""
    from . import devices
    devices.check(device)
    r, c = np.tril_indices(row, offset, col)
    return _t(np.stack([r, c]).astype(np.dtype(dtype) if dtype else np.int64))


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    from . import devices
    devices.check(device)
    r, c = np.triu_indices(row, offset, col)
    return _t(np.stack([r, c]).astype(np.dtype(dtype) if dtype else np.int64))


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) on the diagonal of one matrix, zeros elsewhere."""
    mats = []
    for t in tensors:
        t = _t(t)
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {len(mats)} has {t.ndim} dimensions")
        mats.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not mats:
        return _t(np.zeros((0, 0), np.float32))
    cols = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        right = cols - left - m.shape[1]
        rows.append(ops.pad(m, ((0, 0), (left, right))) if left or right else m)
        left += m.shape[1]
    return ops.concat(*rows, axis=0)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, one per row (a 1-D input as is)."""
    if len(tensors) == 1:
        return _t(tensors[0])
    grids = meshgrid(*tensors, indexing="ij")
    return ops.stack(*[g.reshape(-1) for g in grids], axis=1)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Each run of equal consecutive values kept once (no gradient: the shape depends on the
    values)."""
    a = _arr(input)
    if dim is None:
        flat = a.reshape(-1)
        start = np.concatenate([[True], flat[1:] != flat[:-1]]) if flat.size else \
            np.zeros(0, bool)
        vals = flat[start]
        inv = (np.cumsum(start) - 1).reshape(a.shape)
    else:
        d = norm_axis("unique_consecutive", dim, a.ndim)
        if a.size == 0 and a.shape[d]:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        rows = np.moveaxis(a, d, 0).reshape(a.shape[d], a.size // max(a.shape[d], 1))
        start = np.concatenate([[True], np.any(rows[1:] != rows[:-1], axis=1)]) \
            if len(rows) else np.zeros(0, bool)
        vals = np.take(a, np.flatnonzero(start), axis=d)
        inv = np.cumsum(start) - 1
    out = [_no_grad_tensor(vals)]
    if return_inverse:
        out.append(_no_grad_tensor(inv.astype(np.int64)))
    if return_counts:
        out.append(_no_grad_tensor(np.diff(np.append(np.flatnonzero(start), len(start)))
                                   .astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unfold(input, dimension, size, step):  # noqa: A002 - Tensor.unfold's names
    """Every slice of `size` along dimension, `step` apart, as a new last dim: a view, as
    torch's (writes through it reach the input)."""
    x = _t(input)
    xs, d = (x.reshape(1), 0) if x.ndim == 0 else (x, norm_axis("unfold", dimension, x.ndim))
    n = xs.shape[d]
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    out = ops.sliding_windows(xs, axis=d, size=size, step=step)
    return out.reshape(size) if x.ndim == 0 else out


def _scatter_at(name, x, src, positions):
    """x with src written at the flat positions (an array shaped like the part replaced)."""
    src = _t(src)
    if tuple(src.shape) != positions.shape:
        raise RuntimeError(f"{name}(): expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = "
                           f"{list(positions.shape)}")
    return _put(x, positions.reshape(-1), src.reshape(-1))


def _positions(x):
    return np.arange(x.numel()).reshape(tuple(x.shape))


def select_scatter(input, src, dim, index):  # noqa: A002
    x = _t(input)
    d, i = _dim_index("select_scatter", x, dim, index)
    return _scatter_at("select_scatter", x, src, np.take(_positions(x), i, axis=d))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    x = _t(input)
    d = norm_axis("slice_scatter", dim, x.ndim)
    part = _positions(x)[(slice(None),) * d + (slice(start, end, step),)]
    return _scatter_at("slice_scatter", x, src, part)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    x = _t(input)
    d1, d2 = (norm_axis("diagonal_scatter", k, x.ndim) for k in (dim1, dim2))
    return _scatter_at("diagonal_scatter", x, src, np.diagonal(_positions(x), offset, d1, d2))


def diagflat(input, offset=0):  # noqa: A002
    return diag(_t(input).reshape(-1), offset)


__all__ = TORCH_NAMES = [
    "select", "atleast_1d", "atleast_2d", "atleast_3d", "cat", "concat", "concatenate",
    "hstack", "vstack",
    "row_stack", "dstack", "column_stack", "tensor_split", "hsplit", "vsplit", "dsplit",
    "movedim", "moveaxis", "swapaxes", "swapdims", "t", "masked_fill", "take_along_dim",
    "rot90", "index_add", "index_fill", "index_copy", "masked_scatter", "put", "unflatten",
    "ravel", "fliplr", "flipud", "diag_embed", "split_with_sizes", "msort", "index_put",
    "scatter", "scatter_reduce", "tril_indices", "triu_indices", "block_diag", "cartesian_prod",
    "unique_consecutive", "select_scatter", "slice_scatter", "diagonal_scatter", "diagflat"]
