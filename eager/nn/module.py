"""torch.nn's Module and Parameter (torch.nn.modules.module): every layer in eager.nn is a
Module; the package's `__init__` only re-exports.

>>> from dualgrad.eager import nn
>>> nn.Module is nn.module.Module
True
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Dict, TypeVar

import numpy as np

from dualgrad import ops
from dualgrad.ops.rules import bfloat16 as _bfloat16, inexact
from dualgrad.ops.core import ShapeError, user_frame, where_str
from .. import devices as _device
from ..core import Tensor, printed, zero_grads
from ..size import Size
from ..methods import to_args
from ..devices import META_IMPL
from ..formats import format_order, in_order, laid_out
from . import module_hooks


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter (requires_grad=True by default)."""
    __slots__ = ()
    # NOTE: True on a parameter that holds this rank's rows of a larger one (fully_shard's
    # ShardedParameter): what reduces over whole parameters (clip_grad_norm_) joins the ranks
    sharded = False

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):
            data = data._array
        super().__init__(np.array(data, copy=True), requires_grad)

    def __repr__(self):
        """As torch's: `Parameter containing:` over the tensor's text (a subclass's text is
        wrapped in `Parameter(...)`)."""
        if type(self) is Parameter:
            return "Parameter containing:\n" + printed(self, "tensor(")
        return f"Parameter containing:\nParameter({printed(self, type(self).__name__ + '(')})"


class UninitializedParameter(Parameter):
    """A lazy module's parameter before its first call (torch.nn.UninitializedParameter): it
    has a dtype but no shape yet (reading .shape raises, as torch's); materialize(shape) makes
    it a Parameter of that shape, in place, its values to be drawn by the module."""
    __slots__ = ()

    def __init__(self, requires_grad=True, device=None, dtype=None):
        _device.check(device)
        super().__init__(np.empty((0,), _float() if dtype is None else dtype), requires_grad)

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "Call `forward` to initialize the parameters before accessing "
                           "their attributes.")

    def __repr__(self):
        return "<UninitializedParameter>"

    def materialize(self, shape):
        self._array = np.zeros(tuple(shape), self._array.dtype)
        self.__class__ = Parameter

    def detach(self):
        return self        # NOTE: state_dict() keeps it uninitialized, as torch's lazy modules

    def __repr__(self):
        return "<UninitializedParameter>"


def _name_layer(module, err):
    """Add the line that built the failing layer to a shape error passing out of it.

    The error's own `at FILE:LINE` is the call (`model(x)`); a wrong layer size is written
    where the layer was built (`nn.Linear(64, 10)`), so the message names that line too.
    Only the innermost built-in layer does this, once.
    """
    loc = module.__dict__.get("_loc")
    if loc is None or getattr(err, "layer", None) is not None or module._modules \
            or not type(module).__module__.startswith(__package__):
        return
    err.layer = module
    err.args = (f"{err.args[0]}\n  in layer {type(module).__name__}({module.extra_repr()}) "
                f"created at {where_str(loc)}",) + err.args[1:]


def _overrides(module, method):
    """Whether module's class defines its own `method` (Module's raises)."""
    return getattr(type(module), method) is not getattr(Module, method)


def _uniform(shape, bound, dtype=None):
    return Parameter(ops.generator().uniform(-bound, bound, shape).astype(
        _float() if dtype is None else dtype))


def _redraw(params, bound):
    """Draw each parameter (None skipped) anew in place, uniform in +-bound, in order: what
    torch's reset_parameters does for Linear, convolutions and the recurrent layers."""
    for p in params:
        if p is not None:
            p._array[...] = _uniform(p.shape, bound, p._array.dtype)._array


def _float():
    """The dtype a module's parameters and float buffers are made in: torch's default dtype
    (float32 unless set_default_dtype changed it), as torch's modules make them."""
    from ..core import default_float
    return default_float()


def factory_kwargs(module, device, dtype):
    """A layer's `device=` / `dtype=`, as torch's factory kwargs: the CPU (else torch's
    CPU-only error) and its floating parameters' and buffers' dtype (call it last in
    __init__, once every parameter and buffer exists)."""
    _device.check(device)
    if dtype is not None:
        module.to(dtype)


class IncompatibleKeys(namedtuple("IncompatibleKeys", "missing_keys unexpected_keys")):
    """load_state_dict's result, printed as torch's _IncompatibleKeys."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")

    __str__ = __repr__


# NOTE: counts changes of any module's attributes, flags, buffers or parameters (not their
# values): compile() re-reads its guarded module state only when it moved (signatures.py)
STATE_VERSION = [0]


class Module:
    """Base class: assign Parameters and Modules as attributes and they are registered."""
    dump_patches = call_super_init = False   # NOTE: torch's class flags, at torch's values
    T_destination = TypeVar("T_destination", bound=Dict[str, Any])

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_loc", user_frame())   # the user's line that built it

    def __setattr__(self, name, value):
        STATE_VERSION[0] += 1
        if "_parameters" not in self.__dict__:
            raise AttributeError("call super().__init__() before assigning attributes in a "
                                 "Module's __init__")
        if isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)   # NOTE: its setter (a parametrized weight)
            return
        if name in self._buffers and (value is None or isinstance(value, Tensor)) \
                and not isinstance(value, Parameter):
            self._buffers[name] = value          # `self.mask = ...` updates the buffer
            return
        for d in (self._parameters, self._modules, self._buffers):
            d.pop(name, None)
        if isinstance(value, (Parameter, Module)):
            self.__dict__.pop(name, None)    # NOTE: a plain attribute (None) it replaces
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_modules", "_buffers"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for d in (self._parameters, self._modules, self._buffers):
            if name in d:
                del d[name]
                return
        STATE_VERSION[0] += 1
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor kept with the module but not trained (a running statistic, a causal mask);
        saved in state_dict unless persistent=False."""
        if "." in name or not name:
            raise KeyError(f"buffer name can't contain \".\" or be empty, got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        STATE_VERSION[0] += 1
        nonpersistent = self.__dict__.setdefault("_non_persistent", set())
        (nonpersistent.discard if persistent else nonpersistent.add)(name)

    def register_parameter(self, name, param):
        self._parameters[name] = param
        STATE_VERSION[0] += 1

    def add_module(self, name, module):
        self._modules[name] = module
        STATE_VERSION[0] += 1

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        if ops.core.TRACING[0]:   # NOTE: a compile() trace guards on what this module reads
            tr = ops.core.current_trace()
            if hasattr(tr, "touch"):
                tr.touch(self)
        try:
            if "_hooked" in self.__dict__:
                return module_hooks.call(self, args, kwargs)
            return self.forward(*args, **kwargs)
        except ShapeError as e:
            _name_layer(self, e)
            raise

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) (or (module, args, kwargs)) before each forward; what it returns
        (if not None) replaces the inputs."""
        return module_hooks.add(self, module_hooks.PRE, hook, with_kwargs, prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """hook(module, args, output) (or (module, args, kwargs, output)) after each forward;
        what it returns (if not None) replaces the output."""
        return module_hooks.add(self, module_hooks.POST, hook, with_kwargs, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) when the input's gradient is computed; what it
        returns (if not None) replaces grad_input. One tensor input and output only."""
        return module_hooks.add(self, module_hooks.BACKWARD, hook, False, prepend)

    def register_backward_hook(self, hook):
        raise NotImplementedError("Module.register_backward_hook (deprecated in torch) is not "
                                  "supported by dualgrad; use register_full_backward_hook")

    # -- traversal ----------------------------------------------------------------------------
    # NOTE: as torch's, a module or tensor reachable twice (a layer reused, tied weights) is
    # yielded once, where first reached, unless remove_duplicate=False
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        return (m for _, m in self.named_children())

    def _named_members(self, table, prefix, recurse, remove_duplicate):
        seen = set()
        for mprefix, m in (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                           if recurse else [(prefix, self)]):
            for name, t in m.__dict__[table].items():
                if t is None or id(t) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(t))
                yield (f"{mprefix}.{name}" if mprefix else name), t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        # NOTE: a subclass may override named_parameters(prefix) alone (FSDP does)
        named = self.named_parameters() if recurse else self.named_parameters(recurse=False)
        return (p for _, p in named)

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        named = self.named_buffers() if recurse else self.named_buffers(recurse=False)
        return (b for _, b in named)

    def get_submodule(self, target):
        """The module at the dotted path target ("" is this module), as torch's."""
        m = self
        for i, part in enumerate(target.split(".") if target else ()):
            if not hasattr(m, part):
                raise AttributeError(f"{type(m).__name__} has no attribute `{part}`")
            m = getattr(m, part)
            if not isinstance(m, Module):
                raise AttributeError(f"`{part}` is not an nn.Module")
        return m

    def set_submodule(self, target, module, strict=False):
        """Put module at the dotted path target (its parent must exist)."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        *path, name = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def _get_member(self, target, table, what):
        *path, name = target.split(".")
        m = self.get_submodule(".".join(path))
        if not hasattr(m, name):
            raise AttributeError(f"{type(m).__name__} has no attribute `{name}`")
        if name not in m.__dict__[table]:
            raise AttributeError(f"`{name}` is not {what}")
        return m.__dict__[table][name]

    def get_parameter(self, target):
        return self._get_member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        return self._get_member(target, "_buffers", "a buffer")

    def register_module(self, name, module):
        """Another name for add_module, as torch's."""
        self.add_module(name, module)

    def __dir__(self):
        names = set(super().__dir__())
        for table in ("_parameters", "_modules", "_buffers"):
            names.update(self.__dict__.get(table, ()))
        return sorted(n for n in names if not n[0].isdigit())   # NOTE: Sequential's "0" too

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- state --------------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """name -> detached tensor (the tensors themselves with keep_vars), in torch's order:
        each module's parameters, then its persistent buffers, then its children's; a shared
        (tied) parameter is listed under every name it has, as torch."""
        out = OrderedDict() if destination is None else destination
        self._state_into(out, prefix, keep_vars)
        return out

    def _state_into(self, out, prefix, keep_vars):
        skip = self.__dict__.get("_non_persistent", ())
        for name, v in list(self._parameters.items()) + [
                (n, b) for n, b in self._buffers.items() if n not in skip]:
            if v is not None:
                out[prefix + name] = v if keep_vars else v.detach()
        if _overrides(self, "get_extra_state"):
            out[prefix + "_extra_state"] = self.get_extra_state()
        for name, m in self._modules.items():
            if m is not None:
                m._state_into(out, f"{prefix}{name}.", keep_vars)

    def _extra_state_keys(self, method, prefix=""):
        """"<prefix>_extra_state" -> module, for every module (shared ones under each name, as
        state_dict lists them) whose class defines `method` (get_ or set_extra_state)."""
        out = {prefix + "_extra_state": self} if _overrides(self, method) else {}
        for name, m in self._modules.items():
            if m is not None:
                out.update(m._extra_state_keys(method, f"{prefix}{name}."))
        return out

    def get_extra_state(self):
        """What a subclass that defines it adds to state_dict under "_extra_state" (any object;
        set_extra_state takes it back on load), as torch's. Not defined here."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called: define get_extra_state() in your module to add extra "
                           "state to its state_dict")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called: define set_extra_state() in your module to load the "
                           "extra state its get_extra_state() saved")

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values in place; missing, unexpected or mis-shaped entries are a clear error
        (with strict=False the missing and unexpected keys are returned, as torch's
        `_IncompatibleKeys(missing_keys, unexpected_keys)`)."""
        if assign:
            raise NotImplementedError("load_state_dict(assign=True) is not supported by "
                                      "dualgrad; the values are copied into the parameters")
        setters, getters = (self._extra_state_keys(m) for m in ("set_extra_state",
                                                                 "get_extra_state"))
        own = {k: v for k, v in self.state_dict(keep_vars=True).items() if k not in getters}
        missing = [k for k in list(own) + list(setters) if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own and k not in setters]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               f"missing keys {missing}, unexpected keys {unexpected}")
        values = {k: np.asarray(state_dict[k]._array if isinstance(state_dict[k], Tensor)
                                else state_dict[k]) for k in own if k in state_dict}
        # NOTE: every shape is checked before anything is copied: a failed load leaves the
        # model as it was, never half-loaded.
        values = {k: v for k, v in values.items()
                  if not isinstance(state_dict[k], UninitializedParameter)}
        lazy = {k for k in values if isinstance(own[k], UninitializedParameter)}
        bad = [f"\n\tsize mismatch for {k}: copying a param with shape {Size(v.shape)} from "
               f"checkpoint, the shape in current model is {Size(own[k].shape)}." for k, v in
               values.items() if k not in lazy and v.shape != own[k].shape]
        if bad:   # NOTE: torch's message
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:"
                               + "".join(bad))
        for k in lazy:    # NOTE: a lazy module's parameter takes the checkpoint's shape
            own[k].materialize(values[k].shape)
        for k, v in values.items():
            own[k]._array[...] = v
        for k, m in setters.items():
            if k in state_dict:
                m.set_extra_state(state_dict[k])
        return IncompatibleKeys(missing, unexpected)

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        STATE_VERSION[0] += 1
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Drop every parameter's .grad, or (set_to_none=False) fill the existing ones with
        zeros, as torch."""
        zero_grads(self.parameters(), set_to_none)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    # -- device and dtype ---------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor): casts floating-point parameters
        and buffers (and their gradients) in place, keeping the same Parameter objects;
        to("meta") moves them to the meta device (eager/meta.py), dropping their values."""
        dtype, _, meta, fmt = to_args(args, kwargs)
        if meta is not None:
            META_IMPL["module"](self, Parameter)
        if dtype is not None and not inexact(np.dtype(dtype)):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={np.dtype(dtype)}")
        if fmt is not None:
            self._lay_out(fmt)
        return self._cast(dtype) if dtype is not None else self

    def _lay_out(self, fmt):
        """to(memory_format=...): rank-4 and -5 parameters and buffers (and their gradients)
        laid out in fmt, in place, as torch's Module.to (values unchanged)."""
        for t in list(self.parameters()) + [b for _, b in self.named_buffers()]:
            if t.ndim in (4, 5):
                order = format_order("to", fmt, t.ndim)
                for x in (t, t.grad):
                    if order is not None and x is not None and not in_order(x._array, order):
                        x._array = laid_out(x._array, order)

    def _cast(self, dtype):
        for t in list(self.parameters()) + [b for _, b in self.named_buffers()]:
            if inexact(t._array.dtype) and t._array.dtype != dtype:
                t._array = t._array.astype(dtype)
                if t.grad is not None:
                    t.grad._array = t.grad._array.astype(dtype)
        return self

    def float(self):
        return self._cast(np.dtype(np.float32))

    def double(self):
        return self._cast(np.dtype(np.float64))

    def half(self):
        return self._cast(np.dtype(np.float16))

    def bfloat16(self):
        return self._cast(_bfloat16())

    def type(self, dst_type):
        return self._cast(np.dtype(dst_type))

    def cpu(self):
        return self

    def cuda(self, device=None):
        raise AssertionError(_device.NO_CUDA)

    def extra_repr(self):
        return ""

    def __repr__(self):
        """torch's layout: a one-line extra_repr alone stays inline; otherwise its lines and
        then each child, one per line, indented."""
        extra = self.extra_repr()
        extra = extra.split("\n") if extra else []
        children = [f"({name}): " + repr(m).replace("\n", "\n  ")
                    for name, m in self._modules.items() if m is not None]
        if len(extra) == 1 and not children:
            return f"{type(self).__name__}({extra[0]})"
        lines = extra + children
        return f"{type(self).__name__}(" + ("\n  " + "\n  ".join(lines) + "\n" if lines
                                             else "") + ")"
