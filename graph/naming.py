"""TF's `name=` argument for op functions: `named(fn)` makes `fn` build its nodes in the
graph (arrays and numbers become constants) and name its result, with the nodes a composite
builds on the way under `name/`.

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

from dualgrad.ops.core import tracing

from .core import GraphEngine, Tensor, _graph_of, get_default_graph

__all__ = ["named", "with_keywords"]


def named(fn):
    """Make `fn` a graph function: its ops build nodes (arrays and numbers become constants,
    as in TF), and it takes TF's `name=` argument."""
    @functools.wraps(fn)
    def wrapper(*args, name=None, **kw):
        with tracing(GraphEngine):
            return _named_call(fn, args, kw, name)
    return with_keywords(wrapper, "name")


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
