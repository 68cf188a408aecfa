"""Activation modules, as torch.nn names them; each calls its functional form.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> nn.LeakyReLU(0.1)(eager.tensor([-1.0, 2.0])).tolist()
[-0.10000000149011612, 2.0]
"""
from __future__ import annotations

import numpy as np

from .module import Module, Parameter, _float, factory_kwargs
from . import functional as F


class _Inplace(Module):
    """An activation with torch's `inplace=` flag (the result written into the input)."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):  # noqa: A002 - torch's argument name
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """max(x, 0)"""
    _fn = staticmethod(F.relu)


class SiLU(_Inplace):
    """x * sigmoid(x)"""
    _fn = staticmethod(F.silu)


class SELU(_Inplace):
    _fn = staticmethod(F.selu)


class _Quiet(_Inplace):
    """An activation whose repr shows no inplace (as torch's Hardswish and Hardsigmoid)."""

    def extra_repr(self):
        return ""


class Hardswish(_Quiet):
    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_Quiet):
    _fn = staticmethod(F.hardsigmoid)


class Mish(_Inplace):
    _fn = staticmethod(F.mish)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):  # noqa: A002
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


class _Alpha(Module):
    """ELU and CELU's options (siblings in torch)."""
    _fn = None

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class ELU(_Alpha):
    _fn = staticmethod(F.elu)


class CELU(_Alpha):
    _fn = staticmethod(F.celu)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        # NOTE: min_value / max_value are torch's deprecated spellings of the same bounds
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        if self.max_val <= self.min_val:
            raise AssertionError("Hardtanh: max_val must be greater than min_val")
        self.inplace = inplace

    def forward(self, input):  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6): a Hardtanh from 0 to 6, as torch's."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):  # noqa: A002
        return F.relu6(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class PReLU(Module):
    """max(x, 0) + weight * min(x, 0): one learnt slope, or one per channel (dim 1)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(num_parameters, init, _float()))
        factory_kwargs(self, device, dtype)

    def reset_parameters(self):
        """Every slope back to init, in place."""
        self.weight._array[...] = self.init

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


def _plain(name, fn, doc):
    return type(name, (Module,), {"forward": lambda self, input: fn(input), "__doc__": doc,
                                  "__module__": __name__})


Softsign = _plain("Softsign", F.softsign, "x / (1 + |x|)")
LogSigmoid = _plain("LogSigmoid", F.logsigmoid, "log(sigmoid(x))")
Tanhshrink = _plain("Tanhshrink", F.tanhshrink, "x - tanh(x)")


class _Lambd(Module):
    """Hardshrink and Softshrink's option (siblings in torch)."""
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Hardshrink(_Lambd):
    """x where |x| > lambd, else 0."""
    _fn = staticmethod(F.hardshrink)


class Softshrink(_Lambd):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""
    _fn = staticmethod(F.softshrink)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, -3)
