"""What FullyShardedDataParallel (fsdp.py) and fully_shard (fsdp2.py) share: the identity op
that gathers a unit's parameters again when backward reaches its outputs."""
from __future__ import annotations

from dualgrad import ops
from ..core import Tensor


def _regather_kernel(x, unit):
    return x


def _regather_vjp(g, x, out, needs, unit):
    unit.gather()     # backward has reached the unit: its full parameters are needed again
    return (g,)


# NOTE: not in the registry: an op private to FSDP, an identity whose rule has a side effect
REGATHER = ops.Op("fsdp_pre_backward", lambda spec, unit: spec, _regather_kernel,
                  _regather_vjp)


def mark_outputs(out, unit):
    """The unit's outputs that require grad, through REGATHER (tensors in tuples, lists and
    dicts too)."""
    def mark(t):
        return ops.bind(REGATHER, t, unit=unit) if t.requires_grad else t
    return map_tensors(out, mark)


def map_tensors(x, fn):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (tuple, list)):
        return type(x)(map_tensors(v, fn) for v in x)
    if isinstance(x, dict):
        return type(x)((k, map_tensors(v, fn)) for k, v in x.items())
    return x


def refuse_traced(args, kwargs, what, instead):
    """compile() cannot trace a sharded forward (it gathers and frees parameters)."""
    import numpy as np
    if any(isinstance(a, Tensor) and type(a._array) is not np.ndarray
           for a in (*args, *kwargs.values())):
        raise NotImplementedError(f"compile() cannot trace {what} (its forward gathers and "
                                  f"frees parameters); {instead}")
