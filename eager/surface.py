"""eager.Tensor's surface, from one table: every method and operator a Tensor has beyond its
core (eager/core.py: storage, dtype and shape, autograd, the arithmetic and comparison
operators), which function provides it and how it is called.

`SURFACE` lists its rows, lowest priority first (a later row's method of the same name wins;
Tensor's core wins over all of them). A row is a convention and its source:
- `SELF_FIRST`: `x.name(*args, **kw)` is `module.name(x, *args, **kw)` (torch's functions
  that are methods too: `x.addmm(a, b)`, `x.median(0)`); `IF_ABSENT`: the same, for names no
  earlier row gave.
- `BODIES`: methods written as methods, because they read the tensor's own state
  (`retain_grad`, `to`, the in-place index writes, `sort`, `new_zeros`, …), and the
  operators (`x & y`, `x // y`, `2 // x`, …).
- `INPLACE`: `x.name_(*args)` computes `x.name(*args)` and writes it into x, recorded and
  version-checked (eager/inplace.py's `apply_inplace`); `COMPARE_INPLACE` writes a
  comparison's bool result back in x's own dtype (`x.lt_(y)` leaves x float).

>>> from dualgrad import eager
>>> x = eager.tensor([3.0, -1.0])
>>> x.addcmul(x, x, value=2).tolist(), (x > 0).logical_not().tolist()
([21.0, 1.0], [False, True])
"""
from __future__ import annotations

import functools

from dualgrad import ops

from . import (complexes, extra_linalg, extra_pointwise, extra_shaping, functions, inplace,
               methods, pointwise, reductions, shaping)
from .core import CORE_NAMES, Tensor, foreign

SELF_FIRST, IF_ABSENT, BODIES, INPLACE, COMPARE_INPLACE = (
    "self first", "self first if absent", "bodies", "in place", "compare in place")


def self_first(fn):
    """The method form of fn(x, *args, **kw)."""
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn   # NOTE: its signature is fn's (aliases.py reads it)
    return method


def _operator(fn):
    """An operator's body: NotImplemented for an operand torch's operators refuse
    (core.foreign), so Python raises TypeError or tries the operand's reflected method."""
    def op(self, other):
        return NotImplemented if foreign(other) else fn(self, other)
    op.__name__ = op.__qualname__ = getattr(fn, "__name__", "operator")
    return op


def _reflected(fn):
    return _operator(lambda self, other: fn(other, self))


# NOTE: & | ^ ~ are logical on bools (so compile() traces them), bitwise on integers
_AND, _OR, _XOR = (_operator(pointwise.bool_or_bitwise(ops.logical_and, pointwise.bitwise_and)),
                   _operator(pointwise.bool_or_bitwise(ops.logical_or, pointwise.bitwise_or)),
                   _operator(pointwise.bool_or_bitwise(ops.ne, pointwise.bitwise_xor)))

SURFACE = (
    (SELF_FIRST, functions, (
        "mm", "bmm", "dot", "outer", "addmm", "baddbmm", "addcmul", "addcdiv", "diagonal",
        "diag", "kron", "prod", "cumprod", "count_nonzero", "logcumsumexp", "floor", "ceil",
        "round", "trunc", "fix", "frac", "fmod", "remainder", "floor_divide", "true_divide",
        "add", "sub", "mul", "neg", "multiply", "subtract", "negative", "div", "divide",
        "log1p", "expm1", "log2", "log10", "reciprocal", "isnan", "isinf", "isfinite",
        "nan_to_num", "clamp_min", "clamp_max", "lerp", "logical_and", "logical_or",
        "logical_not", "logical_xor", "narrow", "unbind", "roll", "repeat_interleave", "tile",
        "broadcast_to", "take", "masked_select", "nonzero", "argwhere", "scatter_add", "diff", "bincount", "multinomial", "bernoulli")),
    # NOTE: torch's // and % are floor_divide (rounding down) and remainder (the divisor's sign)
    (BODIES, {"__floordiv__": _operator(functions.floor_divide),
              "__rfloordiv__": _reflected(functions.floor_divide),
              "__mod__": _operator(functions.remainder),
              "__rmod__": _reflected(functions.remainder),
              "__and__": _AND, "__or__": _OR, "__xor__": _XOR,
              "__rand__": _AND, "__ror__": _OR, "__rxor__": _XOR,
              "__invert__": pointwise.invert,
              "__lshift__": _operator(pointwise.bitwise_left_shift),
              "__rshift__": _operator(pointwise.bitwise_right_shift),
              "__rlshift__": _reflected(pointwise.bitwise_left_shift),
              "__rrshift__": _reflected(pointwise.bitwise_right_shift)}),
    # NOTE: pointwise's names include the registry ops offered unchanged under torch's names
    (SELF_FIRST, pointwise, tuple(n for n in pointwise.TORCH_NAMES if n != "polygamma")),
    (BODIES, {"polygamma": lambda self, n: pointwise.polygamma(n, self)}),   # x.polygamma(n)
    (SELF_FIRST, reductions, tuple(n for n in reductions.TORCH_NAMES if n != "return_types")),
    (SELF_FIRST, shaping, (
        "select", "tensor_split", "hsplit", "vsplit", "dsplit", "movedim", "moveaxis",
        "swapaxes", "swapdims", "take_along_dim", "rot90", "sum_to_size", "index_add",
        "index_fill", "index_copy", "masked_scatter", "put", "unflatten", "ravel", "fliplr",
        "flipud", "diag_embed", "split_with_sizes", "msort", "index_put", "scatter", "scatter_reduce",
        "unique_consecutive", "unfold", "select_scatter", "slice_scatter", "diagonal_scatter",
        "diagflat")),
    (SELF_FIRST, extra_pointwise, tuple(extra_pointwise.TORCH_NAMES)),
    (SELF_FIRST, extra_shaping, (
        "narrow_copy", "as_strided", "as_strided_scatter", "nonzero_static", "unsafe_chunk",
        "unsafe_split", "addbmm", "renorm", "index_reduce", "histogram")),
    (BODIES, extra_shaping.METHODS),
    (SELF_FIRST, complexes, ("conj", "resolve_conj", "resolve_neg", "conj_physical", "angle")),
    (BODIES, complexes.Parts),   # NOTE: .real and .imag, properties
    (IF_ABSENT, extra_linalg.TORCH, None),   # NOTE: torch's names (inverse is linalg's inv)
    (BODIES, methods.TensorMethods),
    # NOTE: pointwise methods whose result has self's shape: their in-place forms
    (INPLACE, (
        "sin cos tan sinh cosh asin acos atan arcsin arccos arctan asinh acosh atanh arcsinh "
        "arccosh arctanh atan2 arctan2 erf erfinv sign sgn exp2 expm1 log1p log2 log10 logit "
        "xlogy hypot copysign deg2rad rad2deg sinc absolute negative reciprocal rsqrt floor "
        "ceil erfc lgamma digamma round trunc fix frac fmod remainder floor_divide "
        "true_divide divide multiply subtract nan_to_num cumsum cumprod bitwise_and "
        "bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift gcd lcm "
        "heaviside i0 ldexp nextafter polygamma mvlgamma igamma igammac renorm "
        "conj_physical addbmm index_reduce").split()
     + [op.front["torch"] for op in ops.REGISTRY.values() if "torch" in op.front and op.scalar]),
    (BODIES, inplace.MoreInPlace),
    (COMPARE_INPLACE, ("eq ne lt le gt ge greater greater_equal less less_equal not_equal "
                       "logical_and logical_or logical_xor logical_not").split()),
    (BODIES, inplace.InPlaceMixin),
)


def _bodies(source):
    """The methods a table or a class body defines (its own attributes, not object's)."""
    items = source.items() if isinstance(source, dict) else vars(source).items()
    return {n: v for n, v in items if n not in ("__module__", "__qualname__", "__doc__",
                                                "__slots__", "__dict__", "__weakref__")}


def _methods(row, defined):
    kind, source = row[0], row[1]
    if kind == SELF_FIRST:
        return {n: self_first(getattr(source, n)) for n in row[2]}
    if kind == IF_ABSENT:
        return {n: self_first(fn) for n, fn in source.items() if n not in defined}
    if kind == BODIES:
        return _bodies(source)
    if kind == INPLACE:
        return {n + "_": inplace.inplace_of(n) for n in source}
    return {n + "_": inplace.compare_inplace(n) for n in source}


@functools.cache
def table():
    """{method name: the attribute Tensor gets}: every row applied in order (built once)."""
    out = {}
    for row in SURFACE:
        out.update(_methods(row, out))
    return out


def install():
    """Give Tensor every method of the table that its core does not define itself."""
    for name, attr in table().items():
        if name not in CORE_NAMES:
            setattr(Tensor, name, attr)
