"""TF1's sparse updates of a Variable: `scatter_update(ref, indices, updates)` sets the rows
`ref[indices]` to `updates`; `scatter_add`, `scatter_sub`, `scatter_mul`, `scatter_div`,
`scatter_max`, `scatter_min` combine them with the rows (a repeated index combines every
one of its updates, as TF). `updates` has shape indices.shape + ref.shape[1:], or is a
scalar. The result is the variable's new value; an index outside [0, ref.shape[0]) raises
InvalidArgumentError when run, as TF on the CPU. Scatters carry no gradient, as TF's.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> v = tf.Variable(np.zeros((3, 2), np.float32))
>>> up = tf.scatter_add(v, [0, 2, 0], np.ones((3, 2), np.float32))
>>> with tf.Session() as s:
...     s.run(v.initializer)
...     s.run(up).tolist()
[[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.core import fmt_shape, located

from .core import Tensor, _graph_of, _lift, check_tf1_types, constant, graph_op
from .errors import FailedPreconditionError, InvalidArgumentError, describe
from .variables import Variable

__all__ = ["scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div",
           "scatter_max", "scatter_min"]

_COMBINE = {"scatter_update": None, "scatter_add": np.add, "scatter_sub": np.subtract,
            "scatter_mul": np.multiply, "scatter_div": np.divide, "scatter_max": np.maximum,
            "scatter_min": np.minimum}


def _scatter_kernel(node):
    name, how = node.attrs["var"], node.attrs["how"]

    def run(state, indices, updates):
        cur = state.variables.get(name)
        if cur is None:
            raise FailedPreconditionError(f"Attempting to use uninitialized value '{name}' in "
                                          f"{describe(node)}", node=node)
        idx = np.asarray(indices).astype(np.int64)
        n = cur.shape[0]
        bad = idx[(idx < 0) | (idx >= n)]
        if bad.size:
            raise InvalidArgumentError(f"{how}: index {int(bad[0])} is not in [0, {n}) for "
                                       f"variable '{name}' (in {describe(node)})", node=node)
        upd = np.asarray(updates, dtype=cur.dtype)
        if upd.ndim and upd.shape != idx.shape + cur.shape[1:]:
            raise InvalidArgumentError(f"{how}: updates {fmt_shape(upd.shape)} must have the "
                                       f"shape indices.shape + ref.shape[1:] = "
                                       f"{fmt_shape(idx.shape + cur.shape[1:])} (in "
                                       f"{describe(node)})", node=node)
        new = cur.copy()
        combine = _COMBINE[how]
        if combine is None:
            new[idx] = upd
        else:
            combine.at(new, idx, upd)
        state.variables[name] = new
        return new
    return run, True


SCATTER = graph_op("scatter", _scatter_kernel)


def _scatter(how, ref, indices, updates, name):
    if not isinstance(ref, Variable):
        raise TypeError(f"{how}: ref must be a graph.Variable, got {ref!r}")
    if not ref.shape:
        raise located(f"{how}: ref must have at least one dim, got a scalar")
    i = indices if isinstance(indices, Tensor) else constant(np.asarray(indices, np.int64))
    if i.dtype.kind not in "iu":
        raise TypeError(f"{how}: indices must be integers, got {i.dtype.name}")
    u = updates if isinstance(updates, Tensor) else constant(np.asarray(updates, ref.dtype))
    if u.dtype != ref.dtype:
        raise TypeError(f"{how}: updates '{u.name}' have dtype {u.dtype.name}, but Variable "
                        f"'{ref.node.name}' has dtype {ref.dtype.name}")
    if u.ndim and i.ndim is not None and u.ndim is not None:
        want = tuple(i.shape) + tuple(ref.shape[1:])
        if len(want) != u.ndim or any(None not in (a, b) and a != b
                                      for a, b in zip(u.shape, want)):
            raise located(f"{how}: updates {fmt_shape(u.spec)} must have the shape "
                          f"indices.shape + ref.shape[1:] = {fmt_shape(want)}")
    if how != "scatter_update":
        check_tf1_types("scatter", u)
    g = _graph_of([ref, i, u])
    node = g.create_node(SCATTER, tuple(_lift(g, t, [ref]) for t in (i, u)),
                         {"var": ref.node.name, "how": how}, [ref.spec], name or how)
    return node.outputs[0]


def _make(how):
    def scatter(ref, indices, updates, use_locking=None, name=None):
        return _scatter(how, ref, indices, updates, name)
    scatter.__name__ = scatter.__qualname__ = how
    return scatter


scatter_update, scatter_add, scatter_sub, scatter_mul, scatter_div, scatter_max, \
    scatter_min = (_make(h) for h in __all__)
