"""nn.utils.weight_norm and nn.utils.spectral_norm, torch's hook-based forms: the module's
`weight` becomes a plain tensor recomputed before every forward from new parameters, so it
is differentiated through; `remove_*` puts a Parameter back.

- weight_norm(module, name="weight", dim=0): `weight_g` (the norm of `weight` over every dim
  but `dim`; dim=None: one norm of the whole tensor) and `weight_v` (the direction) replace
  `weight`; weight = weight_v * weight_g / ||weight_v||.
- spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
  `weight_orig` replaces `weight`, buffers `weight_u` / `weight_v` hold the power iteration's
  vectors (one step per training forward, none in eval); weight = weight_orig / sigma with
  sigma = u . (W v), W the weight as a matrix with `dim` (1 for ConvTranspose, else 0) first.

>>> from dualgrad import eager
>>> from dualgrad.eager import nn
>>> layer = nn.utils.spectral_norm(nn.Linear(4, 3))
>>> sorted(layer.state_dict())
['bias', 'weight_orig', 'weight_u', 'weight_v']
"""
from __future__ import annotations

import warnings

from ...core import Tensor
from ...grad_mode import no_grad
from ..module import Parameter


def _hooks(module):
    return module.__dict__.setdefault("_norm_hooks", {})


def _install(module, name, kind, compute):
    """Recompute `name` from its new parameters before each forward (and now)."""
    hooks = _hooks(module)
    if (kind, name) in hooks:
        raise RuntimeError(f"Cannot register two {kind} hooks on the same parameter {name}")
    handle = module.register_forward_pre_hook(lambda m, args: setattr(m, name, compute(m)))
    hooks[kind, name] = (compute, handle)


def _uninstall(module, name, kind):
    """The hook's compute function, after the hook is removed (ValueError if none)."""
    found = _hooks(module).pop((kind, name), None)
    if found is None:
        raise ValueError(f"{kind} of '{name}' not found in {module}")
    found[1].remove()
    return found[0]


def _taken(module, name):
    """The Parameter `name`, taken off the module (a plain attribute takes its place later)."""
    weight = module._parameters.get(name)
    if weight is None:
        raise AttributeError(f"'{type(module).__name__}' object has no parameter '{name}'")
    del module._parameters[name]
    return weight


def _restore(module, name, value, drop):
    for n in drop:
        delattr(module, n)
    if name in module.__dict__:
        del module.__dict__[name]
    module.register_parameter(name, Parameter(value.detach()._array.copy()))


# -- weight_norm -------------------------------------------------------------------------------
def norm_except_dim(v, pow=2, dim=0):  # noqa: A002 - torch's argument name
    """The `pow`-norm of v over every dim but `dim`, kept with size 1 there (dim=-1: over
    all of v, a 0-d tensor)."""
    if dim == -1:
        return v.norm(pow)
    if dim != 0:
        return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)
    return v.contiguous().view(v.shape[0], -1).norm(pow, dim=1).view(
        v.shape[0], *([1] * (v.dim() - 1)))


def weight_norm(module, name="weight", dim=0):
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                  stacklevel=2)
    dim = -1 if dim is None else dim
    for kind, n in _hooks(module):
        if kind == "weight_norm" and n == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    weight = _taken(module, name)
    with no_grad():
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim)._array))
        module.register_parameter(name + "_v", Parameter(weight._array))

    def compute(m):
        v, g = getattr(m, name + "_v"), getattr(m, name + "_g")
        return v * (g / norm_except_dim(v, 2, dim))
    setattr(module, name, compute(module))
    _install(module, name, "weight_norm", compute)
    return module


def remove_weight_norm(module, name="weight"):
    compute = _uninstall(module, name, "weight_norm")
    _restore(module, name, compute(module), (name + "_g", name + "_v"))
    return module


# -- spectral_norm ----------------------------------------------------------------------------
def _as_matrix(weight, dim):
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.reshape(weight.shape[0], -1)


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    from ... import factories
    from .. import functional as F
    from ..layers import _ConvTransposeNd
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    if n_power_iterations <= 0:
        raise ValueError(f"Expected n_power_iterations to be positive, but got "
                         f"n_power_iterations={n_power_iterations}")
    if ("spectral_norm", name) in _hooks(module):
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                           f"{name}")
    weight = _taken(module, name)
    with no_grad():
        h, w = _as_matrix(weight, dim).shape
        dtype = weight.dtype
        u = F.normalize(factories.randn(h, dtype=dtype), dim=0, eps=eps)
        v = F.normalize(factories.randn(w, dtype=dtype), dim=0, eps=eps)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)

    def compute(m, power=None):
        w_orig = getattr(m, name + "_orig")
        u_buf, v_buf = getattr(m, name + "_u"), getattr(m, name + "_v")
        mat = _as_matrix(w_orig, dim)
        if m.training if power is None else power:
            with no_grad():     # NOTE: written into the buffers in place, as torch's out=
                for _ in range(n_power_iterations):
                    v_buf._array[...] = F.normalize(mat.t().mv(u_buf), dim=0, eps=eps)._array
                    u_buf._array[...] = F.normalize(mat.mv(v_buf), dim=0, eps=eps)._array
        u_now, v_now = Tensor(u_buf._array.copy()), Tensor(v_buf._array.copy())
        return w_orig / u_now.dot(mat.mv(v_now))
    _install(module, name, "spectral_norm", compute)
    return module


def remove_spectral_norm(module, name="weight"):
    compute = _uninstall(module, name, "spectral_norm")
    _restore(module, name, compute(module, power=False),
             (name + "_orig", name + "_u", name + "_v"))
    return module


__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
           "norm_except_dim"]
