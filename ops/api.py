"""The front ends' functions of the registry ops that declare them (`Op.front`).

An op offered unchanged by a front end says so in its entry, `front={"tf": "expm1"}`, and
the front end builds its function here: its name, and its reference's parameter names
(PyTorch's `input`, `other`; TF's `x`, `y`), so `eager.f(input=t)` and `graph.math.f(x=t)`
work as they do in torch and tf.compat.v1. Eager installs the "torch" ones (function, Tensor
method, in-place method), graph the "tf" (top level and `tf.math`) and "tf.math" ones.

>>> from dualgrad import ops
>>> f = ops.api.function(ops.REGISTRY["expm1"], "tf")
>>> f.__name__, str(__import__("inspect").signature(f))
('expm1', '(x)')
"""
from __future__ import annotations

import inspect

from .core import FRONTS, REGISTRY

__all__ = ["FRONTS", "PARAMS", "function", "functions"]

# NOTE: the reference's parameter names by arity: torch.exp(input), torch.atan2(input, other),
# tf.math.expm1(x), tf.math.atan2(y, x) is TF's only binary exception and is not declared
PARAMS = {"torch": ("input", "other"), "tf": ("x", "y"), "tf.math": ("x", "y")}


def arity(op) -> int:
    """How many tensor inputs the op takes (its samples say)."""
    counts = {len(s.args) for s in op.samples}
    if len(counts) != 1:
        raise ValueError(f"{op.name}: front functions need one arity, samples have {counts}")
    return counts.pop()


def function(op, front):
    """The op under its `front` name, taking the reference's parameter names."""
    names = PARAMS[front][:arity(op)]
    if len(names) != arity(op):
        raise ValueError(f"{op.name}: front {front!r} has parameter names for at most "
                         f"{len(PARAMS[front])} inputs, the op takes {arity(op)}")
    sig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                             for n in names])
    fn = op.fn

    def call(*args, **kwargs):
        return fn(*sig.bind(*args, **kwargs).args)
    call.__name__ = call.__qualname__ = op.front[front]
    call.__doc__ = f"The `{op.name}` op (ops.REGISTRY[{op.name!r}]) under {front}'s name."
    call.__signature__ = sig
    call.__wrapped__ = fn
    return call


def functions(front) -> dict:
    """{name: function} of every registry op that declares `front`."""
    return {op.front[front]: function(op, front) for op in REGISTRY.values()
            if front in op.front}
