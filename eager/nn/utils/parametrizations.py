"""nn.utils.parametrizations.weight_norm and spectral_norm, torch's parametrization forms
(what `nn.utils.weight_norm`'s FutureWarning points to): the weight becomes
`parametrizations.weight.original0` / `original1` (g and v), or `.original` with the power
iteration's `_u` / `_v` buffers in `parametrizations.weight.0`, through parametrize.py.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> layer = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
>>> sorted(layer.state_dict())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from ...grad_mode import no_grad
from ..module import Module
from . import parametrize
from .norms import norm_except_dim


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        from ... import factories
        from .. import functional as F
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)
            h, w = mat.shape
            self.register_buffer("_u", F.normalize(factories.randn(h, dtype=weight.dtype), dim=0,
                                                   eps=eps))
            self.register_buffer("_v", F.normalize(factories.randn(w, dtype=weight.dtype), dim=0,
                                                   eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.flatten(1)

    def _power_method(self, mat, n):
        from .. import functional as F
        with no_grad():     # NOTE: the buffers written in place, as torch's out=
            for _ in range(n):
                self._u._array[...] = F.normalize(mat.mv(self._v), dim=0, eps=self.eps)._array
                self._v._array[...] = F.normalize(mat.mH.mv(self._u), dim=0,
                                                  eps=self.eps)._array

    def forward(self, weight):
        from .. import functional as F
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / u.dot(mat.mv(v))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    from ..layers import _ConvTransposeNd
    weight = getattr(module, name, None)
    if weight is None or not hasattr(weight, "ndim"):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


__all__ = ["weight_norm", "spectral_norm"]
