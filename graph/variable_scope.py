"""TF1's variable scopes: `get_variable`, `variable_scope(reuse=True / AUTO_REUSE)`.

A graph keeps a store of the variables `get_variable` made, by full name (`rnn/cell/kernel`).
`variable_scope(name)` prefixes those names and opens a name scope of the same name for the
ops built inside; `reuse=True` makes `get_variable` return the stored variable (and raise if
there is none), `AUTO_REUSE` creates it the first time and returns it afterwards. Without
reuse, asking twice for one name raises, as in TF1. Reuse is inherited by nested scopes.

>>> from dualgrad import graph
>>> with graph.variable_scope("layer"):
...     w = graph.get_variable("w", [3, 2])
>>> with graph.variable_scope("layer", reuse=True):
...     graph.get_variable("w") is w
True
>>> w.name
'layer/w:0'
"""
from __future__ import annotations

import contextlib
import weakref

import numpy as np

from .core import GraphKeys, Tensor, get_default_graph, _graph_of
from .dtypes import as_dtype
from .init_ops import glorot_uniform_initializer, zeros_initializer
from .variables import Variable

__all__ = ["AUTO_REUSE", "VariableScope", "variable_scope", "get_variable",
           "get_variable_scope", "layer_scope", "layer_variable", "regularize_output"]


class _AutoReuse:
    def __repr__(self):
        return "AUTO_REUSE"


AUTO_REUSE = _AutoReuse()


class VariableScope:
    """What `variable_scope` yields: its `name`, `reuse`, default `initializer`,
    `regularizer` and `dtype`, and `original_name_scope` (the name scope opened with it)."""

    def __init__(self, name="", reuse=None, initializer=None, dtype=None, name_scope="",
                 regularizer=None):
        self.name, self.reuse, self.initializer = name, reuse, initializer
        self.dtype, self.original_name_scope = dtype, name_scope
        self.regularizer = regularizer

    def reuse_variables(self):
        """From now on `get_variable` in this scope returns existing variables."""
        self.reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer

    def set_regularizer(self, regularizer):
        self.regularizer = regularizer

    def __repr__(self):
        return f"<VariableScope {self.name!r} reuse={self.reuse}>"


class _Store:
    def __init__(self):
        self.vars: dict[str, Variable] = {}
        self.stack = [VariableScope()]
        self.opened: dict[str, int] = {}   # TF1's variable_scopes_count: entries by full name

    def unique(self, parent, default_name):
        """TF1's unique default name: `dense`, then `dense_1`, … among the scopes opened in
        `parent` since it was last entered by name (leaving it forgets its subscopes, so a
        tower re-entered with reuse=True finds its `dense` again)."""
        base = f"{parent.name}/{default_name}" if parent.name else default_name
        if not self.opened.get(base):
            return default_name
        k = 1
        while self.opened.get(f"{base}_{k}"):
            k += 1
        return f"{default_name}_{k}"

    @contextlib.contextmanager
    def entered(self, full, by_object):
        self.opened[full] = self.opened.get(full, 0) + 1
        saved = dict(self.opened) if by_object else None
        try:
            yield
        finally:
            if by_object:
                self.opened = saved
            else:
                for k in self.opened:
                    if k.startswith(full + "/"):
                        self.opened[k] = 0


_STORES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _store(g) -> _Store:
    s = _STORES.get(g)
    if s is None:
        s = _STORES[g] = _Store()
    return s


def get_variable_scope() -> VariableScope:
    return _store(get_default_graph()).stack[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """`with variable_scope("name", reuse=...)` as tf.compat.v1.variable_scope."""
    for arg, what in ((partitioner, "partitioner"), (custom_getter, "custom_getter"),
                      (constraint, "constraint")):
        if arg is not None:
            raise NotImplementedError(f"variable_scope: {what}= is not supported")
    tensors = [v for v in (values or ()) if isinstance(v, Tensor)]
    g = _graph_of(tensors) if tensors else get_default_graph()
    st = _store(g)
    parent = st.stack[-1]
    by_object = isinstance(name_or_scope, VariableScope)
    if by_object:
        full, ns = name_or_scope.name, name_or_scope.original_name_scope
        base = name_or_scope
    elif name_or_scope is None:
        if default_name is None:
            raise ValueError("variable_scope: pass a name or a default_name")
        if reuse is True:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        leaf = st.unique(parent, default_name)
        full = f"{parent.name}/{leaf}" if parent.name else leaf
        ns, base = default_name, parent
    else:
        full = f"{parent.name}/{name_or_scope}" if parent.name else str(name_or_scope)
        ns, base = None, parent
    # NOTE: as in TF1, reuse=False cannot turn off a reuse inherited from the enclosing scope
    scope = VariableScope(full, reuse if reuse is True or reuse is AUTO_REUSE else
                          (base.reuse if base.reuse is not None else parent.reuse),
                          initializer if initializer is not None else base.initializer,
                          dtype if dtype is not None else base.dtype,
                          regularizer=regularizer if regularizer is not None else
                          base.regularizer)
    with g.as_default(), _name_scope(g, ns, full, auxiliary_name_scope) as opened, \
            st.entered(full, by_object):
        scope.original_name_scope = opened
        st.stack.append(scope)
        try:
            yield scope
        finally:
            st.stack.pop()


@contextlib.contextmanager
def _name_scope(g, ns, full, auxiliary):
    if not auxiliary:
        yield ""
        return
    name = ns if ns else full.rsplit("/", 1)[-1]
    with g.name_scope(name) as opened:
        yield opened


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable `scope/name`: created (with `initializer`, the scope's, or Glorot
    uniform for floats and zeros otherwise), or the existing one when the scope reuses.
    A new variable's `regularizer(v)` (or the scope's) goes to the collection
    `GraphKeys.REGULARIZATION_LOSSES`, as in TF1."""
    for arg, what in ((partitioner, "partitioner"),
                      (custom_getter, "custom_getter"), (constraint, "constraint")):
        if arg is not None:
            raise NotImplementedError(f"get_variable: {what}= is not supported")
    g = get_default_graph()
    st, scope = _store(g), _store(g).stack[-1]
    full = f"{scope.name}/{name}" if scope.name else name
    found = st.vars.get(full)
    if found is not None and (scope.reuse is True or scope.reuse is AUTO_REUSE):
        return _check_shared(found, full, shape, dtype)
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         f"get_variable(). Did you mean to set reuse=AUTO_REUSE in VarScope?")
    if found is not None:
        raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                         f"reuse=True or reuse=AUTO_REUSE in VarScope?")
    v = _create(g, scope, full, shape, dtype, initializer,
                True if trainable is None else trainable, collections)
    st.vars[full] = v
    _regularize(g, v, regularizer if regularizer is not None else scope.regularizer)
    return v


def _regularize(g, v, regularizer):
    if regularizer is None:
        return
    with g.name_scope(v.op.name + "/Regularizer/"):
        loss = regularizer(v)
    if loss is not None:
        g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def _check_shared(v, full, shape, dtype):
    if shape is not None and tuple(int(d) for d in shape) != tuple(v.shape):
        raise ValueError(f"Trying to share variable {full}, but specified shape "
                         f"{tuple(int(d) for d in shape)} and found shape {tuple(v.shape)}.")
    if dtype is not None and as_dtype(dtype) != v.dtype:
        raise ValueError(f"Trying to share variable {full}, but specified dtype "
                         f"{as_dtype(dtype)} and found dtype {v.dtype.name}.")
    return v


def _create(g, scope, full, shape, dtype, initializer, trainable, collections=None):
    init = initializer if initializer is not None else scope.initializer
    if isinstance(init, (Tensor, np.ndarray, list, tuple, int, float)) and not callable(init):
        if shape is not None:
            raise ValueError(f"get_variable {full}: if initializer is a value or a tensor, "
                             f"do not give shape")
        value = init
    else:
        if shape is None:
            raise ValueError(f"get_variable {full}: the shape of a new variable must be given")
        dt = as_dtype(dtype if dtype is not None else scope.dtype or "float32")
        if init is None:
            init = glorot_uniform_initializer() if dt.kind == "f" else zeros_initializer()
        shape = tuple(int(d) for d in shape)

        def value():
            return init(shape, dtype=dt)
    prefix, leaf = full.rsplit("/", 1) if "/" in full else ("", full)
    with g.name_scope(prefix + "/" if prefix else ""):
        return Variable(value, trainable=trainable, name=leaf,
                        dtype=None if dtype is None else as_dtype(dtype), collections=collections)



# -- what tf.layers build with ---------------------------------------------------------------------
def layer_scope(what, name, reuse, inputs):
    """The variable scope a `tf.layers` call creates its variables in, as TF1: `name`, or
    a unique `what` (`dense`, `dense_1`, … ; a tower re-entered finds its `dense` again);
    `reuse=True` (or an enclosing reusing scope) shares the variables of the same name."""
    return variable_scope(name, default_name=what, reuse=reuse or None, values=[inputs])


def layer_variable(name, shape, dtype, initializer, default, regularizer=None,
                   trainable=True):
    """`get_variable` for a layer's weight: `initializer` None (then `default`), an
    initializer or a callable `init(shape, dtype)`, or an array of exactly `shape`."""
    shape = tuple(int(d) for d in shape)
    init = default if initializer is None else initializer
    if not callable(init):
        value = np.asarray(init, dtype=as_dtype(dtype))
        if value.shape != shape:
            raise ValueError(f"{get_variable_scope().name}/{name}: initial value of shape "
                             f"{value.shape} does not fit the variable's shape {shape}")
        init = (lambda v: lambda shape, dtype=None, **_: v)(value)
    return get_variable(name, shape, dtype, init, regularizer, trainable)


def regularize_output(y, regularizer):
    """A layer's `activity_regularizer(output)`, into REGULARIZATION_LOSSES as in TF1."""
    if regularizer is not None:
        loss = regularizer(y)
        if loss is not None:
            y.graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return y
