"""The meta device: tensors with a shape and a dtype and no values, as PyTorch's `meta`.

Every op on a meta tensor runs only its shape rule (the registry's `infer`): no kernel, no
memory for values. `bind` selects the meta interpreter, `MetaEngine`, by the arguments'
level (eager 0, meta 0.5, graph 1, compile()'s tracer 2), so the Tensor's own methods work
unchanged. Autograd walks the same tape and the gradient rules build meta gradients; an
optimizer step on meta tensors checks the gradients' shapes and changes nothing. A dim may be
symbolic (`eager.Dim("N")`, ops/symbolic.py), and stays symbolic through the ops. Reading
values (`.item()`, `bool()`, `.numpy()`, `.tolist()`, `.to("cpu")`) raises PyTorch's errors.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> N = eager.Dim("N")
>>> x = eager.empty(N, 64, device="meta")
>>> model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).to("meta")
>>> out = model(x)
>>> out.shape, out.device
(torch.Size([N, 10]), device(type='meta'))
>>> out.sum().backward(); model[0].weight.grad.shape
torch.Size([32, 64])
"""
from __future__ import annotations

import numpy as np
from dualgrad.ops.rules import inexact

from dualgrad import ops
from dualgrad.ops.composite import current_composite
from dualgrad.ops.core import ShapeError, Spec, current_trace, fmt_shape, spec_of, user_frame, \
    where_str
from dualgrad.ops.rules import torch_compute_dtype
from dualgrad.ops.symbolic import Dim, SymbolicValueError, as_dim

from . import core as _core
from . import devices as _device
from . import methods as _methods
from .core import Tensor

__all__ = ["MetaTensor", "MetaEngine", "MetaArray", "DataDependentError", "empty", "to_meta",
           "is_meta", "Dim"]

META = _device.device("meta")
NO_DATA = "Cannot copy out of meta tensor; no data!"


class DataDependentError(RuntimeError):
    """Python needs the values of a meta tensor (`bool(t)`, `.item()`): a shape-only run cannot
    decide it. `location` is the user's (file, line)."""


def _needs_values(what, err=DataDependentError):
    loc = user_frame()
    e = err(f"{what} (at {where_str(loc)})")
    e.location = loc
    return e


class _Flags:
    owndata = writeable = True   # NOTE: a meta array may be kept as a .grad as it is


class MetaArray:
    """What a meta tensor's `_array` holds: the shape (dims may be symbolic) and dtype."""
    __slots__ = ("shape", "dtype")
    __array_ufunc__ = None       # NumPy never computes with it
    flags = _Flags()

    def __init__(self, shape, dtype):
        self.shape = tuple(as_dim(d) for d in shape)
        self.dtype = np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n = n * d
        return n

    def astype(self, dtype, **_):
        return MetaArray(self.shape, dtype)

    def copy(self):
        return self      # NOTE: immutable: nothing to copy

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(NO_DATA)

    def __setitem__(self, index, value):
        """A write into a meta tensor writes nothing: there are no values."""

    def __getitem__(self, index):
        raise NotImplementedError(NO_DATA)

    def __repr__(self):
        return f"MetaArray({fmt_shape(self.shape)}, {self.dtype})"


def is_meta(t) -> bool:
    return isinstance(t, Tensor) and type(t._array) is MetaArray


# -- the interpreter ---------------------------------------------------------------------------
def _spec(a, mixed):
    if isinstance(a, Tensor):
        arr = a._array
        if type(arr) is not MetaArray and arr.ndim and not mixed:
            raise RuntimeError(f"Tensor on device cpu is not on the expected device meta! "
                               f"(a cpu tensor of shape {arr.shape} and a meta tensor in one op, "
                               f"at {where_str(user_frame())})")
        return Spec(arr.shape, arr.dtype)
    return spec_of(a)


def _located(op, e):
    """A shape rule's error at the user's line, as eager's `_fail` places a kernel's."""
    loc = user_frame()
    inside = current_composite()
    inside = f"in {inside}, " if inside and not e.args[0].startswith(inside) else ""
    e.args = (f"{e.args[0]} ({inside}at {where_str(loc)})",)
    e.location = loc
    return e


def run(op, args, attrs, mixed=False):
    """One op call on meta tensors: its shape rule, then a meta tensor on the tape."""
    specs = [_spec(a, mixed) for a in args]
    try:
        out = op.infer(*specs, **attrs)
    except ShapeError as e:
        raise _located(op, e) from None
    except SymbolicValueError as e:
        raise _located(op, ShapeError(f"{op.name}: on {', '.join(fmt_shape(s) for s in specs)}: "
                                      f"{e}")) from None
    dtype = _promoted(op, args, specs, out.dtype)
    t = _wrap(MetaArray(out.shape, dtype))
    if _core.EagerEngine.records() and inexact(dtype) and any(
            [isinstance(a, Tensor) and a.requires_grad for a in args]):
        t.requires_grad = True
        t._node = _core.entry(op, args, attrs, _core.CLOCK[0])
    return t


def _promoted(op, args, specs, dtype):
    """PyTorch's result dtype, from the one rule eager casts its operands by (ops.rules)."""
    if dtype.kind == "b":       # NOTE: comparisons give bool whatever their operands' dtype
        return dtype
    want = torch_compute_dtype(op, specs, _core.default_float())
    return dtype if want is None else want


class MetaEngine:
    """The meta device's interpreter: the shape rule only (level 0.5: above eager, so an op
    on a meta tensor and a 0-d cpu tensor is a meta op, as in torch)."""
    level = 0.5

    @staticmethod
    def apply(op, args, attrs):
        return run(op, args, attrs)


def _wrap(arr, requires_grad=False):
    t = object.__new__(MetaTensor)
    t._array, t.grad, t._node, t.requires_grad = arr, None, None, requires_grad
    t._size = None
    return t


# -- the tensor --------------------------------------------------------------------------------
class MetaTensor(Tensor):
    """A Tensor on the meta device: `shape`, `dtype` and autograd, no values."""
    __slots__ = ()
    _engine = MetaEngine
    is_meta, is_cpu = True, False

    @property
    def device(self):
        return META

    def __repr__(self):
        extra = "" if self.dtype == np.float32 else f", dtype={self.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor(..., device='meta', size={fmt_shape(self.shape)}{extra})"

    __str__ = __repr__

    def numpy(self):
        raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to "
                        "copy the tensor to host memory first.")

    def item(self):
        raise _needs_values("Tensor.item() cannot be called on meta tensors: its value is "
                            "needed in Python here, which a shape-only run cannot give")

    __float__ = __int__ = item

    def __index__(self):
        raise _needs_values("a meta tensor used as an index: its value is not known",
                            TypeError)

    def __bool__(self):
        raise _needs_values("Boolean value of a meta tensor: Python control flow on a tensor's "
                            "value (if t, while t, and/or) cannot be decided on shapes")

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    __array__ = tolist

    def cpu(self):
        raise NotImplementedError(NO_DATA)

    def to(self, *args, **kwargs):
        devs = [a for a in args if _device.is_device_like(a)] + [kwargs.get("device")]
        if any([d is not None and not _device.is_meta(d) for d in devs]):
            raise NotImplementedError(NO_DATA)     # NOTE: to("cpu"): there are no values
        dtype, copy, _ = _methods.to_args(args, kwargs)
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self.clone() if copy else self
        return ops.cast(self, dtype)

    def detach(self):
        return _wrap(self._array)

    def clone(self):
        return ops.cast(self, self.dtype) if inexact(self.dtype) else _wrap(self._array)

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        if gradient is None and self.requires_grad:
            if self._array.size != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs; "
                                   f"this output has shape {fmt_shape(self.shape)}")
            gradient = _wrap(self._array)
        return Tensor.backward(self, gradient, retain_graph, create_graph)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return int(self.shape[0])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __reduce__(self):
        raise TypeError("a meta tensor has no values to pickle")


def _bound(op):
    def method(self, other):
        return ops.bind(op, self, other)
    return method


def _rbound(op):
    def method(self, other):
        return ops.bind(op, other, self)
    return method


_R = ops.REGISTRY
for _name, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                   ("pow", "pow"), ("matmul", "matmul")):
    setattr(MetaTensor, f"__{_name}__", _bound(_R[_op]))
    setattr(MetaTensor, f"__r{_name}__", _rbound(_R[_op]))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(MetaTensor, f"__{_name}__", _bound(_R[_name]))
MetaTensor.__neg__ = lambda self: ops.bind(_R["neg"], self)
MetaTensor.__hash__ = object.__hash__


# -- making meta tensors -------------------------------------------------------------------------
def empty(shape, dtype=None, requires_grad=False) -> MetaTensor:
    """A meta tensor of `shape` (ints and `Dim`s) and `dtype` (the default float)."""
    arr = MetaArray(shape, dtype if dtype is not None else _core.default_float())
    if requires_grad and not inexact(arr.dtype):
        raise RuntimeError(f"Only Tensors of floating point and complex dtype can require "
                           f"gradients, got {arr.dtype}")
    return _wrap(arr, requires_grad)


def to_meta(t, dtype=None) -> MetaTensor:
    """`t.to("meta")`: a meta tensor of t's shape (a leaf, keeping requires_grad)."""
    arr = MetaArray(t.shape, dtype if dtype is not None else t.dtype)
    return _wrap(arr, t.requires_grad and t._node is None)


def module_to_meta(module, parameter):
    """`model.to("meta")`: every parameter and buffer keeps its identity and moves to the meta
    device (its values are dropped), as torch's Module.to does; `parameter` is nn.Parameter."""
    for t in list(module.parameters()) + [b for _, b in module.named_buffers()]:
        t._array = MetaArray(t._array.shape, t._array.dtype)
        t.__class__ = _parameter_class(parameter) if isinstance(t, parameter) else MetaTensor
        if t.grad is not None:
            t.grad = to_meta(t.grad)
    return module


_PARAMETER = []


def _parameter_class(Parameter):  # noqa: N803 - the class
    """MetaParameter, made on first use (nn, which defines Parameter, imports eager/core)."""
    if _PARAMETER:
        return _PARAMETER[0]

    class MetaParameter(MetaTensor, Parameter):
        """A Parameter on the meta device (what `model.to("meta")` makes of each)."""
        __slots__ = ()

        def __repr__(self):
            return "Parameter containing:\n" + MetaTensor.__repr__(self)

        __str__ = __repr__
    MetaParameter.__qualname__ = "MetaParameter"
    _PARAMETER.append(MetaParameter)
    return MetaParameter


def from_host(t):
    """A tensor made from host data (factories.from_host): the active check's meta batch, or
    `t` itself when no check runs."""
    take = getattr(current_trace(), "host_data", None)
    return t if take is None else take(t)


_device.META_IMPL.update(to=to_meta, empty=empty, is_meta=is_meta, host=from_host,
                        module=module_to_meta)


def optimizer_step(params) -> bool:
    """An optimizer step over `params` when any of them or their gradients is meta: each
    gradient must have its parameter's shape; nothing changes. False when none is meta."""
    live = [p for p in params if p.grad is not None]
    if not any([type(p._array) is MetaArray or type(p.grad._array) is MetaArray for p in live]):
        return False
    for p in live:
        if tuple(p.grad.shape) != tuple(p.shape):
            raise ShapeError(f"optimizer step: gradient {fmt_shape(p.grad.shape)} does not "
                             f"match its parameter {fmt_shape(p.shape)} (at "
                             f"{where_str(user_frame())})")
    tr = current_trace() if _core.TRACING[0] else None
    if hasattr(tr, "stepped"):
        tr.stepped()
    return True
