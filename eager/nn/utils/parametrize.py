"""nn.utils.parametrize, as torch's: a module's parameter (or buffer) replaced by a function
of new tensors, recomputed on each read.

`register_parametrization(module, "weight", p)` moves the weight to
`module.parametrizations.weight.original` (or `original0`, `original1`, ... when p's
`right_inverse` gives several tensors) and makes `module.weight` a property of a subclass
made for the module (`ParametrizedLinear`), computing p(original); assigning `module.weight`
goes through `right_inverse`. Parametrizations chain; `remove_parametrizations` puts a plain
Parameter back; `cached()` computes each parametrized tensor once inside it.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> class Symmetric(nn.Module):
...     def forward(self, x):
...         return x.triu() + x.triu(1).transpose(-1, -2)
>>> layer = nn.utils.parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all()), type(layer).__name__
(True, 'ParametrizedLinear')
"""
from __future__ import annotations

import contextlib

from ...core import Tensor
from ...grad_mode import no_grad
from ..basic import ModuleList
from ..containers import ModuleDict
from ..module import Module, Parameter

_CACHE = {"depth": 0, "values": {}}


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the original tensor(s) they start
    from (`original`, or `original0`, `original1`, ... for several)."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    new = m.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        rg = original.requires_grad
        if self.is_tensor:
            if isinstance(original, Parameter) and tuple(new.shape) == tuple(original.shape) \
                    and new.dtype == original.dtype:
                original._array[...] = new._array     # NOTE: the same Parameter, as torch's
                self.original = original
            else:
                self._keep("original", original, new, rg)
        else:
            self.ntensors = len(new)
            for i, t in enumerate(new):
                self._keep(f"original{i}", original, t, rg)

    def _keep(self, name, original, value, rg):
        value = value.detach()
        if isinstance(original, Parameter):
            self.register_parameter(name, Parameter(value._array.copy(), requires_grad=rg))
        else:
            self.register_buffer(name, Tensor(value._array.copy()))

    def right_inverse(self, value):
        """Assigning the parametrized tensor: the originals become right_inverse(value)."""
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
                elif not self.unsafe:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       f"right_inverse.")
            values = [value] if self.is_tensor else list(value)
            names = ["original"] if self.is_tensor else [f"original{i}"
                                                        for i in range(self.ntensors)]
            for n, v in zip(names, values):
                getattr(self, n)._array[...] = v._array

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def is_parametrized(module, tensor_name=None):
    found = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(found, ModuleDict):
        return False
    return len(found) > 0 if tensor_name is None else tensor_name in found


def type_before_parametrizations(module):
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def _property(name):
    def get(self):
        key = (id(self), name)
        if _CACHE["depth"]:
            if key not in _CACHE["values"]:
                _CACHE["values"][key] = self.parametrizations[name]()
            return _CACHE["values"][key]
        return self.parametrizations[name]()

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)
    return property(get, set_)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            before = getattr(module, tensor_name)
            after = parametrization(before)
            if tuple(after.shape) != tuple(before.shape) or after.dtype != before.dtype:
                raise ValueError(f"Registering a parametrization may not change the shape or "
                                 f"dtype of the tensor: {tuple(before.shape)} {before.dtype} "
                                 f"became {tuple(after.shape)} {after.dtype}")
        plist.append(parametrization)
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = type(module)
        object.__setattr__(module, "__class__", type(f"Parametrized{cls.__name__}", (cls,), {}))
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _property(tensor_name))
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            original = Parameter(value.detach()._array.copy(),
                                 requires_grad=original.requires_grad) \
                if isinstance(original, Parameter) else Tensor(value.detach()._array.copy())
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach()._array.copy(), requires_grad=value.requires_grad)
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                         "is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        object.__setattr__(module, "__class__", type(module).__bases__[0])
    return module


@contextlib.contextmanager
def cached():
    """Inside it, each parametrized tensor is computed once (and reused until the outermost
    cached() exits), as torch's."""
    _CACHE["depth"] += 1
    try:
        yield
    finally:
        _CACHE["depth"] -= 1
        if not _CACHE["depth"]:
            _CACHE["values"].clear()


__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "type_before_parametrizations", "cached", "ParametrizationList"]
