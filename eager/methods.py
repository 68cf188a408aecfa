"""More of torch.Tensor's methods: ordering and gathering, comparisons by name, reductions
over a dim, indexing, dtype and device moves, the new_* constructors (eager/surface.py
puts them on Tensor).

>>> from dualgrad import eager
>>> x = eager.tensor([[3.0, 1.0, 2.0]])
>>> x.sort(dim=1).indices.tolist(), x.topk(2).values.tolist()
([[1, 2, 0]], [[3.0, 2.0]])
"""
from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np

from dualgrad import ops
from dualgrad.ops.rules import floating, norm_axis

from . import devices as _device
from . import functions
from .core import RETAINS_GRAD, Tensor, foreign, register_hook, retains_grad
from .functions import accumulate


def _operand(name, other):
    """other, when torch's comparison methods take it (a tensor or a number); else its
    TypeError (t.eq(None) raises where t == None is False)."""
    if foreign(other):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(other).__name__}), but expected one of: (Tensor other) or "
                        f"(Number other)")
    return other
from .formats import format_order, in_order, preserve_format
from .inplace import apply_inplace, getitem
from .refusals import in_range, scalar_type

SortResult = namedtuple("SortResult", "values indices")
TopkResult = namedtuple("TopkResult", "values indices")


def _tensor(arr):
    return Tensor(np.asarray(arr))


class TensorMethods:
    """Methods that compose existing ops (and NumPy, for the value-dependent `unique`)."""
    __slots__ = ()

    def __getitem__(self, index):
        return getitem(self, index)

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return accumulate(ops.sum, self, dtype, axis=dim, keepdims=keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """torch's argument order (dim, unbiased, keepdim); one element with Bessel's
        correction is NaN, as torch."""
        return functions.var(self, dim, unbiased, keepdim, correction=correction)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return functions.std(self, dim, unbiased, keepdim, correction=correction)

    def cumsum(self, dim, *, dtype=None):
        if self.ndim == 0:      # torch: a 0-d tensor's cumsum is 0-d (NumPy's would be 1-d)
            norm_axis("cumsum", dim, 1)
            return accumulate(ops.cumsum, ops.reshape(self, (1,)), dtype, axis=0).reshape(())
        return accumulate(ops.cumsum, self, dtype, axis=dim)

    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(device, dtype), to(other_tensor), with keywords too.

        The same tensor when nothing changes (as torch); a dtype change is a differentiable
        cast; any device but the CPU raises PyTorch's CPU-only error.
        """
        dtype, copy, dev, fmt = to_args(args, kwargs)
        if dev is not None:
            return _device.META_IMPL["to"](self, dtype)
        out = self if dtype is None or np.dtype(dtype) == self._array.dtype else \
            ops.cast(self, dtype)
        order = format_order("to", fmt, self.ndim)
        if order is not None:
            out = in_format(out, order)
        return out.clone() if copy and out is self else out

    def _as(self, dtype, memory_format):
        """self.float() and the like: self when the dtype is already right (as torch)."""
        out = self if self._array.dtype == dtype else ops.cast(self, dtype)
        order = format_order(np.dtype(dtype).name, memory_format, self.ndim)
        return out if order is None else in_format(out, order)

    # -- ordering and gathering -----------------------------------------------------------------
    def argsort(self, dim=-1, descending=False, stable=False):
        return ops.argsort(self, axis=dim, descending=descending, unstable=not stable)

    def sort(self, dim=-1, descending=False, stable=False):
        """(values, indices) along dim; equal values in torch's CPU order: kept in order with
        stable=True, std::sort's order otherwise, as torch's (ops/tie_order.py)."""
        if self.ndim == 0:      # NOTE: torch: the element itself and index 0
            norm_axis("sort", dim, 1)
            one = ops.reshape(self, (1,)).sort(0, descending, stable)
            return SortResult(ops.reshape(one.values, ()), ops.reshape(one.indices, ()))
        idx = ops.argsort(self, axis=dim, descending=descending, unstable=not stable)
        return SortResult(ops.gather(self, idx, axis=dim), idx)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's name
        n = self.shape[dim] if self.ndim else 1
        if not 0 <= k <= n:
            raise RuntimeError(f"topk: selected index k={k} out of range for dimension {dim} "
                               f"of size {n}")
        if self.ndim == 0:      # NOTE: torch gives the element and index 0, for k 0 or 1
            norm_axis("topk", dim, 1)
            one = ops.reshape(self, (1,)).topk(1, 0, largest, sorted)
            return TopkResult(ops.reshape(one.values, ()), ops.reshape(one.indices, ()))
        # NOTE: the first k as torch's CPU topk orders them, ties included (ops/tie_order.py)
        idx = ops.argsort(self, axis=dim, descending=largest, topk=k, topk_sorted=sorted)
        idx = ops.slice_(idx, index=(slice(None),) * (dim % self.ndim) + (slice(0, k),))
        return TopkResult(ops.gather(self, idx, axis=dim), idx)

    def gather(self, dim, index):
        in_range(index, self, dim, "gather")
        return ops.gather(self, index, axis=dim)

    def index_select(self, dim, index):
        if self.ndim == 0:      # NOTE: torch reads a 0-d tensor as one element along dim 0
            norm_axis("index_select", dim, 1)
            return ops.take(ops.reshape(self, (1,)), index, axis=0).reshape(())
        in_range(index, self, dim, "index_select")
        return ops.take(self, index, axis=dim)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """The distinct values (no gradient: the result's shape depends on the values)."""
        # NOTE: each nan is its own value, as torch's (NumPy's default merges them)
        res = np.unique(self._array, return_inverse=return_inverse, return_counts=return_counts,
                        axis=dim, equal_nan=False)
        if not isinstance(res, tuple):
            return _tensor(res)
        out = [_tensor(res[0])]
        if return_inverse:
            out.append(_tensor(res[1].reshape(self._array.shape if dim is None else -1)))
        if return_counts:
            out.append(_tensor(res[-1]))
        return tuple(out)

    # -- comparisons and shapes by name -----------------------------------------------------
    def eq(self, other):
        return self == _operand("eq", other)

    def ne(self, other):
        return self != _operand("ne", other)

    def lt(self, other):
        return self < _operand("lt", other)

    def le(self, other):
        return self <= _operand("le", other)

    def gt(self, other):
        return self > _operand("gt", other)

    def ge(self, other):
        return self >= _operand("ge", other)

    greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

    def equal(self, other):
        return bool(self.shape == other.shape and np.array_equal(self._array, other._array))

    def allclose(self, other, rtol=1e-5, atol=1e-8, equal_nan=False):
        return bool(np.allclose(self._array, other._array, rtol=rtol, atol=atol,
                                equal_nan=equal_nan))

    def view_as(self, other):
        return self.reshape(other.shape)

    reshape_as = view_as

    def contiguous(self, memory_format=None):
        """self when its elements lie in the format's order (row-major by default), else a
        copy laid out so."""
        row_major = tuple(range(self.ndim))
        if memory_format is preserve_format and not in_order(self._array, row_major):
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        return in_format(self, format_order("contiguous", memory_format, self.ndim) or row_major)

    def is_contiguous(self, memory_format=None):
        order = format_order("is_contiguous", memory_format, self.ndim)
        return in_order(self._array, order or tuple(range(self.ndim)))

    def clone(self, *, memory_format=None):
        """A copy with memory of its own, laid out as the input (preserve_format) or in the
        format given."""
        order = format_order("clone", memory_format, self.ndim)
        out = self if order is None else in_format(self, order)
        return ops.copy(self) if out is self else out

    def stride(self, dim=None):
        """Steps in elements between neighbours along each dim, of this tensor's storage
        (docs/pytorch-compat.md says where dualgrad's layouts differ from torch's)."""
        steps = tuple(s // self._array.itemsize for s in self._array.strides)
        return steps if dim is None else steps[dim]

    def ndimension(self):
        return self._array.ndim

    def retain_grad(self):
        """Make backward() fill this non-leaf tensor's .grad too (a leaf's is filled anyway)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._node is not None and not retains_grad(self):
            key = id(self)
            RETAINS_GRAD[key] = weakref.ref(self, lambda _, k=key: RETAINS_GRAD.pop(k, None))

    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is computed; a tensor it returns
        replaces the gradient (eager/hooks.py). Returns a handle with .remove()."""
        return register_hook(self, hook)

    @property
    def retains_grad(self):
        return retains_grad(self)

    def nelement(self):
        return self.numel()

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return self.T if self.ndim == 2 else self

    def is_floating_point(self):
        return floating(self._array.dtype)

    def half(self, memory_format=None):
        return self._as("float16", memory_format)

    def where(self, condition, other):
        return ops.where(condition, self, other)

    def amin(self, dim=None, keepdim=False):
        return functions.amin(self, () if dim is None else dim, keepdim)

    # -- what kind of tensor ------------------------------------------------------------------
    @property
    def mT(self):  # noqa: N802 - torch's name
        """The last two dims swapped (batched matrix transpose)."""
        if self._array.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self._array.ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def mH(self):  # noqa: N802 - torch's name
        """The conjugate transpose of the last two dims (the transpose, for real tensors;
        NOTE: for complex ones a copy, where torch's is a conjugate view)."""
        if self._array.ndim < 2:
            raise RuntimeError(f"tensor.mH is only supported on matrices or batches of "
                               f"matrices. Got {self._array.ndim}-D tensor.")
        t = self.transpose(-2, -1)
        return ops.conj(t) if t.dtype.kind == "c" else t

    def adjoint(self):
        """The conjugate transpose of the last two dims, as a view (torch.adjoint)."""
        if self._array.ndim < 2:
            raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                               f"matrices. Got {self._array.ndim}-D tensor.")
        return self.mH

    @property
    def H(self):  # noqa: N802
        if self._array.ndim > 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self._array.ndim}-D tensor.")
        t = self.t()
        return ops.conj(t) if t.dtype.kind == "c" else t

    def is_signed(self):
        return self._array.dtype.kind in "ifc" or floating(self._array.dtype)

    def is_complex(self):
        return self._array.dtype.kind == "c"

    def element_size(self):
        return np.dtype(self.dtype).itemsize      # NOTE: from the dtype: traced tensors too

    @property
    def itemsize(self):
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self):
        return self.numel() * np.dtype(self.dtype).itemsize

    def is_same_size(self, other):
        return self._array.shape == other.shape

    def is_nonzero(self):
        if self._array.size != 1:
            what = "no values" if self._array.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self._array.reshape(()))

    def byte(self, memory_format=None):
        return self._as("uint8", memory_format)

    def char(self, memory_format=None):
        return self._as("int8", memory_format)

    def short(self, memory_format=None):
        return self._as("int16", memory_format)

    def ger(self, vec2):
        from .functions import outer
        return outer(self, vec2)

    def is_inference(self):
        return False

    is_sparse = is_quantized = is_meta = is_nested = False   # NOTE: dense CPU tensors only

    @property
    def layout(self):
        from .info import strided
        return strided

    def is_conj(self):
        return False       # NOTE: no lazy conjugation here: conj() of a real tensor is itself

    def is_neg(self):
        return False

    def is_pinned(self, device=None):
        return False       # NOTE: no pinned memory without an accelerator

    def is_shared(self):
        return False       # NOTE: share_memory_ is not provided

    def float_power_(self, exponent):
        """In place x ** exponent in double precision: x must be float64, as torch's."""
        if self._array.dtype != np.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{scalar_type(self._array.dtype)} but the operation's result "
                               f"requires dtype Double")
        return apply_inplace(self, "float_power_", lambda t, e: t.float_power(e), exponent)

    def apply_(self, callable):  # noqa: A002 - torch's argument name
        """Each element replaced by callable(element), in place (a Python loop, CPU only, no
        autograd), as torch's."""
        return self._each_(callable, ())

    def map_(self, tensor, callable):  # noqa: A002
        """Each element replaced by callable(element, tensor's element broadcast to self's
        shape), in place, as torch's."""
        other = np.broadcast_to(getattr(tensor, "_array", tensor), self._array.shape)
        return self._each_(callable, (np.ascontiguousarray(other),))

    def _each_(self, fn, others):
        name = "map_" if others else "apply_"
        if self.requires_grad:
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                               f"var.detach().{name}() instead.")
        if ops.core.TRACING[0]:
            raise NotImplementedError(f"Tensor.{name}() calls Python on every element: it "
                                      f"cannot be traced by compile(); call it outside")

        def each(t):
            x = t._array
            values = [fn(*(a.item() for a in items)) for items in
                      zip(x.reshape(-1), *(o.reshape(-1) for o in others))]
            return Tensor(np.asarray(values, dtype=x.dtype).reshape(x.shape))
        return apply_inplace(self, name, each)

    def get_device(self):
        return -1          # NOTE: torch's answer for a CPU tensor

    is_cpu = True

    # -- reductions of truth ----------------------------------------------------------------
    def all(self, dim=None, keepdim=False):
        return _truth(self, "all", dim, keepdim)

    def any(self, dim=None, keepdim=False):
        return _truth(self, "any", dim, keepdim)

    # -- new tensors like this one ----------------------------------------------------------
    def new(self, *args, device=None):
        """The legacy constructor: `x.new(2, 3)` (zeros here; torch leaves memory
        uninitialised), `x.new(data)`, `x.new()` (empty), all in x's dtype."""
        from .factories import tensor, zeros
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            return tensor(getattr(args[0], "_array", args[0]), dtype=self.dtype, device=device)
        return zeros(*(args or (0,)), dtype=self.dtype, device=device)

    def resize_(self, *sizes, memory_format=None):
        """Change the shape in place, keeping the values in storage order; new elements are
        zeros (torch leaves them uninitialised). As torch, not for tensors requiring grad."""
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
            else tuple(sizes)
        n, flat = int(np.prod(shape)), self._array.reshape(-1)
        if n == flat.size:
            self._array = self._array.reshape(shape)
        else:
            new = np.zeros(n, self._array.dtype)
            new[:min(n, flat.size)] = flat[:n]
            self._array = new.reshape(shape)
        return self

    def resize(self, *sizes):
        """Deprecated in torch: the same values in another shape of the same size (a
        reshape), with torch's warning."""
        import warnings
        warnings.warn("non-inplace resize is deprecated", stacklevel=2)
        return self.reshape(*sizes)

    def pin_memory(self, device=None):
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        from .factories import zeros
        return zeros(*size, dtype=dtype or self.dtype, device=device,
                     requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        from .factories import ones
        return ones(*size, dtype=dtype or self.dtype, device=device,
                    requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        from .factories import full
        return full(size, fill_value, dtype=dtype or self.dtype, device=device,
                    requires_grad=requires_grad)

    new_empty = new_zeros

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from .factories import tensor
        return tensor(data, dtype=dtype or self.dtype, device=device,
                      requires_grad=requires_grad)


def in_format(t, order):
    """t itself when its elements lie densely in `order` (dims outermost first), else a copy
    laid out so: a differentiable op, as torch's contiguous() and to(memory_format=)."""
    arr = t._array
    if not isinstance(arr, np.ndarray) or in_order(arr, order):
        return t            # NOTE: a traced value has no layout (compiled results are row-major)
    moved = ops.transpose(t, axes=order, copy=True)
    back = tuple(int(i) for i in np.argsort(order))
    return moved if order == back else ops.transpose(moved, axes=back)


def to_args(args, kwargs):
    """(dtype or None, copy, the meta device or None, memory_format or None) from Tensor.to's positional and keyword
    forms; any other device but the CPU raises."""
    dtype, copy = kwargs.pop("dtype", None), kwargs.pop("copy", False)
    dev = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    flags = []                            # positional non_blocking, then copy
    for a in args:
        if isinstance(a, Tensor):
            dtype = a._array.dtype
        elif _device.is_device_like(a):
            dev = a
        elif isinstance(a, bool):
            flags.append(a)
        else:
            dtype = np.dtype(a)
    copy = copy or (len(flags) > 1 and flags[1])
    if _device.is_meta(dev):
        return dtype, copy, _device.META, fmt
    _device.check(dev)
    return dtype, copy, None, fmt


def _truth(x, how, dim, keepdim):
    """torch.all / torch.any in ops (so compile() traces them): a count of the elements that
    decide; the result is bool, or uint8 for a uint8 input, as torch's."""
    hit = ops.eq(x, 0) if how == "all" else ops.ne(x, 0)
    n = ops.sum(ops.cast(hit, np.dtype(np.int64)), axis=dim, keepdims=keepdim)
    out = ops.eq(n, 0) if how == "all" else ops.gt(n, 0)
    return ops.cast(out, np.dtype(np.uint8)) if x.dtype == np.uint8 else out
