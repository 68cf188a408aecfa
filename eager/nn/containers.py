"""ModuleDict, ParameterList and ParameterDict: containers whose entries are registered.

>>> from dualgrad.eager import nn
>>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "reg": nn.Linear(4, 1)})
>>> sorted(n for n, _ in heads.named_parameters())
['cls.bias', 'cls.weight', 'reg.bias', 'reg.weight']
"""
from __future__ import annotations

from collections import OrderedDict

from .module import Module, Parameter


class ModuleDict(Module):
    """A dict of submodules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, m in items:
            self[key] = m


class ParameterList(Module):
    """A list of Parameters registered as '0', '1', …"""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value):
        value = value if isinstance(value, Parameter) else Parameter(value)
        self.register_parameter(str(len(self._parameters)), value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __setitem__(self, i, value):
        key = list(self._parameters)[i]
        self._parameters[key] = value if isinstance(value, Parameter) else Parameter(value)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())


class ParameterDict(Module):
    """A dict of Parameters registered under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._parameters:      # NOTE: torch's reads it as an attribute
            raise AttributeError(f"'ParameterDict' object has no attribute '{key}'")
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, v in items:
            self[key] = v

    # -- the rest of dict's methods, as torch's ParameterDict has them ------------------------
    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        key = next(reversed(self._parameters))   # NOTE: the last one, as dict.popitem
        return key, self.pop(key)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for key in list(self._parameters):
            del self[key]

    def copy(self):
        """A new ParameterDict holding the same Parameter objects."""
        return ParameterDict(self._parameters.items())

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def __reversed__(self):
        return reversed(self._parameters)


_ = OrderedDict
