"""Op functions with TF's names and argument conventions, each a call into ops/.

Every function takes TF's `name=` argument: the result node gets that name and the nodes
a composite builds on the way go under `name/`. Axis arguments follow TF (`axis`,
`keepdims`, `perm`); dtypes may be graph dtypes, NumPy dtypes or strings.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 4), name="x")
>>> m = graph.reduce_mean(x, axis=1, name="row_mean")
>>> m.name, m.shape
('row_mean:0', TensorShape([None]))
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, fmt_shape, located, tracing
from dualgrad.ops.rules import mirrored, norm_axis

from .core import (GraphEngine, Tensor, check_tf1_types, constant, truediv as _truediv,
                   convert_to_tensor, convert_n_to_tensor, get_default_graph, graph_op,
                   python_array)
from .array_ops import dynamic_reshape, identity, where_indices
from .dtypes import as_dtype
from .naming import _named_call, named, with_keywords

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "pow", "negative", "abs", "exp",
    "log", "sqrt", "rsqrt", "square", "tanh", "sigmoid", "sign", "erf", "maximum", "minimum",
    "where", "where_v2", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
    "logical_not", "logical_and", "logical_or", "matmul", "reduce_sum", "reduce_mean",
    "reduce_max", "reduce_min", "reduce_logsumexp", "argmax", "argmin", "arg_max", "arg_min", "reshape",
    "transpose", "concat", "stack", "split", "expand_dims", "squeeze", "cast", "one_hot",
    "gather", "pad", "zeros_like", "ones_like", "random_normal",
    "random_uniform", "truncated_normal", "global_norm", "clip_by_global_norm", "clip_by_norm", "set_random_seed", "get_seed", "stop_gradient", "clip_by_value", "broadcast_to", "named", "sin", "cos",
    "cumsum", "cumprod", "reverse", "tile", "norm", "log1p", "reciprocal", "floor", "ceil",
    "round", "floordiv", "floor_div", "floormod", "mod", "squared_difference", "add_n",
    "reduce_prod", "reduce_all", "reduce_any", "count_nonzero", "is_nan", "is_inf",
    "is_finite", "newaxis", "l2_normalize", "to_float", "to_double", "to_int32", "to_int64",
    "div", "realdiv", "floor_mod", "reduce_euclidean_norm", "truncatediv", "truncatemod",
    "div_no_nan", "logical_xor", "roll",
]

newaxis = None


def old_names(**renamed):
    """Accept TF1's deprecated argument names (`reduction_indices=` for axis, `keep_dims=`
    for keepdims, `dim=` …) as TF1 still did; giving both names raises, as in TF."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            for old, new in renamed.items():
                if old in kw:
                    if kw.get(new) is not None:
                        raise ValueError(f"{fn.__name__}: cannot specify both '{old}' and "
                                         f"'{new}'")
                    kw[new] = kw.pop(old)
            return fn(*args, **kw)
        return with_keywords(wrapper, *renamed)
    return deco


_AXIS = {"reduction_indices": "axis", "keep_dims": "keepdims"}


# -- elementwise ---------------------------------------------------------------------------------
add, subtract, multiply = (named(f) for f in (ops.add, ops.sub, ops.mul))
divide = truediv = named(_truediv)
pow, maximum, minimum = named(ops.pow), named(ops.maximum), \
    named(ops.minimum)  # noqa: A001
negative, abs, exp, log, sqrt, tanh, sigmoid, sign, erf = (  # noqa: A001
    named(f) for f in (ops.neg, ops.abs, ops.exp, ops.log, ops.sqrt, ops.tanh, ops.sigmoid,
                       ops.sign, ops.erf))
equal, not_equal, greater, greater_equal, less, less_equal = (
    named(f) for f in (ops.eq, ops.ne, ops.gt, ops.ge, ops.lt, ops.le))
stop_gradient = named(ops.stop_gradient)
sin, cos = named(ops.sin), named(ops.cos)


@named
def cumsum(x, axis=0, exclusive=False, reverse=False):
    """tf.math.cumsum: the running sum along `axis`; `exclusive` leaves out each element's
    own value (the first is 0), `reverse` runs from the end:
    cumsum([a, b, c], exclusive=True, reverse=True) is [b + c, c, 0]."""
    return _scan(ops.cumsum, 0, x, axis, exclusive, reverse, "cumsum")


@named
def cumprod(x, axis=0, exclusive=False, reverse=False):
    """tf.math.cumprod: the running product along `axis`, with `exclusive` (the first is 1)
    and `reverse` as cumsum's. Its gradient is TF's (divides by x: inf/nan at zeros)."""
    return _scan(ops.cumprod, 1, x, axis, exclusive, reverse, "cumprod")


def _scan(op, unit, x, axis, exclusive, reverse, what):
    x = convert_to_tensor(x)
    if x.ndim is None:
        raise located(f"{what}: the input's rank must be known")
    if not isinstance(axis, (int, np.integer)):
        raise NotImplementedError(f"{what}: axis must be a Python int, got {axis!r}")
    ax = norm_axis(what, int(axis), x.ndim, x.shape)
    y = op(ops.reverse(x, ax) if reverse else x, ax)
    if exclusive:   # shift one step along the axis, the unit in front
        pads = [(1, 0) if i == ax else (0, 0) for i in range(x.ndim)]
        keep = tuple(slice(None, -1) if i == ax else slice(None) for i in range(x.ndim))
        y = ops.getitem(ops.pad(y, pads, value=unit), keep)
    return ops.reverse(y, ax) if reverse else y


@named
def reverse(tensor, axis):
    """Reverse along each axis in `axis` (tf.reverse)."""
    for a in (axis,) if isinstance(axis, int) else axis:
        tensor = ops.flip(tensor, a)
    return tensor


@named
def tile(input, multiples):  # noqa: A002 - TF's argument name
    return ops.tile(input, multiples)


@named
@old_names(keep_dims="keepdims")
def norm(tensor, ord="euclidean", axis=None, keepdims=False):  # noqa: A002
    """tf.norm: over a vector axis (or all elements) ord 'euclidean'/2, 1 or np.inf; over a
    pair of axes (a matrix) 'euclidean'/'fro', 1 (max column sum) or np.inf (max row sum)."""
    pair = isinstance(axis, (list, tuple)) and len(axis) == 2
    if pair and ord in (1, np.inf):
        rows, cols = (int(a) for a in axis)
        inner, outer = (rows, cols) if ord == 1 else (cols, rows)
        out = ops.max(_sum_keeping_dtype(ops.abs(tensor), inner, True), axis=outer,
                      keepdims=True)
        return out if keepdims else ops.squeeze(out, axis=tuple(sorted((rows, cols))))
    if ord in ("euclidean", "fro", 2) and (ord != "fro" or pair) and (ord != 2 or not pair):
        return ops.norm(tensor, ord=2, axis=axis, keepdims=bool(keepdims))
    if ord == 1 and not pair:
        return _sum_keeping_dtype(ops.abs(tensor), axis, bool(keepdims))
    if ord == np.inf and not pair:
        return ops.max(ops.abs(tensor), axis=axis, keepdims=bool(keepdims))
    raise ValueError(f"norm: ord {ord!r} is not supported for axis {axis!r} (vectors: "
                     f"'euclidean', 1, 2, np.inf; matrices: 'euclidean', 'fro', 1, np.inf)")


rsqrt = named(ops.rsqrt)


@named
def square(x):
    check_tf1_types("square", x)   # NOTE: ops.square is x * x, and `*` of bools is an and
    return ops.square(x)


def where(condition, x=None, y=None, name=None):
    """tf.compat.v1.where: elements of x where condition, else of y; a 1-d condition with
    higher-rank x picks whole rows (TF1's rule, not broadcasting). Without x and y: the
    (N, rank) int64 coordinates of the True elements."""
    if x is None and y is None:
        return where_indices(condition, name=name)
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or neither")
    return _where(condition, x, y, name=name)


@named
def _where(condition, x, y):
    c = convert_to_tensor(condition)
    xs, ys = _operand_shape(x), _operand_shape(y)
    _check_select(tuple(c.shape), xs, ys)
    if len(c.shape) == 1 and len(xs) > 1:
        c = ops.reshape(c, (-1,) + (1,) * (len(xs) - 1))
    return ops.where(c, x, y)


def where_v2(condition, x=None, y=None, name=None):
    """tf.where_v2 (TF2's where): condition, x and y broadcast against each other; without
    x and y, the coordinates of the True elements, as where."""
    if x is None and y is None:
        return where(condition, name=name)
    return _select_v2(condition, x, y, name=name)


_select_v2 = named(ops.where)   # TF's SelectV2 (tf_names)


def _operand_shape(v):
    return tuple(v.shape) if isinstance(v, Tensor) else np.shape(v)


def _compatible(a, b):
    return len(a) == len(b) and all(p is None or q is None or p == q for p, q in zip(a, b))


def _check_select(cs, xs, ys):
    """TF1's Select: x and y of one shape; the condition a scalar, of x's shape, or 1-d over
    x's first dim. It does not broadcast (tf.where_v2 does)."""
    if not _compatible(xs, ys):
        raise located(f"where: x and y must have the same shape in TF1's where, got "
                         f"{fmt_shape(xs)} and {fmt_shape(ys)}; tf.where_v2 broadcasts")
    if cs == () or _compatible(cs, xs) or (len(cs) == 1 and len(xs) > 1 and
                                           _compatible(cs, xs[:1])):
        return
    raise located(f"where: condition {fmt_shape(cs)} must be a scalar, of x's shape "
                     f"{fmt_shape(xs)} or 1-d over its first dim in TF1's where (it does not "
                     f"broadcast); tf.where_v2 broadcasts")


logical_not, logical_and, logical_or = (
    named(f) for f in (ops.logical_not, ops.logical_and, ops.logical_or))


@named
def cast(x, dtype):
    dt = as_dtype(dtype)
    if isinstance(x, Tensor) and x.dtype == dt:
        return x
    return ops.cast(convert_to_tensor(x), dt)


def global_norm(t_list, name=None):
    """sqrt of the sum of squares of every element of the tensors (None entries skipped)."""
    parts = [ops.sum(t * t) for t in t_list if t is not None]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return ops.sqrt(total)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(the tensors scaled by clip_norm / max(global_norm, clip_norm), global_norm), as
    tf.clip_by_global_norm; None entries stay None."""
    norm = global_norm(t_list) if use_norm is None else use_norm
    scale = clip_norm * ops.minimum(1.0 / norm, 1.0 / clip_norm)
    return [None if t is None else t * scale for t in t_list], norm


@named
def clip_by_norm(t, clip_norm, axes=None):
    """t * clip_norm / max(l2norm(t), clip_norm) (over `axes`, all by default)."""
    norm = ops.sqrt(ops.sum(t * t, axis=axes, keepdims=True))
    return t * clip_norm / ops.maximum(norm, clip_norm)


@named
def clip_by_value(t, clip_value_min, clip_value_max):
    return ops.clamp(t, clip_value_min, clip_value_max)


log1p, floor, ceil, round = (  # noqa: A001 - TF's names
    named(f) for f in (ops.log1p, ops.floor, ops.ceil, ops.round))   # NOTE: round: half to even
floordiv, floor_div = named(ops.floordiv), named(ops.floordiv)   # TF: floordiv, FloorDiv
floormod = mod = named(ops.floormod)


@named
def reciprocal(x):
    """1 / x (tf.math.reciprocal) for floating tensors."""
    x = convert_to_tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"reciprocal: expects a floating tensor, got {x.dtype.name} ('{x.name}'); "
                        f"cast it first")
    return ops.div(1.0, x)


def to_float(x, name="ToFloat"):
    return cast(x, np.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, np.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, np.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, np.int64, name=name)


@named
def div(x, y):
    """tf.div: Python 2's division: floor division for integers, true division for floats."""
    x = convert_to_tensor(x) if not isinstance(y, Tensor) else x
    kinds = {np.dtype(t.dtype).kind for t in (x, y) if isinstance(t, Tensor)}
    return ops.floordiv(x, y) if kinds <= set("iu") else _truediv(x, y)


@named
def realdiv(x, y):
    """x / y for floating tensors (tf.realdiv)."""
    if any(isinstance(t, Tensor) and t.dtype.kind != "f" for t in (x, y)):
        raise TypeError("realdiv: expects floating tensors; use floordiv or truediv")
    return ops.div(x, y)


floor_mod = floormod


@named
def truncatemod(x, y):
    """x - y * truncatediv(x, y): C's fmod, the result takes x's sign (TF's TruncateMod)."""
    x = convert_to_tensor(x) if not isinstance(y, Tensor) else x
    check_tf1_types("TruncateMod", x, y)
    return ops.truncatemod(x, y)


@named
def truncatediv(x, y):
    """x / y rounded toward zero (TF's TruncateDiv, C's integer `/`): -7 / 2 is -3, where
    floordiv gives -4. Floats: the quotient truncated."""
    x = convert_to_tensor(x) if not isinstance(y, Tensor) else x
    kinds = {np.dtype(t.dtype).kind for t in (x, y) if isinstance(t, Tensor)}
    if kinds <= set("iu"):
        q = ops.floordiv(x, y)
        # NOTE: floor and truncation differ by one where the signs differ and y does not divide x
        fix = ops.logical_and(ops.ne(ops.floormod(x, y), 0),
                              ops.ne(ops.lt(x, 0), ops.lt(y, 0)))
        return ops.where(fix, q + 1, q)
    q = ops.div(x, y)
    return ops.where(ops.lt(q, 0), ops.ceil(q), ops.floor(q))


@named
def div_no_nan(x, y):
    """x / y, and 0 wherever y is 0 (tf.math.div_no_nan); integers are divided as truediv
    divides them (float32 for 8 and 16 bits, float64 for 32 and 64), as TF does."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    if x.dtype != y.dtype:
        raise TypeError(f"div_no_nan: `x` and `y` must have the same dtype, got {x.dtype.name} "
                        f"('{x.name}') and {y.dtype.name} ('{y.name}'), as in TF")
    zero = ops.eq(y, 0)
    q = _truediv(x, ops.where(zero, ops.ones_like(y), y))
    return ops.where(zero, ops.zeros_like(q), q)


@named
def logical_xor(x, y):
    """True where exactly one of two bool tensors is (tf.math.logical_xor)."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    if x.dtype.kind != "b" or y.dtype.kind != "b":
        raise TypeError(f"logical_xor: expects bool tensors, got {x.dtype.name} and {y.dtype.name}")
    return ops.ne(x, y)


@named
def squared_difference(x, y):
    """(x - y) ** 2, broadcasting as TF."""
    check_tf1_types("squared_difference", x, y)
    return ops.square(ops.sub(x, y))


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors of one shape and dtype (tf.add_n)."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("add_n: inputs must be a list of at least one tensor with the same "
                         "dtype and shape")
    ts = [convert_to_tensor(t) for t in inputs]   # NOTE: each alone, as TF's AddN
    for t in ts[1:]:
        if t.dtype != ts[0].dtype:
            raise TypeError(f"add_n: inputs must have one dtype, got {ts[0].dtype.name} "
                            f"('{ts[0].name}') and {t.dtype.name} ('{t.name}')")
        if t.ndim is not None and ts[0].ndim is not None and (t.ndim != ts[0].ndim or any(
                a is not None and b is not None and a != b
                for a, b in zip(t.shape, ts[0].shape))):
            raise ShapeError(f"add_n: inputs must have one shape, got "
                             f"{ops.fmt_shape(ts[0].spec)} ('{ts[0].name}') and "
                             f"{ops.fmt_shape(t.spec)} ('{t.name}')")
    if len(ts) == 1:   # NOTE: TF returns the tensor itself, or its identity when named
        return ts[0] if name is None else identity(ts[0], name=name)
    return _named_call(_sum_list, (ts,), {}, name or "AddN")


def _sum_list(ts):
    with tracing(GraphEngine):
        total = ts[0]
        for t in ts[1:]:
            total = total + t
        return total


# -- matmul and reductions ---------------------------------------------------------------------
@named
def matmul(a, b, transpose_a=False, transpose_b=False):
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    return ops.matmul(ops.matrix_transpose(a) if transpose_a else a,
                      ops.matrix_transpose(b) if transpose_b else b)


@named
@old_names(**_AXIS)
def reduce_sum(input_tensor, axis=None, keepdims=False):
    """TF1's Sum: the result keeps the input's dtype (an int32 sum wraps around, as TF's);
    a bool input is refused, as TF has no bool kernel for Sum."""
    _reduction_dims(input_tensor, axis)
    x = convert_to_tensor(input_tensor)
    if x.dtype == np.bool_:
        raise TypeError(f"reduce_sum: Value passed to parameter 'input' has DataType bool not "
                        f"in list of allowed values ('{x.name}'): cast it first, "
                        f"graph.reduce_sum(graph.cast(x, tf.int32))")
    return _sum_keeping_dtype(x, axis, keepdims)


def _reduction_dims(x, axis):
    """Take the names TF's reductions give the axes they build outside their own scope when
    `axis` is None (all axes: 'Const', or 'Rank' and 'range' when the rank is unknown), so
    the nodes built after one are named as TF's."""
    if axis is None and isinstance(x, Tensor):
        for n in ("Const",) if x.ndim is not None else ("Rank", "range"):
            x.graph.reserve_outside(n)


def _sum_keeping_dtype(x, axis, keepdims):
    """TF1's Sum: in x's dtype (ops.sum adds integers in 64 bits; the cast back wraps as TF)."""
    out = ops.sum(x, axis=axis, keepdims=keepdims)
    return out if out.dtype == x.dtype else ops.cast(out, x.dtype)


@named
@old_names(**_AXIS)
def reduce_mean(input_tensor, axis=None, keepdims=False):
    """The mean over `axis`; of integers, TF's: the sum divided by the count, truncated
    toward zero, in the input's dtype (reduce_mean([1, 2]) is 1, of [-1, -2] -1)."""
    _reduction_dims(input_tensor, axis)
    x = convert_to_tensor(input_tensor)
    check_tf1_types("reduce_mean", x)
    if x.dtype.kind not in "iu":
        return ops.mean(x, axis=axis, keepdims=keepdims)
    return trunc_div(_sum_keeping_dtype(x, axis, keepdims),
                     ops.cast(ops.count(x, axis=axis), x.dtype))


def trunc_div(x, n):
    """x / n for integer tensors, truncated toward zero, as TF's integer means (C's `/`)."""
    if x.dtype.kind == "u":
        return ops.floordiv(x, n)
    return ops.sign(x) * ops.floordiv(ops.abs(x), n)


@named
@old_names(**_AXIS)
def reduce_max(input_tensor, axis=None, keepdims=False):
    """The max over `axis`; over an empty axis TF's -inf (an integer dtype's lowest)."""
    _reduction_dims(input_tensor, axis)
    x = convert_to_tensor(input_tensor)
    if _nonempty(x, axis):
        return ops.max(x, axis=axis, keepdims=keepdims)
    check_tf1_types("max", x)
    return ops.max(x, axis=axis, keepdims=keepdims, initial=extreme(x.dtype, lowest=True))


@named
@old_names(**_AXIS)
def reduce_min(input_tensor, axis=None, keepdims=False):
    """The min over `axis`; over an empty axis TF's +inf (an integer dtype's highest)."""
    _reduction_dims(input_tensor, axis)
    x = convert_to_tensor(input_tensor)
    check_tf1_types("min", x)   # NOTE: ops.min of bools goes through float64: TF1 refuses them
    if _nonempty(x, axis):
        return ops.min(x, axis=axis, keepdims=keepdims)
    low = extreme(x.dtype, lowest=True)
    if x.dtype.kind == "i" and x.dtype.itemsize == 8:
        # NOTE: ~x = -x - 1 reverses the order without overflow (wrapping as two's complement
        # does); a float attribute holds int64's lowest exactly, not its highest
        flip = -x - np.int64(1)
        return -ops.max(flip, axis=axis, keepdims=keepdims, initial=low) - np.int64(1)
    wide = ops.cast(x, np.float64) if x.dtype.kind in "iu" else x   # NOTE: -x of uint8 wraps
    top = extreme(x.dtype, lowest=False)
    out = -ops.max(-wide, axis=axis, keepdims=keepdims, initial=-float(top))
    return ops.cast(out, x.dtype) if out.dtype != x.dtype else out


def extreme(dtype, lowest):
    """TF's start of a max (lowest=True: -inf, an integer dtype's lowest) or of a min."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return -np.inf if lowest else np.inf
    info = np.iinfo(dt)
    return int(info.min if lowest else info.max)


def _nonempty(x, axis):
    """Whether every reduced dim is known and above zero (then no start value is needed)."""
    if x.ndim is None or isinstance(axis, Tensor):
        return False
    axes = range(x.ndim) if axis is None else [axis] if np.ndim(axis) == 0 else list(axis)
    # NOTE: an axis out of range counts as non-empty: ops.max then raises its own error
    return all(not -x.ndim <= int(a) < x.ndim or x.shape[int(a)] not in (None, 0)
               for a in axes)


@named
@old_names(**_AXIS)
def reduce_logsumexp(input_tensor, axis=None, keepdims=False):
    x = input_tensor
    if axis is None:
        out = ops.logsumexp(ops.reshape(x, (-1,)), axis=0)
        return ops.reshape(out, (1,) * x.ndim) if keepdims else out
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise NotImplementedError("reduce_logsumexp over several axes: reduce one at a "
                                      "time")
        axis = axis[0]
    return ops.logsumexp(x, axis=int(axis), keepdims=keepdims)


@named
@old_names(**_AXIS)
def reduce_prod(input_tensor, axis=None, keepdims=False):
    _reduction_dims(input_tensor, axis)
    return ops.prod(input_tensor, axis=axis, keepdims=bool(keepdims))


def _need_bool(what, x):
    x = convert_to_tensor(x)
    if x.dtype != np.bool_:
        raise TypeError(f"{what}: expects a bool tensor, got {x.dtype.name} ('{x.name}')")
    return x


@named
@old_names(**_AXIS)
def reduce_any(input_tensor, axis=None, keepdims=False):
    """True where any element over `axis` is; False over an empty axis, as TF."""
    _reduction_dims(input_tensor, axis)
    x = _need_bool("reduce_any", input_tensor)
    return ops.gt(ops.sum(ops.cast(x, np.int32), axis=axis, keepdims=bool(keepdims)), 0)


@named
@old_names(**_AXIS)
def reduce_all(input_tensor, axis=None, keepdims=False):
    """True where every element over `axis` is; True over an empty axis, as TF."""
    _reduction_dims(input_tensor, axis)
    x = _need_bool("reduce_all", input_tensor)
    return ops.eq(ops.sum(ops.cast(ops.logical_not(x), np.int32), axis=axis,
                          keepdims=bool(keepdims)), 0)


@named
@old_names(**_AXIS)
def count_nonzero(input_tensor=None, axis=None, keepdims=False, dtype="int64", input=None):  # noqa: A002
    """The number of nonzero elements over `axis` (tf.math.count_nonzero), as `dtype`."""
    x = convert_to_tensor(input_tensor if input is None else input)
    n = ops.sum(ops.cast(ops.ne(x, np.zeros((), x.dtype)), np.int64), axis=axis,
                keepdims=bool(keepdims))
    return n if as_dtype(dtype) == np.int64 else ops.cast(n, as_dtype(dtype))


@named
@old_names(**_AXIS)
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False):
    """sqrt(sum(x ** 2)); for integers as TF's kernel: squares and sum in the input's dtype
    (wrapping around), the root truncated back to it (0 where the wrapped sum is negative)."""
    dt = np.dtype(input_tensor.dtype)
    if dt.kind not in "iu":
        return ops.norm(input_tensor, ord=2, axis=axis, keepdims=bool(keepdims))
    total = ops.cast(ops.sum(ops.square(input_tensor), axis=axis, keepdims=bool(keepdims)), dt)
    root = ops.sqrt(ops.maximum(ops.cast(total, np.float64), 0.0))
    return ops.cast(ops.floor(root), dt)


@named
@old_names(dim="axis")
def l2_normalize(x, axis=None, epsilon=1e-12):
    """x / sqrt(max(sum(x ** 2, axis), epsilon)), as tf.math.l2_normalize (= tf.nn's):
    axis=None normalises over all elements."""
    square_sum = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * ops.rsqrt(ops.maximum(square_sum, float(epsilon)))


def _need_float(what, x):
    x = convert_to_tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"{what}: expects a floating tensor, got {x.dtype.name} ('{x.name}')")
    return x


@named
def is_nan(x):
    return ops.ne(*(_need_float("is_nan", x),) * 2)


@named
def is_inf(x):
    return ops.eq(ops.abs(_need_float("is_inf", x)), np.inf)


@named
def is_finite(x):
    x = _need_float("is_finite", x)
    return ops.logical_not(ops.logical_or(ops.ne(x, x), ops.eq(ops.abs(x), np.inf)))


@named
@old_names(dimension="axis")
def argmax(input, axis=None, output_type="int64"):  # noqa: A002 - TF's name
    out = ops.argmax(input, axis=0 if axis is None else int(axis), keepdims=False)
    return out if as_dtype(output_type) == np.int64 else ops.cast(out, as_dtype(output_type))


@named
@old_names(dimension="axis")
def argmin(input, axis=None, output_type="int64"):  # noqa: A002
    out = ops.argmin(input, axis=0 if axis is None else int(axis), keepdims=False)
    return out if as_dtype(output_type) == np.int64 else ops.cast(out, as_dtype(output_type))


def arg_max(input, dimension, output_type="int64", name=None):  # noqa: A002
    """tf.arg_max, TF1's older argmax: `dimension` is required."""
    return argmax(input, dimension, output_type, name=name)


def arg_min(input, dimension, output_type="int64", name=None):  # noqa: A002
    """tf.arg_min, TF1's older argmin: `dimension` is required."""
    return argmin(input, dimension, output_type, name=name)


# -- shapes -----------------------------------------------------------------------------------
@named
def reshape(tensor, shape):
    """tf.reshape: `shape` is a list of ints (-1 for one inferred dim), a 1-d shape tensor,
    or a list mixing ints and scalar tensors (`[tf.shape(x)[0], -1]`)."""
    if isinstance(shape, Tensor) or any(isinstance(d, Tensor) for d in shape):
        return dynamic_reshape(tensor, shape)
    return ops.reshape(tensor, [-1 if d is None else int(d) for d in shape])


@named
def transpose(a, perm=None):
    a = convert_to_tensor(a)
    perm = tuple(reversed(range(a.ndim))) if perm is None else tuple(int(p) for p in perm)
    return ops.transpose(a, axes=perm)


@named
def concat(values, axis):
    return ops.concat(*convert_n_to_tensor(values), axis=axis)


@named
def stack(values, axis=0):
    if not any(isinstance(v, Tensor) for v in values):    # NOTE: TF: one constant of them all
        return ops.stack(*[constant(v) for v in python_array(values)], axis=axis)
    return ops.stack(*convert_n_to_tensor(values), axis=axis)


@named
def roll(input, shift, axis):  # noqa: A002 - TF's name
    """Elements shifted along `axis` by `shift`, wrapping around (tf.roll; ints or lists of
    them, one shift per axis; an axis listed twice adds its shifts, as TF's)."""
    shifts = [shift] if np.ndim(shift) == 0 else list(shift)
    axes = [axis] if np.ndim(axis) == 0 else list(axis)
    if any(isinstance(v, Tensor) for v in shifts + axes):
        raise NotImplementedError("roll: shift and axis must be Python ints (or lists of "
                                  "them) when the graph is built; a tensor shift is not "
                                  "supported")
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same size, got {len(shifts)} "
                         f"and {len(axes)}")
    return ops.roll(convert_to_tensor(input), tuple(int(s) for s in shifts),
                    tuple(int(a) for a in axes))


def split(value, num_or_size_splits, axis=0, name=None):
    """TF's split: an int is the number of equal pieces, a list the sizes of the pieces."""
    shape = value.shape
    a = norm_axis("split", axis, len(shape), shape, frontend=True)
    if isinstance(num_or_size_splits, int):
        n = shape[a]
        if n is None or n % num_or_size_splits:
            raise ShapeError(f"split: dimension {a} of {tuple(shape)} cannot be split into "
                             f"{num_or_size_splits} equal pieces")
        sizes = [n // num_or_size_splits] * num_or_size_splits
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if sizes.count(-1) > 1:
            raise ValueError(f"split: at most one size may be -1 (inferred), got {sizes}")
        if -1 in sizes:    # NOTE: TF infers it from the dimension, as reshape infers a -1
            if shape[a] is None:
                raise ShapeError(f"split: a size of -1 needs dimension {a} of "
                                 f"{tuple(shape)}, which is unknown")
            rest = shape[a] - sum(s for s in sizes if s != -1)
            if rest < 0:
                raise ShapeError(f"split: sizes {sizes} add up to more than dimension {a} "
                                 f"of {tuple(shape)}")
            sizes[sizes.index(-1)] = rest
    return ops.split(value, sizes, axis=a)


@named
@old_names(dim="axis")
def expand_dims(input, axis=None):  # noqa: A002
    return ops.expand_dims(input, axis=int(axis))


@named
@old_names(squeeze_dims="axis")
def squeeze(input, axis=None):  # noqa: A002
    if isinstance(axis, list):
        axis = tuple(axis)
    return ops.squeeze(input, axis=axis)


@named
def broadcast_to(input, shape):  # noqa: A002
    return ops.broadcast_to(input, shape=tuple(int(d) for d in shape))


@named
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None):
    """tf.one_hot: `on_value` (default 1) where an index hits, `off_value` (default 0)
    elsewhere; an index outside [0, depth) (e.g. -1 for padding) gives a row of off_value;
    the new axis goes at `axis` (default last); the dtype is `dtype`, else on/off_value's,
    else float32."""
    if isinstance(depth, Tensor) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"one_hot: depth must be a Python int (dualgrad needs the depth when "
                        f"the graph is built), got {type(depth).__name__}")
    if any(isinstance(v, Tensor) for v in (on_value, off_value)):
        raise TypeError("one_hot: on_value and off_value must be numbers, not tensors, in "
                        "dualgrad")
    given = [v for v in (on_value, off_value) if v is not None]
    kinds = {_tf_dtype(v) for v in given}
    if len(kinds) > 1:
        raise TypeError(f"one_hot: on_value and off_value must have the same dtype, got "
                        f"{' and '.join(sorted(k.name for k in kinds))}")
    dt = np.dtype(as_dtype(dtype) if dtype is not None else
                  (next(iter(kinds)) if kinds else np.float32))
    typed = {np.asarray(v).dtype for v in given if isinstance(v, (np.ndarray, np.generic))}
    if typed - {dt}:   # NOTE: Python numbers take dtype, as TF's convert_to_tensor does
        raise TypeError(f"one_hot: dtype {dt.name} does not match on_value/off_value's "
                        f"{typed.pop().name}")
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    if on == 1 and off == 0:
        out = ops.one_hot(indices, depth, dtype=dt, strict=False)
    else:
        hot = ops.one_hot(indices, depth, dtype=np.bool_, strict=False)
        out = ops.where(hot, np.asarray(on, dt), np.asarray(off, dt))
    rank = len(out.shape) - 1
    if axis is None or axis == -1 or axis == rank:
        return out
    if not 0 <= axis < rank:
        raise ValueError(f"one_hot: axis must be -1 or in [0, {rank}] for indices of rank "
                         f"{rank}, got {axis}")
    perm = list(range(rank))
    perm.insert(axis, rank)
    return ops.transpose(out, axes=tuple(perm))


def _tf_dtype(v):
    """A value's dtype as TF converts it: a Python float is float32, an int int32."""
    if isinstance(v, bool):
        return np.dtype(np.bool_)
    if isinstance(v, int):
        return np.dtype(np.int32)
    if isinstance(v, float) and not isinstance(v, np.floating):
        return np.dtype(np.float32)
    return np.asarray(v).dtype


@named
def gather(params, indices, axis=0):
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices, dtype=np.int64)
    return ops.take(params, indices, axis=axis)


@named
def pad(tensor, paddings, mode="CONSTANT", constant_values=0):
    """tf.pad: CONSTANT (constant_values), REFLECT (mirrored without the edge: each padding
    less than its dim) or SYMMETRIC (mirrored with the edge: at most its dim), the last two
    gathers along each padded dim (gradients flow back to where each value came from)."""
    how = str(mode).upper()
    if how == "CONSTANT":
        static = [] if isinstance(paddings, Tensor) else np.asarray(paddings, np.int64)
        for lo, hi in np.reshape(static, (-1, 2)).tolist():
            if lo < 0 or hi < 0:    # NOTE: ops.pad crops at a negative width (torch's rule)
                raise ValueError(f"Paddings must be non-negative: {lo} {hi}")
        return ops.pad(tensor, paddings, value=constant_values)
    if how not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}")
    if isinstance(paddings, Tensor):
        raise NotImplementedError(f"pad(mode={mode!r}): the paddings must be known when the "
                                  f"graph is built")
    pairs = np.asarray(paddings, np.int64).reshape(-1, 2)
    out, shape = tensor, tuple(tensor.shape)
    for axis, (lo, hi) in enumerate(pairs):
        if not (lo or hi):
            continue
        n = shape[axis]
        if n is None:
            raise NotImplementedError(f"pad(mode={mode!r}): dim {axis} of the input is unknown "
                                      f"when the graph is built; {how} padding needs it")
        room = n - 1 if how == "REFLECT" else n
        if lo < 0 or hi < 0 or max(lo, hi) > room:
            raise ValueError(f"pad: {how} paddings ({lo}, {hi}) of dim {axis} must be "
                             f"non-negative and {'less than' if how == 'REFLECT' else 'at most'}"
                             f" its size {n}")
        out = ops.take(out, mirrored(np.arange(-lo, n + hi), n, edge=how == "SYMMETRIC"),
                       axis=axis)
    return out


# -- filled tensors and random draws ------------------------------------------------------------
def _static_shape(shape, what):
    if isinstance(shape, Tensor):
        raise NotImplementedError(f"{what}: the shape must be known when the graph is built")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if any(d is None or int(d) < 0 for d in shape):
        raise ValueError(f"{what}: shape {tuple(shape)} must be fully known")
    return tuple(int(d) for d in shape)


@named
def zeros_like(tensor, dtype=None, optimize=True):
    # NOTE: optimize= lets TF1 fold a known shape into a constant; the values are the same
    return ops.zeros_like(tensor, dtype=None if dtype is None else as_dtype(dtype).name)


@named
def ones_like(tensor, dtype=None):
    return ops.ones_like(tensor, dtype=None if dtype is None else as_dtype(dtype).name)


def _random_kernel(node):
    a = node.attrs
    shape, dt, seed = a["shape"], np.dtype(a["dtype"]), a["seed"]

    def run(state):
        rng = ops.generator() if seed is None else state.rngs.setdefault(
            node.name, np.random.default_rng(seed))
        if a["dist"] == "normal":
            r = rng.standard_normal(shape) * a["scale"] + a["loc"]
        elif a["dist"] == "truncated":
            r = _truncated(rng, shape) * a["scale"] + a["loc"]
        else:
            r = rng.uniform(a["loc"], a["scale"], shape)
        return r.astype(dt)
    return run, True


def _truncated(rng, shape):
    """Standard normal draws, those beyond two standard deviations drawn again (TF's rule)."""
    r = rng.standard_normal(shape)
    bad = np.abs(r) > 2.0
    while bad.any():
        r[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(r) > 2.0
    return r


RANDOM = graph_op("random", _random_kernel)

# NOTE: TF1's seeds: with a graph-level seed (`set_random_seed`) a random op without a seed of
# its own gets one from the graph's node count, so every Session draws the same values; with
# an op seed and no graph seed, the graph seed is TF's default.
_GRAPH_SEEDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_DEFAULT_GRAPH_SEED = 87654321


def set_random_seed(seed):
    """tf.compat.v1.set_random_seed: the default graph's seed (random ops and initialisers
    then draw the same in every Session), and the generator that dropout masks draw from."""
    _GRAPH_SEEDS[get_default_graph()] = None if seed is None else int(seed)
    ops.manual_seed(0 if seed is None else int(seed))


def get_seed(op_seed):
    """(graph seed, op seed) as tf.compat.v1.get_seed: None when neither is set."""
    g = get_default_graph()
    gs = _GRAPH_SEEDS.get(g)
    if gs is None and op_seed is None:
        return None, None
    if gs is None:
        return _DEFAULT_GRAPH_SEED, int(op_seed)
    return gs, (len(g.get_operations()) if op_seed is None else int(op_seed))


def _random(dist, shape, loc, scale, dtype, seed, name):
    shape = _static_shape(shape, f"random_{dist}")
    dt = as_dtype(dtype)
    gs, os_ = get_seed(seed)
    attrs = {"dist": dist, "shape": shape, "dtype": dt.name, "loc": float(loc),
             "scale": float(scale), "seed": None if gs is None else [gs, os_]}
    g = get_default_graph()
    return g.create_node(RANDOM, (), attrs, [ops.Spec(shape, dt)], name).outputs[0]


def random_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """Normal draws, new at every run. With a seed (the op's or the graph's, see
    `set_random_seed`) each Session draws the same sequence; without, they come from
    `ops.manual_seed`'s generator."""
    return _random("normal", shape, mean, stddev, dtype, seed, name or "random_normal")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """Normal draws with those more than 2 stddev from the mean drawn again, as TF."""
    return _random("truncated", shape, mean, stddev, dtype, seed, name or "truncated_normal")


def random_uniform(shape, minval=0, maxval=None, dtype="float32", seed=None, name=None):
    """Uniform draws in [minval, maxval); maxval defaults to 1 for floats, as TF."""
    dt = as_dtype(dtype)
    if maxval is None:
        if dt.kind != "f":
            raise ValueError(f"random_uniform: maxval must be given for dtype {dt}")
        maxval = 1.0
    if dt.kind in "iu":
        raise NotImplementedError("random_uniform: integer dtypes are not supported")
    return _random("uniform", shape, minval, maxval, dtype, seed, name or "random_uniform")


# -- registry ops offered under TF's names (Op.front, ops/api.py): graph.expm1, … --------------
FROM_REGISTRY = {n: named(f) for n, f in ops.api.functions("tf").items()}
MATH_FROM_REGISTRY = {**FROM_REGISTRY,
                      **{n: named(f) for n, f in ops.api.functions("tf.math").items()}}
globals().update(FROM_REGISTRY)
__all__ += list(FROM_REGISTRY)
