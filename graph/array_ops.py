"""Shapes known only at run time, as TF1 has them: `shape(x)`, `size`, `rank`, `fill` and
`zeros`/`ones` of a shape tensor, `range` with tensor bounds, `reshape` to a shape tensor
(or a list mixing ints and scalar tensors), `unstack`, `where_indices` (TF's `Where`); and
`identity`, an array op as in TF.

`shape`, `size` and `rank` are graph-only ops whose kernels read the array's shape;
`fill` and `range` produce arrays whose static shape is as known as their arguments;
`dynamic_reshape` takes its target shape from a tensor and differentiates as `reshape`.
The module sits below math_ops (which calls `dynamic_reshape`, `identity` and
`where_indices`) and imports no other op module.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 3))
>>> z = graph.zeros(graph.shape(x))
>>> flat = graph.reshape(x, [graph.shape(x)[0] * 3])
>>> with graph.Session() as s:
...     s.run([z, flat], {x: np.ones((2, 3))})[1].shape
(6,)
"""
from __future__ import annotations

import builtins

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec, fmt_shape, located
from dualgrad.ops.rules import norm_axis

from .core import (PLACEHOLDER, Tensor, _graph_of, _lift, _norm_shape, constant,
                   convert_to_tensor, get_default_graph, graph_op)
from .dtypes import as_dtype
from .naming import named

__all__ = ["shape", "size", "rank", "fill", "zeros", "ones", "range", "unstack",
           "dynamic_reshape", "placeholder_with_default", "eye", "linspace", "lin_space"]


def _node(op, inputs, attrs, spec, name):
    g = _graph_of(inputs)
    ins = [_lift(g, t, inputs) for t in inputs]
    return g.create_node(op, ins, attrs, [spec], name).outputs[0]


def _simple(fn):
    def make_kernel(node):
        attrs = node.attrs
        return (lambda *xs: fn(*xs, **attrs)), False
    return make_kernel


# -- identity ------------------------------------------------------------------------------------
def _identity_kernel(node):
    return (lambda x: x), False


IDENTITY = graph_op("identity", _identity_kernel, vjp=lambda g, x, **kw: (g,),
                    inference_identity=True, tf="Identity")


def identity(x, name=None) -> Tensor:
    """tf.identity: a node passing `x` through (a name for it, a point to hang control
    dependencies on); as TF, it lives with the array ops."""
    g = _graph_of([x])
    t = _lift(g, x, [x])
    return g.create_node(IDENTITY, (t,), {}, [Spec(t.shape, t.dtype)], name or "Identity") \
        .outputs[0]


SHAPE = graph_op("shape", _simple(lambda x, out_type: np.array(np.shape(x), out_type)))
SIZE = graph_op("size", _simple(lambda x, out_type: np.array(np.size(x), out_type)))
RANK = graph_op("rank", _simple(lambda x: np.array(np.ndim(x), np.int32)))


def shape(input, name=None, out_type="int32"):  # noqa: A002 - TF's names
    """The run-time shape of `input` as a 1-d int32 tensor (tf.shape)."""
    t = convert_to_tensor(input)
    dt = as_dtype(out_type)
    return _node(SHAPE, [t], {"out_type": dt.name}, Spec((t.ndim,), dt), name or "Shape")


def size(input, name=None, out_type="int32"):  # noqa: A002
    t = convert_to_tensor(input)
    dt = as_dtype(out_type)
    return _node(SIZE, [t], {"out_type": dt.name}, Spec((), dt), name or "Size")


def rank(input, name=None):  # noqa: A002
    t = convert_to_tensor(input)
    return _node(RANK, [t], {}, Spec((), np.dtype(np.int32)), name or "Rank")


# -- fill / zeros / ones ---------------------------------------------------------------------------
def _fill_kernel(dims, value):
    return np.full(tuple(int(d) for d in np.asarray(dims).reshape(-1)), value)


def _fill_vjp(g, dims, value, **_):
    return None, ops.sum(g)    # NOTE: every element is the value: TF's FillGrad


FILL = graph_op("fill", _simple(lambda dims, value: _fill_kernel(dims, value)), _fill_vjp)


def _dims_tensor(dims, what):
    """A shape given as a tensor, or a list mixing ints and scalar tensors, as one 1-d tensor;
    also the static shape that is known of it."""
    if isinstance(dims, Tensor):
        if dims.ndim != 1:
            raise located(f"{what}: a shape tensor must be 1-d, got {fmt_shape(dims.spec)}")
        src = dims.node.inputs[0] if dims.node.type == "shape" else None
        static = src.spec.shape if src is not None else \
            None if dims.shape[0] is None else (None,) * dims.shape[0]   # None: unknown rank
        return ops.cast(dims, np.int64), static
    parts = [ops.reshape(ops.cast(d, np.int64), (1,)) if isinstance(d, Tensor)
             else np.array([int(d)], np.int64) for d in dims]
    static = tuple(_known_dim(d) if isinstance(d, Tensor) else None if int(d) < 0 else int(d)
                   for d in dims)
    return ops.concat(*parts, axis=0), static


def _known_dim(t):
    """The static value of `shape(x)[i]` when x's dim i is known (TF's partial shape
    inference), else None."""
    n = t.node
    if n.type == "slice" and n.inputs[0].node.type == "shape":
        (i,) = n.attrs["index"] if isinstance(n.attrs["index"], tuple) else (n.attrs["index"],)
        src = n.inputs[0].node.inputs[0]
        if isinstance(i, int) and src.ndim is not None and -src.ndim <= i < src.ndim:
            return src.shape[i]
    return None


def _is_static(dims):
    if isinstance(dims, Tensor):
        return False
    if isinstance(dims, (list, tuple)):
        return not any(isinstance(d, Tensor) for d in dims)
    return True


def fill(dims, value, name=None):
    """A tensor of shape `dims` (ints, a shape tensor, or a list with scalar tensors) filled
    with `value` (a Python scalar takes float32 for floats, int32 for ints, as TF)."""
    if _is_static(dims):
        dt = np.asarray(value).dtype
        if not isinstance(value, (np.ndarray, np.generic)):   # Python scalars: TF's dtypes
            dt = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32}.get(dt, dt)
        return constant(np.full(_static(dims, "fill"), value, dtype=dt), name=name or "Fill")
    d, static = _dims_tensor(dims, "fill")
    v = value if isinstance(value, Tensor) else constant(value)
    return _node(FILL, [d, v], {}, Spec(static, v.dtype), name or "Fill")


def _static(dims, what):
    dims = dims if isinstance(dims, (list, tuple, np.ndarray)) else (dims,)
    if any(d is None or int(d) < 0 for d in dims):
        raise ValueError(f"{what}: shape {tuple(dims)} must be fully known (or a shape tensor)")
    return tuple(int(d) for d in dims)


def zeros(shape, dtype="float32", name=None):
    """tf.zeros: `shape` may be ints, a shape tensor (`zeros(shape(x))`), or a list with
    scalar tensors."""
    dt = as_dtype(dtype)
    if _is_static(shape):
        return constant(np.zeros(_static(shape, "zeros"), dt), name=name or "zeros")
    return fill(shape, np.zeros((), dt), name=name or "zeros")


def ones(shape, dtype="float32", name=None):
    dt = as_dtype(dtype)
    if _is_static(shape):
        return constant(np.ones(_static(shape, "ones"), dt), name=name or "ones")
    return fill(shape, np.ones((), dt), name=name or "ones")


# -- range -----------------------------------------------------------------------------------
RANGE = graph_op("range", _simple(lambda start, limit, delta, dtype:
                                    np.arange(start, limit, delta).astype(dtype)))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """tf.range: [start, limit) by delta; bounds may be scalar tensors."""
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    order = [np.dtype(d) for d in (np.int32, np.int64, np.float16, np.float32, np.float64)]
    kinds = [np.dtype(a.dtype) if isinstance(a, Tensor) else
             np.dtype(np.float32 if isinstance(a, float) else np.int32) for a in args]
    if any(k not in order for k in kinds):
        raise located(f"range: TF1 defines range for {', '.join(d.name for d in order)}, got "
                      f"{', '.join(k.name for k in kinds)}: cast the bounds first", TypeError)
    if dtype is None:   # NOTE: TF's: the widest of the arguments' dtypes in this order
        dtype = max(kinds, key=order.index)
    dt = as_dtype(dtype)
    if not any(isinstance(a, Tensor) for a in args):
        return constant(np.arange(start, limit, delta).astype(dt), name=name)
    ins = [a if isinstance(a, Tensor) else constant(np.asarray(a, dt)) for a in args]
    return _node(RANGE, ins, {"dtype": dt.name}, Spec((None,), dt), name)


# -- reshape to a shape tensor -------------------------------------------------------------------
def _dyn_reshape_vjp(g, x, shape_t, **_):
    return ops.reshape_like(g, x), None


DYNAMIC_RESHAPE = graph_op(
    "dynamic_reshape", _simple(lambda x, s: np.reshape(x, tuple(int(d) for d in s))),
    vjp=_dyn_reshape_vjp)


@named
def dynamic_reshape(tensor, shape):
    """Reshape to a shape known at run time (a 1-d tensor, or a list mixing ints and scalar
    tensors); `graph.reshape` calls it for such shapes."""
    s, static = _dims_tensor(shape, "reshape")
    return _node(DYNAMIC_RESHAPE, [tensor, s], {}, Spec(static, tensor.dtype), "Reshape")


# -- unstack -----------------------------------------------------------------------------------
def unstack(value, num=None, axis=0, name="unstack"):
    """The `num` slices of `value` along `axis` (known statically, or given as num)."""
    value = convert_to_tensor(value)
    if value.ndim is None:
        raise located("unstack: the input's rank must be known")
    a = norm_axis("unstack", axis, value.ndim, value.spec, frontend=True)
    n = value.shape[a] if num is None else int(num)
    if n is None:
        raise located(f"unstack: dimension {a} of {fmt_shape(value.spec)} is unknown; pass "
                      f"num=")
    pre = (slice(None),) * a
    return [ops.slice_(value, index=pre + (i,)) for i in builtins.range(n)]



# -- coordinates of True elements: a shape known only at run time --------------------------------
def _where_indices_kernel(node):
    return (lambda c: np.argwhere(c).astype(np.int64)), False


WHERE_INDICES = graph_op("where_indices", _where_indices_kernel)


def where_indices(condition, name=None):
    """The coordinates (N, rank) int64 of condition's True (nonzero) elements, in row-major
    order: tf.where(condition) without x and y."""
    c = convert_to_tensor(condition)
    if c.ndim is None:
        raise located("where: the condition's rank must be known")
    return _node(WHERE_INDICES, [c], {}, Spec((None, c.ndim), np.dtype(np.int64)),
                 name or "Where")


# -- placeholders with a default, and constant helpers ---------------------------------------------
def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's names
    """A placeholder that gives `input` when it is not fed (tf.placeholder_with_default);
    `shape` may have None dims, and input's shape must fit it. A computed default is an
    identity of it with the declared static shape (feeding it replaces the value, as TF)."""
    if isinstance(input, Tensor):
        if input.node.type != "const":
            return _computed_default(input, shape, name)
        value = input.node.attrs["value"]
    else:
        value = constant(input).node.attrs["value"]   # NOTE: TF's dtypes for Python values
    dims = _default_fits(value.shape, shape)
    g = get_default_graph()
    attrs = {"dtype": value.dtype.name, "shape": dims, "default": value}
    return g.create_node(PLACEHOLDER, (), attrs, [Spec(dims, value.dtype)],
                         name or "PlaceholderWithDefault").outputs[0]


def _default_fits(have, shape):
    """placeholder_with_default's declared dims, checked against the default's shape `have`
    (unknown dims on either side fit anything)."""
    dims = _norm_shape(shape)
    have = None if have is None else tuple(have)
    if dims is not None and have is not None and (len(dims) != len(have) or any(
            d is not None and h is not None and d != h for d, h in zip(dims, have))):
        raise ValueError(f"placeholder_with_default: the default's shape {fmt_shape(have)} "
                         f"does not fit shape {fmt_shape(dims)}")
    return dims


def _computed_default(input, shape, name):  # noqa: A002 - TF's name
    dims = _default_fits(input.shape, shape)
    g = _graph_of([input])
    return g.create_node(IDENTITY, (input,), {}, [Spec(dims, input.dtype)],
                         name or "PlaceholderWithDefault").outputs[0]


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32", name=None):
    """The identity matrix (num_rows, num_columns), repeated over batch_shape (tf.eye)."""
    m = np.eye(int(num_rows), None if num_columns is None else int(num_columns),
               dtype=as_dtype(dtype))
    if batch_shape is not None:
        m = np.broadcast_to(m, tuple(int(b) for b in batch_shape) + m.shape).copy()
    return constant(m, name=name or "eye")


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop, both included (tf.linspace). Tensor
    start and stop (scalars or arrays of one shape) as TF computes them: start, then
    start + i * (stop - start) / (num - 1), then stop exactly, along a new `axis`; integer
    ones in float32 (8, 16 bits) or float64 (32, 64 bits), as TF. num must be known when the
    graph is built."""
    if isinstance(num, Tensor):
        raise NotImplementedError("linspace: num must be a number when the graph is built")
    if isinstance(start, Tensor) or isinstance(stop, Tensor):
        return _linspace_tensors(start, stop, int(num), axis, name)
    if axis != 0:
        raise NotImplementedError("linspace: only axis=0 for numbers start and stop")
    dt = np.asarray(start).dtype
    if not isinstance(start, (np.ndarray, np.generic)) or dt.kind != "f":
        dt = np.dtype(np.float32)   # NOTE: TF's dtype for Python numbers
    return constant(np.linspace(start, stop, int(num)).astype(dt), name=name or "LinSpace")


def _linspace_tensors(start, stop, num, axis, name):
    start, stop = convert_to_tensor(start), convert_to_tensor(stop)
    dt = np.dtype(start.dtype)
    if dt.kind != "f":   # NOTE: TF's: float32 for 8- and 16-bit integers, float64 above
        dt = np.promote_types(dt, np.float32)
    start, stop = ops.cast(start, dt), ops.cast(stop, dt)
    nd = len(start.shape) + 1
    ax = axis % nd
    first, last = ops.expand_dims(start, axis=ax), ops.expand_dims(stop, axis=ax)
    if num <= 1:
        return ops.slice_(first, index=(slice(None),) * ax + (slice(0, num),))
    delta = (last - first) / np.asarray(num - 1, dt)
    steps = np.arange(1, num - 1, dtype=dt).reshape((1,) * ax + (-1,) + (1,) * (nd - 1 - ax))
    return ops.concat(first, first + steps * delta, last, axis=ax)


lin_space = linspace
