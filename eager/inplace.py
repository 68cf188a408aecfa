"""In-place updates with PyTorch's safety rules: `+=`, `add_`, `zero_`, `t[idx] = v`, …

Every in-place method computes its result out of place with ordinary ops, then writes it into
the tensor's own array, so views and aliases see the change. Three rules keep gradients honest:

- an in-place change to a leaf that requires grad, with grad mode on, raises PyTorch's error
  (under `no_grad()` it is how parameters are updated);
- when grad mode is on and the tensor (or an operand) requires grad, the tensor's tape entry
  becomes the in-place op, applied to a snapshot of its old value, so `backward()` sees it;
- every in-place write stamps the tensor with a clock tick; a tape entry that used the tensor
  before the write was recorded at an earlier tick, and `backward()` through it raises
  PyTorch's "modified by an inplace operation" error instead of using the new value.

>>> from dualgrad import eager
>>> w = eager.ones(3, requires_grad=True)
>>> with eager.no_grad():
...     w -= 0.5 * eager.ones(3)
>>> w
tensor([0.5000, 0.5000, 0.5000], requires_grad=True)
"""
from __future__ import annotations

import sys

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import TRACING, user_frame, where_str
from dualgrad.ops.index import index_positions, staged, torch_indexed
from dualgrad.ops.rules import (torch_can_cast, torch_floating_only, torch_int_scalar,
                                torch_scalar_into)

from . import core as _core
from .amp import AUTOCAST as _AUTOCAST, not_autocast
from .core import CLOCK, Entry, entry
from .functions import addcdiv, addcmul, lerp, scaled_by_alpha
from .generator import drawn
from .refusals import SCALAR_TYPE, index_tensors

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."


def _grad_on():
    return _core._GRAD.enabled


def _is_tensor(x):
    return isinstance(x, _core.Tensor)


def _needs_tape(t, others):
    return _grad_on() and (t.requires_grad or builtins_any(
        _is_tensor(o) and o.requires_grad for o in others))


builtins_any = any


def _snapshot(t):
    """A tensor holding t's current value and tape entry: what the in-place op applies to."""
    prev = _core._new(_core.Tensor)
    prev._array, prev.grad = t._array.copy(), None
    prev.requires_grad, prev._node = t.requires_grad, t._node
    return prev


def _where():
    return where_str(user_frame())


def _write(t, new, name):
    """Copy `new` into t's array, with PyTorch's shape and dtype rules for in-place results."""
    arr = new._array if _is_tensor(new) else np.asarray(new)
    _check_result(t, arr, name)
    t._array[...] = arr


def _check_result(t, arr, name):
    """PyTorch's rules for an in-place result `arr` (an array, or a traced value) of t."""
    if arr.shape != t._array.shape:
        raise RuntimeError(f"{name}: output with shape {list(t._array.shape)} doesn't match the "
                           f"broadcast shape {list(arr.shape)} (at {_where()})")
    if not torch_can_cast(arr.dtype, t._array.dtype):
        raise RuntimeError(f"{name}: result type {arr.dtype} can't be cast to the desired "
                           f"output type {t._array.dtype} (at {_where()})")
    if not t._array.flags.writeable:
        raise RuntimeError(f"{name}: unsupported operation: the tensor is a read-only view "
                           f"(e.g. made by expand); clone() it first (at {_where()})")


def _stamp(t, chain=None):
    """Tick the clock and mark t (and the tensors it is a view of, and its memory, which its
    base's other views share) as written now. `chain`: t's `_view_chain`, if known."""
    CLOCK[0] += 1
    _core.stamp_storage(t, CLOCK[0])
    t._modified = CLOCK[0]
    for _, node in _view_chain(t) if chain is None else chain:
        node[1][0]._modified = CLOCK[0]


def apply_inplace(t, name, compute, *others):
    """t <- compute(t, *others) in place, following the three rules of this module."""
    if _AUTOCAST.enabled:
        compute = not_autocast(compute)
    if TRACING[0] and not _needs_tape(t, others) and getattr(t, "_trace", None) is None:
        tr = _core.traced_step()
        if tr is not None:   # NOTE: in compile(): recorded, written at every call
            new = compute(tr.read(t), *others)
            _check_result(t, new, name)
            tr.assign(t, new)
            return t
    if not _needs_tape(t, others):
        new = compute(t, *others)
        _write(t, new, name)
        _stamp(t)
        return t
    if t.requires_grad and t._node is None:
        raise RuntimeError(f"{name}: {LEAF_ERROR} Wrap the update in `with torch.no_grad():` "
                           f"(at {_where()})")
    node = t._node
    view = node is not None and type(node) is Entry and node[0].view and t.requires_grad
    private = view and _private_view(t)
    if view and not private:
        chain = _view_chain(t)
        if chain:
            return _through_view(t, chain, name, compute, others)
        # NOTE: else a reshape or contiguous() that copied: t's memory is its own
    prev = _snapshot(t)
    new = compute(prev, *others)
    if private:   # NOTE: no one else sees the bases: t takes storage of its own, so a base's
        t._array, t._root = t._array.copy(), None   # value stays what its entry saw (max's vjp)
    _write(t, new, name)
    if private:   # NOTE: the bases were not written: stamp t alone
        CLOCK[0] += 1
        t._modified = CLOCK[0]
    else:
        _stamp(t)
    if new.requires_grad:     # the entry is as new as the write: it used the snapshot, not t
        _core.keep_before(t, CLOCK[0], prev)
        t.requires_grad, t._node = True, entry(*new._node[:3], CLOCK[0])
    return t


def _view_chain(t):
    """[(view, its entry)] from t up through the tensors it is a view of, while each view's
    memory lies in its base's (a reshape that copied ends the chain: from there on the values
    are a copy's, which a write does not reach)."""
    chain, v = [], t
    while True:
        node = v._node
        if node is None or type(node) is not Entry or not node[0].view or \
                not _is_tensor(node[1][0]) or \
                not np.may_share_memory(v._array, node[1][0]._array):
            return chain
        chain.append((v, node))
        v = node[1][0]


def _positions_in_base(chain):
    """Where each element of chain[0]'s view lies in the last base, as flat positions shaped
    like the view: each view op's own kernel applied to its base's positions."""
    pos = None
    for _, node in reversed(chain):
        base = np.arange(node[1][0]._array.size).reshape(node[1][0]._array.shape) \
            if pos is None else pos
        rest = [a._array if _is_tensor(a) else a for a in node[1][1:]]
        pos = np.asarray(node[0].kernel(base, *rest, **node[2]))
    return pos


def _through_view(t, chain, name, compute, others):
    """An in-place change of a view that requires grad (torch's CopySlices): the tensor the
    view lies in (its root) becomes its old value (a snapshot, with its old tape entry) with
    the view's positions replaced by the view's new value, computed from the view's old
    value read from that snapshot. So `y[..., 0] *= 2`, `y[0] += y[1]` and
    `y.diagonal().zero_()` differentiate as torch's, and every entry recorded before the write
    reads the values it saw (eager.core.as_of). `chain` is `_view_chain(t)`, not empty."""
    root = chain[-1][1][1][0]
    if root.requires_grad and root._node is None:
        raise RuntimeError(f"{name}: a view of a leaf Variable that requires grad is being used "
                           f"in an in-place operation. (at {_where()})")
    pos = _positions_in_base(chain)
    if np.unique(pos).size != pos.size:
        raise RuntimeError(
            f"{name}: unsupported operation: some elements of the input tensor and the "
            f"written-to tensor refer to a single memory location. Please clone() the tensor "
            f"before performing the operation. (at {_where()})")
    old_root = _snapshot(root)
    flat = pos.reshape(-1)
    old = ops.reshape(ops.take(ops.reshape(old_root, (-1,)), flat, axis=0), t._array.shape)
    new = compute(old, *others)
    _write(t, new, name)
    _stamp(t, chain)
    tick = CLOCK[0]
    placed = _put_at(old_root, flat, ops.reshape(new, (-1,)) if _is_tensor(new) else new)
    _core.keep_before(root, tick, old_root)
    root.requires_grad, root._node = True, entry(*placed._node[:3], tick)
    for view, node in chain[1:]:   # NOTE: views of the new root, as of now
        view._node = entry(node[0], node[1], node[2], tick)
    if _is_tensor(new) and new.requires_grad:
        _core.keep_before(t, tick, old)
        t.requires_grad, t._node = True, entry(*new._node[:3], tick)
    return t


def _private_view(t):
    """True when each base up t's chain of views is held by nothing but the view's tape entry
    (an intermediate inside a composite, e.g. conv2d's output reshaped from a matmul): no
    other tensor or tape entry can see the base, so t may stop sharing its storage."""
    node = t._node
    while node is not None and type(node) is Entry and node[0].view:
        base = node[1][0]
        # NOTE: three references: the entry's inputs, `base` here, getrefcount's argument
        if not _is_tensor(base) or sys.getrefcount(base) > 3:
            return False
        node = base._node
    return True


def _scalar_or_tensor(x):
    return x._array if _is_tensor(x) and not x.requires_grad else x


def _numpy_index(index):
    parts = index if isinstance(index, tuple) else (index,)
    out = tuple(p._array if _is_tensor(p) else p for p in parts)
    return out if isinstance(index, tuple) else out[0]


def _put(prev, index, value):
    """prev with `value` written at `index`, built from ops so gradients reach both."""
    return _put_at(prev, index_positions(prev._array.shape, _numpy_index(index)), value)


def _put_at(prev, pos, value):
    """prev with `value` (broadcast to pos's shape) written at the flat positions `pos`."""
    shape, n = prev._array.shape, prev._array.size
    mask = np.zeros(n, np.bool_)
    mask[pos.reshape(-1)] = True
    v = value if _is_tensor(value) else np.asarray(value, dtype=prev._array.dtype)
    if v.dtype != prev._array.dtype:
        v = ops.cast(v, prev._array.dtype)
    v = ops.reshape(ops.broadcast_to(v, shape=pos.shape), (-1,))
    pos = pos.reshape(-1)
    # NOTE: a position named twice (x[[1, 1, 3]] = v) holds the last value written there, as
    # NumPy's and torch's assignment; take_grad sums what lands on one position, so only each
    # position's last occurrence goes in (the others' values get no gradient: torch's give
    # each occurrence the position's gradient)
    last = _last_occurrences(pos)
    if last is not None:
        v, pos = ops.take(v, last, axis=0), pos[last]
    placed = ops.take_grad(v, pos, ops.reshape(prev, (-1,)), axis=0)
    return ops.where(mask.reshape(shape), ops.reshape_like(placed, prev), prev)


def _last_occurrences(pos):
    """Where in pos (flat positions) each position occurs last, in position order; None when
    every position occurs once."""
    uniq, first_from_end = np.unique(pos[::-1], return_index=True)
    if uniq.size == pos.size:
        return None
    return pos.size - 1 - first_from_end


def getitem(t, index):
    """t[index]: the op library's getitem, and, in eager only, the indexing that needs the
    index's values (boolean masks, several index arrays: torch's advanced indexing, which is
    NumPy's), as a take of the positions it selects, so gradients flow as torch's."""
    index = index_tensors(index)
    if _core.TRACING[0] or staged(index):
        return ops.getitem(t, index)
    try:
        pos = index_positions(t._array.shape, _numpy_index(index))
    except IndexError as e:
        raise IndexError(f"{e} (indexing a tensor of shape {tuple(t._array.shape)}, at "
                         f"{_where()})") from None
    flat = ops.take(ops.reshape(t, (-1,)), pos.reshape(-1), axis=0)
    return ops.reshape(flat, pos.shape)


def setitem(t, index, value):
    """t[index] = value: NumPy's indexing (ints, slices, masks, index arrays) on the array."""
    index = index_tensors(index, value)
    _index_put_dtype(t, index, value)
    if _is_tensor(value) and _is_region(t, index, value):
        return   # NOTE: `y[i] += v` wrote through the view y[i] already; Python assigns it back
    if not _needs_tape(t, (value,)):
        val = value._array if _is_tensor(value) else torch_scalar_into(value, t._array.dtype) \
            if type(value) in (int, float) else value
        index = _numpy_index(index)
        try:    # NOTE: quiet as torch's copy: 1e10 into float16 is inf, nan into int64 silent
            base, last = torch_indexed(t._array, index)
            with np.errstate(over="ignore", invalid="ignore"):
                base[last] = val
        except (ValueError, IndexError, TypeError) as e:
            raise RuntimeError(f"setitem: cannot assign {np.shape(val)} into index {index!r} "
                               f"of a tensor of shape {t._array.shape}: {e} (at {_where()})") \
                from None
        _stamp(t)
        return
    apply_inplace(t, "setitem", lambda p, v: _put(p, index, v), value)


def _is_region(t, index, value):
    """value is the very view t[index] (a basic index: ints, slices, None, ...): the same
    memory, shape and strides, so assigning it changes nothing."""
    arr = value._array
    if type(arr) is not np.ndarray or arr.base is None or value.dtype != t.dtype:
        return False
    parts = index if isinstance(index, tuple) else (index,)
    if not all(p is None or p is Ellipsis or type(p) in (int, slice) for p in parts):
        return False
    try:
        region = t._array[index]
    except (IndexError, TypeError):
        return False
    return type(region) is np.ndarray and region.shape == arr.shape and \
        region.strides == arr.strides and \
        region.__array_interface__["data"][0] == arr.__array_interface__["data"][0]


def _index_put_dtype(t, index, value):
    """torch's rule for a tensor written through index tensors (its index_put_): the value's
    dtype must be t's, except a 0-d value where every index tensor is a mask (masked_fill);
    a basic index (ints, slices) casts, as copy_, and so does a Python number."""
    if not _is_tensor(value) or value.dtype == t.dtype:
        return
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if _is_tensor(p) or isinstance(p, (list, np.ndarray))]
    if not arrays or value.ndim == 0 and all(np.asarray(getattr(p, "_array", p)).dtype == np.bool_
                                             for p in arrays):
        return
    raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                       f"{SCALAR_TYPE.get(t.dtype.name, t.dtype.name)} for the destination and "
                       f"{SCALAR_TYPE.get(value.dtype.name, value.dtype.name)} for the source.")


def _fill(p, value):
    """value everywhere, as an op of p (so a tracked tensor keeps a zero gradient path)."""
    if _is_tensor(value) and not value.requires_grad and not p.requires_grad and \
            tuple(value.shape) == tuple(p.shape) and value.dtype == p.dtype:
        return value   # NOTE: a compile() trace's per-call draw has no array to broadcast
    value = torch_int_scalar(_scalar_or_tensor(value), p._array.dtype)   # NOTE: uint8 -2: 254
    if not p.requires_grad and not (_is_tensor(value) and value.requires_grad):
        arr = np.broadcast_to(np.asarray(getattr(value, "_array", value), p._array.dtype),
                              p._array.shape)
        return arr
    return ops.where(np.ones(p._array.shape, np.bool_), value, p)


class InPlaceMixin:
    """The in-place half of Tensor's methods (Tensor inherits it)."""
    __slots__ = ()

    def __iadd__(self, o):
        return apply_inplace(self, "add_", lambda t, o: t + o, o)

    def __isub__(self, o):
        return apply_inplace(self, "sub_", lambda t, o: t - o, o)

    def __imul__(self, o):
        return apply_inplace(self, "mul_", lambda t, o: t * o, o)

    def __itruediv__(self, o):
        return apply_inplace(self, "div_", lambda t, o: t / o, o)

    def __ipow__(self, o):
        return apply_inplace(self, "pow_", lambda t, o: t ** o, o)

    def __ifloordiv__(self, o):
        return apply_inplace(self, "floor_divide_", lambda t, o: t // o, o)

    def __imod__(self, o):
        return apply_inplace(self, "remainder_", lambda t, o: t % o, o)

    def __iand__(self, o):
        return apply_inplace(self, "bitwise_and_", lambda t, o: t & o, o)

    def __ior__(self, o):
        return apply_inplace(self, "bitwise_or_", lambda t, o: t | o, o)

    def __ixor__(self, o):
        return apply_inplace(self, "bitwise_xor_", lambda t, o: t ^ o, o)

    def __ilshift__(self, o):
        return apply_inplace(self, "bitwise_left_shift_", lambda t, o: t << o, o)

    def __irshift__(self, o):
        return apply_inplace(self, "bitwise_right_shift_", lambda t, o: t >> o, o)

    def __setitem__(self, index, value):
        setitem(self, index, value)

    def add_(self, other, alpha=1):
        return apply_inplace(self, "add_", lambda t, o: t + scaled_by_alpha(o, alpha, t), other)

    def sub_(self, other, alpha=1):
        return apply_inplace(self, "sub_", lambda t, o: t - scaled_by_alpha(o, alpha, t), other)

    def mul_(self, other):
        return apply_inplace(self, "mul_", lambda t, o: t * o, other)

    def div_(self, other, *, rounding_mode=None):
        return apply_inplace(self, "div_", lambda t, o: t.div(o, rounding_mode=rounding_mode),
                             other)

    def pow_(self, exponent):
        return apply_inplace(self, "pow_", lambda t, o: t ** o, exponent)

    def neg_(self):
        return apply_inplace(self, "neg_", lambda t: -t)

    def exp_(self):
        return apply_inplace(self, "exp_", ops.exp)

    def log_(self):
        return apply_inplace(self, "log_", ops.log)

    def sqrt_(self):
        return apply_inplace(self, "sqrt_", ops.sqrt)

    def abs_(self):
        return apply_inplace(self, "abs_", ops.abs)

    def relu_(self):
        return apply_inplace(self, "relu_", ops.relu)

    def sigmoid_(self):
        return apply_inplace(self, "sigmoid_", ops.sigmoid)

    def tanh_(self):
        return apply_inplace(self, "tanh_", ops.tanh)

    def clamp_(self, min=None, max=None):  # noqa: A002 - torch's names
        return apply_inplace(self, "clamp_", lambda t: t.clamp(min, max))

    clip_ = clamp_

    def clamp_min_(self, min):  # noqa: A002
        return self.clamp_(min=min)

    def clamp_max_(self, max):  # noqa: A002
        return self.clamp_(max=max)

    def addcmul_(self, tensor1, tensor2, value=1):
        return apply_inplace(self, "addcmul_", lambda t, a, b: addcmul(t, a, b, value=value),
                             tensor1, tensor2)

    def addcdiv_(self, tensor1, tensor2, value=1):
        return apply_inplace(self, "addcdiv_", lambda t, a, b: addcdiv(t, a, b, value=value),
                             tensor1, tensor2)

    def lerp_(self, end, weight):
        return apply_inplace(self, "lerp_", lambda t, e: lerp(t, e, weight), end)

    def masked_fill_(self, mask, value):
        mask = mask._array if _is_tensor(mask) else mask
        # NOTE: the value takes self's dtype (1.5 into an int64 tensor is 1), as masked_fill's
        return apply_inplace(self, "masked_fill_", lambda t, v: ops.masked_fill(t, mask, v),
                             _scalar_or_tensor(value))

    def zero_(self):
        return apply_inplace(self, "zero_", lambda t: _fill(t, 0))

    def fill_(self, value):
        return apply_inplace(self, "fill_", _fill, value)

    def copy_(self, src, non_blocking=False):
        """Copy src's values (broadcast to this shape, cast to this dtype) into the tensor."""
        def compute(t, s):
            s = s if _is_tensor(s) else np.asarray(s)
            if s.dtype != t._array.dtype:
                s = ops.cast(s, t._array.dtype)
            if tuple(s.shape) != t._array.shape:
                s = ops.broadcast_to(s, shape=t._array.shape)
            return _fill(t, s) if not _is_tensor(s) or not s.requires_grad else \
                ops.where(np.ones(t._array.shape, np.bool_), s, t)
        return apply_inplace(self, "copy_", compute, src)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        torch_floating_only("check_uniform_bounds", self._array.dtype)
        return self._random_fill("uniform_", generator, lambda g, s: g.uniform(a, b, s))

    def normal_(self, mean=0.0, std=1.0, generator=None):
        torch_floating_only("normal_kernel_cpu", self._array.dtype)
        return self._random_fill("normal_", generator, lambda g, s: g.normal(mean, std, s))

    def bernoulli_(self, p=0.5, generator=None):
        return self._random_fill("bernoulli_", generator, lambda g, s: g.random(s) < p)

    def random_(self, low=0, high=None, generator=None):
        if high is None:
            low, high = 0, low if low else 2 ** 24
        return self._random_fill("random_", generator, lambda g, s: g.integers(low, high, s))

    def _random_fill(self, name, generator, sample):
        """self filled with sample(rng, shape): drawn now, or at every call of a compiled
        function (eager.generator.drawn)."""
        shape = tuple(self.shape)
        vals = drawn(generator, shape, self.dtype, lambda g: sample(g, shape))
        return apply_inplace(self, name, lambda t: _fill(t, vals))

    def detach_(self):
        self._node, self.requires_grad = None, False
        return self


def _shaped_inplace(t, name, view):
    """t takes the shape of view(t) in place (unsqueeze_, t_, …): the same storage, seen
    anew; the tape entry of a tensor that requires grad becomes the view op applied to t's
    old self. Values do not change, but the version ticks, as torch's does."""
    tape = _needs_tape(t, ())
    if tape and t._node is None:
        raise RuntimeError(f"{name}: {LEAF_ERROR} Wrap the update in `with torch.no_grad():` "
                           f"(at {_where()})")
    prev = _core._new(_core.Tensor)       # NOTE: t's old self, sharing its storage
    prev._array, prev.grad = t._array, None
    prev.requires_grad, prev._node = t.requires_grad, t._node
    new = view(prev)
    CLOCK[0] += 1         # NOTE: t alone: its values, and its bases', are unchanged
    t._modified = CLOCK[0]
    t._array = new._array
    if tape and new.requires_grad:
        t._node = entry(*new._node[:3], CLOCK[0])
    return t


class MoreInPlace:
    """torch's remaining in-place methods: index writes, triangles, shape changes."""
    __slots__ = ()

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        from .shaping import scatter
        return apply_inplace(self, "scatter_", lambda t, s: scatter(
            t, dim, index, s, value=value, reduce=reduce), _scalar_or_tensor(src))

    def scatter_add_(self, dim, index, src):
        from .functions import scatter_add
        return apply_inplace(self, "scatter_add_", lambda t, s: scatter_add(t, dim, index, s),
                             src)

    def index_add_(self, dim, index, source, *, alpha=1):
        from .shaping import index_add
        return apply_inplace(self, "index_add_", lambda t, s: index_add(
            t, dim, index, s, alpha=alpha), source)

    def index_fill_(self, dim, index, value):
        from .shaping import index_fill
        return apply_inplace(self, "index_fill_", lambda t, v: index_fill(t, dim, index, v),
                             value)

    def index_copy_(self, dim, index, source):
        from .shaping import index_copy
        return apply_inplace(self, "index_copy_", lambda t, s: index_copy(t, dim, index, s),
                             source)

    def masked_scatter_(self, mask, source):
        from .shaping import masked_scatter
        return apply_inplace(self, "masked_scatter_", lambda t, s: masked_scatter(t, mask, s),
                             source)

    def put_(self, index, source, accumulate=False):
        from .shaping import put
        return apply_inplace(self, "put_", lambda t, s: put(t, index, s, accumulate), source)

    def index_put_(self, indices, values, accumulate=False):
        from .shaping import index_put
        return apply_inplace(self, "index_put_", lambda t, v: index_put(t, indices, v,
                                                                        accumulate), values)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        from .shaping import scatter_reduce
        return apply_inplace(self, "scatter_reduce_", lambda t, s: scatter_reduce(
            t, dim, index, s, reduce, include_self=include_self), src)

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
        from .functions import addmm
        return apply_inplace(self, "addmm_", lambda t, a, b: addmm(t, a, b, beta=beta,
                                                                   alpha=alpha), mat1, mat2)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        from .functions import baddbmm
        return apply_inplace(self, "baddbmm_", lambda t, a, b: baddbmm(
            t, a, b, beta=beta, alpha=alpha), batch1, batch2)

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        from .reductions import addmv
        return apply_inplace(self, "addmv_", lambda t, a, b: addmv(t, a, b, beta=beta,
                                                                   alpha=alpha), mat, vec)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1):
        from .reductions import addr
        return apply_inplace(self, "addr_", lambda t, a, b: addr(t, a, b, beta=beta,
                                                                 alpha=alpha), vec1, vec2)

    def tril_(self, diagonal=0):
        return apply_inplace(self, "tril_", lambda t: ops.tril(t, diagonal))

    def triu_(self, diagonal=0):
        return apply_inplace(self, "triu_", lambda t: ops.triu(t, diagonal))

    def square_(self):
        return apply_inplace(self, "square_", lambda t: t.square())   # bools square to int64

    def fill_diagonal_(self, fill_value, wrap=False):
        """fill_value on the main diagonal (all dims equal past 2-D; wrap: tall matrices
        restart it every ncols + 1 rows, as NumPy's fill_diagonal)."""
        shape = self._array.shape
        if len(shape) < 2 or len(shape) > 2 and len(set(shape)) != 1:
            raise RuntimeError(f"fill_diagonal_: dimensions must larger than 1 and all be of "
                               f"equal length, got shape {list(shape)}")
        mask = np.zeros(shape, np.bool_)
        np.fill_diagonal(mask, True, wrap=wrap)
        return apply_inplace(self, "fill_diagonal_", lambda t, v: ops.where(mask, v, t),
                             _scalar_or_tensor(fill_value))

    def exponential_(self, lambd=1.0, *, generator=None):
        return self._random_fill("exponential_", generator,
                                 lambda g, s: g.exponential(1.0 / lambd, s))

    def unsqueeze_(self, dim):
        return _shaped_inplace(self, "unsqueeze_", lambda t: t.unsqueeze(dim))

    def squeeze_(self, dim=None):
        return _shaped_inplace(self, "squeeze_", lambda t: t.squeeze(dim))

    def t_(self):
        return _shaped_inplace(self, "t_", lambda t: t.t())

    def transpose_(self, dim0, dim1):
        return _shaped_inplace(self, "transpose_", lambda t: t.transpose(dim0, dim1))

    def swapaxes_(self, axis0, axis1):
        return self.transpose_(axis0, axis1)

    swapdims_ = swapaxes_


def inplace_of(name):
    """name_: t <- t.name(*args, **kwargs), recorded and version-checked as the others."""
    def method(self, *args, **kwargs):
        return apply_inplace(self, name + "_", lambda t, *a: getattr(t, name)(*a, **kwargs),
                             *args)
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place {name} (torch.Tensor.{name}_)."
    return method


def compare_inplace(name):
    """name_: t <- t.name(other), the boolean result written in t's own dtype (torch's
    x.lt_(y) leaves x float, holding 0.0 and 1.0)."""
    def method(self, *args):
        return apply_inplace(self, name + "_",
                             lambda t, *a: ops.cast(getattr(t, name)(*a), t._array.dtype),
                             *args)
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place {name}: the result in self's dtype (torch.Tensor.{name}_)."
    return method
