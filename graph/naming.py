"""TF's `name=` argument for op functions: `named(fn)` makes `fn` build its nodes in the
graph (arrays and numbers become constants) and name its result, with the nodes a composite
builds on the way under `name/`. Without `name=`, the name is TF's default for the function
(graph/tf_names.py: 'MatMul', 'Softmax', 'truediv'), else the function's own name.

>>> import numpy as np
>>> from dualgrad import graph
>>> from dualgrad.graph.naming import named
>>> double = named(lambda x: x * 2.0)
>>> double(np.ones(3, np.float32), name="twice").name
'twice:0'
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from dualgrad.ops.core import tracing

from .core import (GraphEngine, Tensor, _graph_of, _is_python_data, as_input,
                   get_default_graph, scoped_call)

__all__ = ["named", "with_keywords", "install_default_names"]


# The parameters through which TF's functions take tensors (`x`, `logits`, `a`, ...): TF
# converts what is passed there with convert_to_tensor first, so a Python list is a tensor
# before the function reads its .shape or does arithmetic with it (`l2_loss([1., 2.])`).
TENSOR_PARAMS = frozenset({"x", "y", "a", "b", "t", "input", "input_tensor", "tensor", "value",
                           "logits", "labels", "targets", "predictions", "features", "weights",
                           "bias", "biases"})


def named(fn):
    """Make `fn` a graph function: its ops build nodes (arrays and numbers become constants,
    as in TF; Python lists passed as its tensors too, `TENSOR_PARAMS`), and it takes TF's
    `name=` argument."""
    slots = _tensor_slots(fn)

    default = [fn.__name__, None]   # TF's default name, and the result's name in its scope

    @functools.wraps(fn)
    def wrapper(*args, name=None, **kw):
        with tracing(GraphEngine):
            if slots[1] and (any(_data(a) for a in args) or any(_data(v) for v in kw.values())):
                args, kw = _as_tensors(args, kw, slots)
            return _named_call(fn, args, kw, default[0] if name is None else name, default[1])

    def set_default_name(tf_name):   # NOTE: kept by functools.wraps of this wrapper too
        scope, _, leaf = tf_name.partition("/")
        default[:] = scope, leaf or None
    wrapper.set_default_name = set_default_name
    wrapper.default_name = lambda: "/".join(n for n in default if n)
    return with_keywords(wrapper, "name")


def _tensor_slots(fn):
    """({position: name}, names) of fn's parameters in TENSOR_PARAMS."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}, frozenset()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
    names = frozenset(p.name for p in params) & TENSOR_PARAMS
    return {i: n for i, n in enumerate(positional) if n in names}, names


# NOTE: class labels are ids: a list of them stays int32 beside float logits (TF converts
# them on their own); the other tensor parameters share the function's dtype
OWN_DTYPE = frozenset({"labels", "targets"})


def _as_tensors(args, kw, slots):
    """Python data among the tensor parameters as constants, in the dtype of the tensors
    passed beside them where TF converts it so (graph.core.as_input)."""
    want = next((a.dtype for a in list(args) + list(kw.values()) if isinstance(a, Tensor)),
                None)

    def convert(v, name):
        return as_input(v, None if name in OWN_DTYPE else want)
    args = [convert(a, slots[0][i]) if i in slots[0] and _data(a) else a
            for i, a in enumerate(args)]
    kw = {k: convert(v, k) if k in slots[1] and _data(v) else v for k, v in kw.items()}
    return args, kw


def _data(v):
    """Python data or a NumPy array: what TF converts with convert_to_tensor (dtype_hint: the
    function's other tensor), e.g. `tf.matmul(x_float32, np.ones((3, 2)))` is float32."""
    return isinstance(v, np.ndarray) or _is_python_data(v)


def with_keywords(wrapper, *names):
    """Give `wrapper` (a functools.wraps of a function) the signature it really has: the
    wrapped function's parameters plus the keyword-only `names` the wrapper itself takes,
    so `inspect.signature` and `help()` show TF's `name=` and the old argument names."""
    try:
        sig = inspect.signature(wrapper)
    except (TypeError, ValueError):
        return wrapper
    params = list(sig.parameters.values())
    kwargs = [p for p in params if p.kind is p.VAR_KEYWORD]
    params = [p for p in params if p.kind is not p.VAR_KEYWORD]
    have = {p.name for p in params}
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
               for n in names if n not in have]
    wrapper.__signature__ = sig.replace(parameters=params + kwargs)
    return wrapper


def _named_call(fn, args, kw, name, leaf=None):
    if name is None:
        return fn(*args, **kw)
    tensors = [a for a in list(args) + list(kw.values()) if isinstance(a, Tensor)]
    for a in args:
        if isinstance(a, (list, tuple)):
            tensors += [x for x in a if isinstance(x, Tensor)]
    return scoped_call(_graph_of(tensors) if tensors else get_default_graph(), name, fn,
                       *args, leaf=leaf, **kw)


def install_default_names(namespace, table):
    """Give each function of `table` ({path under namespace: TF's default name}) its default
    node name. Two paths to one function must agree (`graph.divide` is `graph.truediv`)."""
    given = {}
    for path, tf_name in table.items():
        fn = namespace
        for part in path.split("."):
            fn = getattr(fn, part)
        if not hasattr(fn, "set_default_name"):
            raise TypeError(f"graph.{path} is not a named graph function")
        key = id(fn.set_default_name)
        if given.get(key, tf_name) != tf_name:
            raise ValueError(f"graph.{path}: default name {tf_name!r}, but the same function "
                             f"is already named {given[key]!r}")
        given[key] = tf_name
        fn.set_default_name(tf_name)
