"""Reader rules for elementwise math, logic, casts, constants and reductions.

A rule is `(reader, node, input values, attrs) -> list of output values`; an input value is
a NumPy array when known while reading (then the ops compute it at once, with their
kernels) or a graph tensor. Compositions use the registry's ops only.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .values import partial, static

F32 = np.float32


def arg(r, v):
    """v as an op argument: a known array stays an array (the op computes it at once)."""
    return v if static(v) and not partial(v) else r.tensor(v)


def lift(fn):
    """A rule applying `fn` to every input (known arrays compute at once)."""
    def rule(r, node, ins, at):
        return [fn(*[arg(r, v) for v in ins])]
    return rule


def scalar(x, value):
    """`value` as a 0-d array of x's dtype (TF1-style graphs do not mix dtypes)."""
    return np.asarray(value, dtype=x.dtype)


# -- elementwise --------------------------------------------------------------------------------
_PY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "div": lambda a, b: a // b}


def shape_arith(r, node, name, ins):
    """+, -, *, / on shape values with unknown (None) dims: None wherever one is None."""
    a, b = np.broadcast_arrays(*ins)
    return np.array([None if x is None or y is None else _PY[name](x, y)
                     for x, y in zip(a.ravel(), b.ravel())], object).reshape(a.shape)


def _arith(name):
    fn = getattr(ops, name)

    def rule(r, node, ins, at):
        if all(static(v) for v in ins) and any(partial(v) for v in ins):
            return [shape_arith(r, node, name, ins)]
        return [fn(*[arg(r, v) for v in ins])]
    return rule


def _trunc_div(a, b):
    """Integer division rounding toward zero (C's, ONNX's)."""
    q = ops.floordiv(a, b)
    inexact = ops.ne(ops.floormod(a, b), scalar(a, 0))
    signs = ops.ne(ops.lt(a, scalar(a, 0)), ops.lt(b, scalar(b, 0)))
    return ops.where(ops.logical_and(inexact, signs), q + scalar(q, 1), q)


def _div(r, node, ins, at):
    a, b = ins
    if static(a) and static(b) and (partial(a) or partial(b)):
        return [shape_arith(r, node, "div", ins)]
    a, b = arg(r, a), arg(r, b)
    if np.dtype(a.dtype).kind in "iu":
        return [_trunc_div(a, b)]
    return [ops.div(a, b)]


def _mod(floats_floor):
    """Mod: fmod=0 rounds the quotient down (Python's %), which versions before 28 allow
    for integers only; fmod=1 truncates it (C's fmod)."""
    def rule(r, node, ins, at):
        return [_mod_of(r, node, arg(r, ins[0]), arg(r, ins[1]), at, floats_floor)]
    return rule


def _mod_of(r, node, a, b, at, floats_floor):
    if at.get("fmod", 0):
        return ops.truncatemod(a, b)
    if np.dtype(a.dtype).kind == "f" and not floats_floor:
        r.fail(node, "Mod with fmod=0 on floating inputs is invalid before version 28")
    return ops.floormod(a, b)


def _pow(r, node, ins, at):
    x, y = arg(r, ins[0]), arg(r, ins[1])
    if np.dtype(x.dtype).kind in "iu" and np.dtype(y.dtype).kind == "f":
        out = ops.pow(ops.cast(x, "float64"), ops.cast(y, "float64"))
        return [ops.cast(out, np.dtype(x.dtype).name)]
    if np.dtype(y.dtype).kind in "iu" and np.dtype(y.dtype) != np.int64 and not static(y):
        # NOTE: a fused pow of a float cast from int32 segfaults inside numba (reported)
        r.fail(node, f"an {np.dtype(y.dtype).name} exponent tensor (the compiled pow kernel "
                     f"fails on it; cast it to int64 or float first)")
    return [ops.pow(x, ops.cast(y, np.dtype(x.dtype).name))]


def _variadic(fn, mean=False):
    def rule(r, node, ins, at):
        out = arg(r, ins[0])
        for v in ins[1:]:
            out = fn(out, arg(r, v))
        return [out / scalar(out, len(ins)) if mean else out]
    return rule


def unary(fn):
    """A rule for a float function of one input, `fn(x, at)`."""
    def rule(r, node, ins, at):
        return [fn(arg(r, ins[0]), at)]
    return rule


def _c(x, v):
    return scalar(x, v)


UNARY = {
    "Tan": lambda x, at: ops.sin(x) / ops.cos(x),
    "Atan": lambda x, at: ops.atan2(x, ops.ones_like(x)),
    "Asin": lambda x, at: ops.atan2(x, ops.sqrt(_c(x, 1) - x * x)),
    "Acos": lambda x, at: ops.atan2(ops.sqrt(_c(x, 1) - x * x), x),
    "Sinh": lambda x, at: (ops.exp(x) - ops.exp(-x)) * _c(x, 0.5),
    "Cosh": lambda x, at: (ops.exp(x) + ops.exp(-x)) * _c(x, 0.5),
    "Asinh": lambda x, at: ops.log(x + ops.sqrt(x * x + _c(x, 1))),
    "Acosh": lambda x, at: ops.log(x + ops.sqrt(x * x - _c(x, 1))),
    "Atanh": lambda x, at: ops.log((_c(x, 1) + x) / (_c(x, 1) - x)) * _c(x, 0.5),
    "Reciprocal": lambda x, at: _c(x, 1) / x,
    "Softsign": lambda x, at: x / (_c(x, 1) + ops.abs(x)),
    "Elu": lambda x, at: ops.where(ops.gt(x, _c(x, 0)), x,
                                   _c(x, at.get("alpha", 1.0)) * ops.expm1(x)),
    "Celu": lambda x, at: ops.maximum(x, _c(x, 0)) + ops.minimum(
        _c(x, 0), _c(x, at.get("alpha", 1.0)) * ops.expm1(x / _c(x, at.get("alpha", 1.0)))),
    "Selu": lambda x, at: _c(x, at.get("gamma", 1.0507009873554805)) * ops.where(
        ops.gt(x, _c(x, 0)), x, _c(x, at.get("alpha", 1.6732632423543772)) * ops.expm1(x)),
    "LeakyRelu": lambda x, at: ops.where(ops.ge(x, _c(x, 0)), x,
                                         x * _c(x, at.get("alpha", 0.01))),
    "ThresholdedRelu": lambda x, at: ops.where(ops.gt(x, _c(x, at.get("alpha", 1.0))), x,
                                               _c(x, 0)),
    "HardSigmoid": lambda x, at: ops.maximum(_c(x, 0), ops.minimum(
        _c(x, 1), x * _c(x, at.get("alpha", 0.2)) + _c(x, at.get("beta", 0.5)))),
    "HardSwish": lambda x, at: x * ops.maximum(_c(x, 0), ops.minimum(
        _c(x, 1), x * _c(x, 1 / 6) + _c(x, 0.5))),
    "Mish": lambda x, at: x * ops.tanh(ops.softplus(x)),
    "Swish": lambda x, at: x * ops.sigmoid(x * _c(x, at.get("alpha", 1.0))),
    "Gelu": lambda x, at: ops.gelu(x, approximate=at.get("approximate", "none")),
    "Shrink": lambda x, at: ops.where(
        ops.lt(x, _c(x, -at.get("lambd", 0.5))), x + _c(x, at.get("bias", 0.0)),
        ops.where(ops.gt(x, _c(x, at.get("lambd", 0.5))), x - _c(x, at.get("bias", 0.0)),
                  _c(x, 0))),
    "IsNaN": lambda x, at: ops.ne(x, x),
    "Not": lambda x, at: ops.logical_not(x),
}


def _isinf(x, at):
    inf = ops.eq(ops.abs(x), _c(x, np.inf))
    if not at.get("detect_positive", 1):
        return ops.logical_and(inf, ops.lt(x, _c(x, 0)))
    if not at.get("detect_negative", 1):
        return ops.logical_and(inf, ops.gt(x, _c(x, 0)))
    return inf


def _xor(a, b):
    return ops.ne(a, b)


def _prelu(r, node, ins, at):
    x, s = arg(r, ins[0]), arg(r, ins[1])
    return [ops.where(ops.lt(x, _c(x, 0)), x * s, x)]


def _clip_6(r, node, ins, at):
    x = arg(r, ins[0])
    lo, hi = at.get("min", -np.inf), at.get("max", np.inf)
    return [ops.minimum(ops.maximum(x, _c(x, lo)), _c(x, hi))]


def _clip_11(r, node, ins, at):
    x = arg(r, ins[0])
    for k, fn in ((1, ops.maximum), (2, ops.minimum)):
        if len(ins) > k and ins[k] is not None:
            x = fn(x, arg(r, ins[k]))
    return [x]


def _where(r, node, ins, at):
    return [ops.where(*[arg(r, v) for v in ins])]


# -- casts and constants ----------------------------------------------------------------------
def _cast_to(r, node, v, dt):
    if static(v):
        return v if partial(v) and dt.kind in "iu" else v.astype(dt)
    if np.dtype(v.dtype) == dt:
        return v
    return ops.cast(v, dt.name)


def _cast(r, node, ins, at):
    to = at.get("to")
    if isinstance(to, str):                      # NOTE: version 1 names the type
        to = r.onnx.TensorProto.DataType.Value(to.upper())
    if at.get("round_mode", "up") != "up":
        r.fail(node, f"round_mode={at['round_mode']!r} (for 4-bit floats)")
    return [_cast_to(r, node, ins[0], r.dtype(to, node, "attribute 'to'"))]


def _cast_like(r, node, ins, at):
    return [_cast_to(r, node, ins[0], np.dtype(ins[1].dtype if not partial(ins[1])
                                                 else np.int64))]


def _constant(r, node, ins, at):
    if "value" in at:
        return [np.asarray(at["value"])]
    for k, dt in (("value_float", np.float32), ("value_floats", np.float32),
                  ("value_int", np.int64), ("value_ints", np.int64)):
        if k in at:
            return [np.asarray(at[k], dt)]
    r.fail(node, f"constant attribute {sorted(at)} is not supported")


# -- reductions -----------------------------------------------------------------------------
def axes_attr(r, node, ins, at, k=1):
    if "axes" in at:
        return [int(a) for a in at["axes"]]
    return None


def axes_input(r, node, ins, at, k=1):
    if len(ins) > k and ins[k] is not None:
        return [int(a) for a in r.ints(ins[k], "axes", node)]
    return None


def _sum_sq(x, axis, keepdims):
    return ops.sum(x * x, axis=axis, keepdims=keepdims)


REDUCERS = {
    "ReduceSum": ops.sum, "ReduceMean": ops.mean, "ReduceMax": ops.max, "ReduceMin": ops.min,
    "ReduceProd": ops.prod, "ReduceSumSquare": _sum_sq,
    "ReduceL1": lambda x, axis, keepdims: ops.sum(ops.abs(x), axis=axis, keepdims=keepdims),
    "ReduceL2": lambda x, axis, keepdims: ops.sqrt(_sum_sq(x, axis, keepdims)),
    "ReduceLogSum": lambda x, axis, keepdims: ops.log(ops.sum(x, axis=axis,
                                                              keepdims=keepdims)),
    "ReduceLogSumExp": lambda x, axis, keepdims: ops.logsumexp(x, axis=axis,
                                                               keepdims=keepdims),
}


# NOTE: no axes with noop_with_empty_axes: the elementwise part runs, nothing is reduced (as
# onnx's reference implementation and onnxruntime compute it)
NOOP = {"ReduceL1": ops.abs, "ReduceL2": ops.abs, "ReduceSumSquare": lambda x: x * x,
        "ReduceLogSum": ops.log}


def reduce(op_type, axes_of):
    fn = REDUCERS[op_type]

    def rule(r, node, ins, at):
        x = arg(r, ins[0])
        axes = axes_of(r, node, ins, at)
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return [NOOP.get(op_type, lambda v: v)(x)]
            axes = None
        keep = bool(at.get("keepdims", 1))
        if 0 in x.shape and op_type in ("ReduceMax", "ReduceMin", "ReduceLogSumExp"):
            r.fail(node, "reducing an empty tensor to the identity of max/min")
        if np.dtype(x.dtype) == np.bool_ and op_type in ("ReduceMax", "ReduceMin"):
            y = fn(ops.cast(x, "int32"), axis=None if axes is None else tuple(axes),
                   keepdims=keep)
            return [ops.cast(y, "bool")]
        return [fn(x, axis=None if axes is None else tuple(axes), keepdims=keep)]
    return rule


def _arg(largest):
    def rule(r, node, ins, at):
        x = arg(r, ins[0])
        axis, keep = at.get("axis", 0), bool(at.get("keepdims", 1))
        if at.get("select_last_index", 0):
            nd = len(x.shape)
            a = axis % nd
            flipped = ops.flip(x, a)
            i = ops.argmax(flipped if largest else -flipped, axis=a, keepdims=keep)
            return [scalar(i, x.shape[a] - 1) - i]
        fn = ops.argmax if largest else ops.argmin
        return [fn(x, axis=axis, keepdims=keep)]
    return rule


def _cumulative(fn, one):
    def rule(r, node, ins, at):
        x = arg(r, ins[0])
        a = int(r.ints(ins[1], "axis", node)[0]) % len(x.shape)
        if at.get("reverse", 0):
            x = ops.flip(x, a)
        if at.get("exclusive", 0):
            pw = [(0, 0)] * len(x.shape)
            pw[a] = (1, 0)
            index = (slice(None),) * a + (slice(0, x.shape[a]),)
            x = ops.slice_(ops.pad(x, tuple(pw), value=one), index=index)
        y = fn(x, axis=a)
        return [ops.flip(y, a) if at.get("reverse", 0) else y]
    return rule


def primitive_for(op_type):
    """The primitive whose registry entry names ONNX operator `op_type` (`onnx=`), or None."""
    for name, op in ops.REGISTRY.items():
        if op.onnx == op_type:
            return name
    return None


def direct(name):
    """The rule applying registry primitive `name` to the node's inputs."""
    op = ops.REGISTRY[name]
    return lift(op.fn or getattr(ops, op.name))


def _direct(op_type):
    return direct(primitive_for(op_type))


_DIRECT = ("Neg", "Abs", "Exp", "Log", "Sqrt", "Tanh", "Sigmoid", "Sin", "Cos", "Erf", "Sign",
           "Floor", "Ceil", "Round", "Relu", "Softplus", "Equal", "Less", "LessOrEqual",
           "Greater", "GreaterOrEqual", "MatMul")

TABLE = {
    **{k: {1: _direct(k)} for k in _DIRECT},
    "Add": {1: _arith("add")}, "Sub": {1: _arith("sub")}, "Mul": {1: _arith("mul")},
    "Div": {1: _div}, "Mod": {10: _mod(False), 28: _mod(True)}, "Pow": {1: _pow},
    "Max": {1: _variadic(ops.maximum)}, "Min": {1: _variadic(ops.minimum)},
    "Sum": {1: _variadic(ops.add)}, "Mean": {1: _variadic(ops.add, mean=True)},
    **{k: {1: unary(fn)} for k, fn in UNARY.items()},
    "IsInf": {10: unary(_isinf)}, "And": {1: lift(ops.logical_and)},
    "Or": {1: lift(ops.logical_or)}, "Xor": {1: lift(_xor)},
    "PRelu": {1: _prelu}, "Clip": {1: _clip_6, 11: _clip_11}, "Where": {9: _where},
    "Cast": {1: _cast}, "CastLike": {15: _cast_like}, "Constant": {1: _constant},
    **{k: {1: reduce(k, axes_attr), 18: reduce(k, axes_input)} for k in REDUCERS},
    "ArgMax": {1: _arg(True)}, "ArgMin": {1: _arg(False)},
    "CumSum": {11: _cumulative(ops.cumsum, 0)}, "CumProd": {26: _cumulative(ops.cumprod, 1)},
}
TABLE["ReduceSum"] = {1: reduce("ReduceSum", axes_attr), 13: reduce("ReduceSum", axes_input)}
