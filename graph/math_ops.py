"""Op functions with TF's names and argument conventions, each a call into ops/.

Every function takes TF's `name=` argument: the result node gets that name and the nodes
a composite builds on the way go under `name/`. Axis arguments follow TF (`axis`,
`keepdims`, `perm`); dtypes may be graph dtypes, NumPy dtypes or strings.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 4), name="x")
>>> m = graph.reduce_mean(x, axis=1, name="row_mean")
>>> m.name, m.shape
('row_mean:0', (None,))
"""
from __future__ import annotations

import functools

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, tracing

from .core import GraphEngine, Tensor, _graph_of, constant, convert_to_tensor, get_default_graph, graph_kind
from .dtypes import as_dtype

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "pow", "negative", "abs", "exp",
    "log", "sqrt", "rsqrt", "square", "tanh", "sigmoid", "sign", "erf", "maximum", "minimum",
    "where", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
    "logical_not", "logical_and", "logical_or", "matmul", "reduce_sum", "reduce_mean",
    "reduce_max", "reduce_min", "reduce_logsumexp", "argmax", "argmin", "reshape",
    "transpose", "concat", "stack", "split", "expand_dims", "squeeze", "cast", "one_hot",
    "gather", "pad", "zeros", "ones", "zeros_like", "ones_like", "fill", "random_normal",
    "random_uniform", "stop_gradient", "clip_by_value", "broadcast_to", "named", "sin", "cos",
    "cumsum", "reverse", "tile", "norm", "linalg",
]


def named(fn):
    """Make `fn` a graph function: its ops build nodes (arrays and numbers become constants,
    as in TF), and it takes TF's `name=` argument."""
    @functools.wraps(fn)
    def wrapper(*args, name=None, **kw):
        with tracing(GraphEngine):
            return _named_call(fn, args, kw, name)
    return wrapper


def _named_call(fn, args, kw, name):
    if name is None:
        return fn(*args, **kw)
    tensors = [a for a in list(args) + list(kw.values()) if isinstance(a, Tensor)]
    for a in args:
        if isinstance(a, (list, tuple)):
            tensors += [x for x in a if isinstance(x, Tensor)]
    g = _graph_of(tensors) if tensors else get_default_graph()
    with g.name_scope(name) as scope:
        out = fn(*args, **kw)
    if isinstance(out, Tensor) and out.graph is g and out.node.name.startswith(scope):
        g.rename(out.node, scope[:-1])
    return out


# -- elementwise ---------------------------------------------------------------------------------
add, subtract, multiply, divide = (named(f) for f in (ops.add, ops.sub, ops.mul, ops.div))
truediv, pow, maximum, minimum = named(ops.div), named(ops.pow), named(ops.maximum), \
    named(ops.minimum)  # noqa: A001
negative, abs, exp, log, sqrt, tanh, sigmoid, sign, erf = (  # noqa: A001
    named(f) for f in (ops.neg, ops.abs, ops.exp, ops.log, ops.sqrt, ops.tanh, ops.sigmoid,
                       ops.sign, ops.erf))
equal, not_equal, greater, greater_equal, less, less_equal = (
    named(f) for f in (ops.eq, ops.ne, ops.gt, ops.ge, ops.lt, ops.le))
stop_gradient = named(ops.stop_gradient)
sin, cos = named(ops.sin), named(ops.cos)


@named
def cumsum(x, axis=0):
    """Running sum along `axis` (tf.math.cumsum without exclusive/reverse)."""
    return ops.cumsum(x, axis)


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
def norm(tensor, ord="euclidean", axis=None, keepdims=False):  # noqa: A002
    """tf.norm for vectors: ord 'euclidean' (2) or 1."""
    return ops.norm(tensor, ord=2 if ord in ("euclidean", 2) else ord, axis=axis,
                    keepdims=keepdims)


class linalg:  # noqa: N801 - a namespace, as tf.linalg
    """`band_part(x, num_lower, num_upper)` with -1 for 'keep all', as in TF."""

    @staticmethod
    def band_part(input, num_lower, num_upper):  # noqa: A002
        out = input
        if num_lower >= 0:
            out = ops.triu(out, -num_lower)
        if num_upper >= 0:
            out = ops.tril(out, num_upper)
        return out


square, rsqrt = named(ops.square), named(ops.rsqrt)


@named
def where(condition, x=None, y=None):
    if x is None or y is None:
        raise NotImplementedError("where(condition) without x and y returns indices, a "
                                  "data-dependent shape: not supported; pass x and y")
    return ops.where(condition, x, y)


logical_not, logical_and, logical_or = (
    named(f) for f in (ops.logical_not, ops.logical_and, ops.logical_or))


@named
def cast(x, dtype):
    dt = as_dtype(dtype)
    if isinstance(x, Tensor) and x.dtype == dt:
        return x
    return ops.cast(convert_to_tensor(x), dt)


@named
def clip_by_value(t, clip_value_min, clip_value_max):
    return ops.clamp(t, clip_value_min, clip_value_max)


# -- matmul and reductions ---------------------------------------------------------------------
@named
def matmul(a, b, transpose_a=False, transpose_b=False):
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    return ops.matmul(ops.matrix_transpose(a) if transpose_a else a,
                      ops.matrix_transpose(b) if transpose_b else b)


@named
def reduce_sum(input_tensor, axis=None, keepdims=False):
    return ops.sum(input_tensor, axis=axis, keepdims=keepdims)


@named
def reduce_mean(input_tensor, axis=None, keepdims=False):
    return ops.mean(input_tensor, axis=axis, keepdims=keepdims)


@named
def reduce_max(input_tensor, axis=None, keepdims=False):
    return ops.max(input_tensor, axis=axis, keepdims=keepdims)


@named
def reduce_min(input_tensor, axis=None, keepdims=False):
    return ops.min(input_tensor, axis=axis, keepdims=keepdims)


@named
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
def argmax(input, axis=None, output_type="int64"):  # noqa: A002 - TF's name
    out = ops.argmax(input, axis=0 if axis is None else int(axis), keepdims=False)
    return out if as_dtype(output_type) == np.int64 else ops.cast(out, as_dtype(output_type))


@named
def argmin(input, axis=None, output_type="int64"):  # noqa: A002
    out = ops.argmin(input, axis=0 if axis is None else int(axis), keepdims=False)
    return out if as_dtype(output_type) == np.int64 else ops.cast(out, as_dtype(output_type))


# -- shapes -----------------------------------------------------------------------------------
@named
def reshape(tensor, shape):
    if isinstance(shape, Tensor):
        raise NotImplementedError("reshape to a shape computed at run time is not supported; "
                                  "pass a list of ints with -1 for one unknown dim")
    return ops.reshape(tensor, [-1 if d is None else int(d) for d in shape])


@named
def transpose(a, perm=None):
    a = convert_to_tensor(a)
    perm = tuple(reversed(range(a.ndim))) if perm is None else tuple(int(p) for p in perm)
    return ops.transpose(a, axes=perm)


@named
def concat(values, axis):
    return ops.concat(*values, axis=axis)


@named
def stack(values, axis=0):
    return ops.stack(*values, axis=axis)


def split(value, num_or_size_splits, axis=0, name=None):
    """TF's split: an int is the number of equal pieces, a list the sizes of the pieces."""
    shape = value.shape
    a = axis % len(shape)
    if isinstance(num_or_size_splits, int):
        n = shape[a]
        if n is None or n % num_or_size_splits:
            raise ShapeError(f"split: dimension {a} of {tuple(shape)} cannot be split into "
                             f"{num_or_size_splits} equal pieces")
        sizes = [n // num_or_size_splits] * num_or_size_splits
    else:
        sizes = [int(s) for s in num_or_size_splits]
    return ops.split(value, sizes, axis=a)


@named
def expand_dims(input, axis):  # noqa: A002
    return ops.expand_dims(input, axis=int(axis))


@named
def squeeze(input, axis=None):  # noqa: A002
    if isinstance(axis, list):
        axis = tuple(axis)
    return ops.squeeze(input, axis=axis)


@named
def broadcast_to(input, shape):  # noqa: A002
    return ops.broadcast_to(input, shape=tuple(int(d) for d in shape))


@named
def one_hot(indices, depth, dtype="float32"):
    return ops.one_hot(indices, depth, dtype=as_dtype(dtype))


@named
def gather(params, indices, axis=0):
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices, dtype=np.int64)
    return ops.take(params, indices, axis=axis)


@named
def pad(tensor, paddings, mode="CONSTANT", constant_values=0):
    if str(mode).upper() != "CONSTANT":
        raise NotImplementedError(f"pad: only mode='CONSTANT' is supported, got {mode!r}")
    return ops.pad(tensor, paddings, value=constant_values)


# -- filled tensors and random draws ------------------------------------------------------------
def _static_shape(shape, what):
    if isinstance(shape, Tensor):
        raise NotImplementedError(f"{what}: the shape must be known when the graph is built")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if any(d is None or int(d) < 0 for d in shape):
        raise ValueError(f"{what}: shape {tuple(shape)} must be fully known")
    return tuple(int(d) for d in shape)


def zeros(shape, dtype="float32", name=None):
    return constant(np.zeros(_static_shape(shape, "zeros"), as_dtype(dtype)), name=name or "zeros")


def ones(shape, dtype="float32", name=None):
    return constant(np.ones(_static_shape(shape, "ones"), as_dtype(dtype)), name=name or "ones")


def fill(dims, value, name=None):
    return constant(np.full(_static_shape(dims, "fill"), value), name=name or "Fill")


@named
def zeros_like(tensor, dtype=None):
    return ops.zeros_like(tensor, dtype=None if dtype is None else as_dtype(dtype).name)


@named
def ones_like(tensor, dtype=None):
    return ops.ones_like(tensor, dtype=None if dtype is None else as_dtype(dtype).name)


def _random_lower(node):
    a = node.attrs
    shape, dt, seed = a["shape"], np.dtype(a["dtype"]), a["seed"]

    def run(state):
        rng = ops.generator() if seed is None else state.rngs.setdefault(
            node.name, np.random.default_rng(seed))
        if a["dist"] == "normal":
            r = rng.standard_normal(shape) * a["scale"] + a["loc"]
        else:
            r = rng.uniform(a["loc"], a["scale"], shape)
        return r.astype(dt)
    return run, True


RANDOM = graph_kind("random", _random_lower)


def _random(dist, shape, loc, scale, dtype, seed, name):
    shape = _static_shape(shape, f"random_{dist}")
    dt = as_dtype(dtype)
    attrs = {"dist": dist, "shape": shape, "dtype": dt.name, "loc": float(loc),
             "scale": float(scale), "seed": None if seed is None else int(seed)}
    g = get_default_graph()
    return g.create_node(RANDOM, (), attrs, [ops.Spec(shape, dt)], name).outputs[0]


def random_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """Normal draws, new at every run (from `ops.manual_seed`'s generator, or from this
    node's own generator when `seed` is given, restarting with each Session)."""
    return _random("normal", shape, mean, stddev, dtype, seed, name or "random_normal")


def random_uniform(shape, minval=0.0, maxval=1.0, dtype="float32", seed=None, name=None):
    return _random("uniform", shape, minval, maxval, dtype, seed, name or "random_uniform")

