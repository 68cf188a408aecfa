"""TF1's run-time checks: `Assert`, the `assert_*` family and `check_numerics` (the
variable-initialisation queries, `assert_variables_initialized` among them, are in
graph/variables.py, as in TF).

An assertion is a node that raises `errors.InvalidArgumentError` (naming itself and the
line that built it) when it runs with a false condition; as in TF1 it runs only when
fetched or made a control dependency (`with graph.control_dependencies([a]): ...`).

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> x = tf.placeholder(tf.float32, (None,))
>>> with tf.control_dependencies([tf.assert_positive(x, message="x must be > 0")]):
...     y = tf.log(x)
>>> with tf.Session() as s:
...     try:
...         s.run(y, {x: [1.0, -1.0]})
...     except tf.errors.InvalidArgumentError as e:
...         print(e.message.splitlines()[0])
assertion failed: [x must be > 0] [Condition x positive did not hold element-wise:] [x (at Placeholder:0) = ] [1.0 -1.0]
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops

from .core import Node, Tensor, _graph_of, _lift, convert_to_tensor, get_default_graph, graph_op
from .errors import InvalidArgumentError, describe
from .math_ops import named, reduce_all

__all__ = ["Assert", "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
           "assert_non_negative", "assert_non_positive", "check_numerics"]


def _show(value, summarize):
    """The first `summarize` entries, as TF prints a tensor in an assertion message."""
    flat = np.asarray(value).reshape(-1)
    more = "..." if flat.size > summarize else ""
    return " ".join(str(v) for v in flat[:summarize]) + more


def _assert_kernel(node):
    labels, summarize = node.attrs["labels"], node.attrs["summarize"]

    def run(state, condition, *data):
        if not bool(np.all(condition)):
            values = iter(data)
            shown = [lab if lab is not None else _show(next(values), summarize)
                     for lab in labels]
            raise InvalidArgumentError(f"assertion failed: [{'] ['.join(shown)}]\n  "
                                       f"(the assertion {describe(node)})", node=node)
    return run, True


ASSERT = graph_op("assert", _assert_kernel)


def Assert(condition, data, summarize=None, name=None) -> Node:  # noqa: N802 - TF's name
    """A node that raises InvalidArgumentError, showing `data` (strings and tensors), when
    it runs and `condition` (a bool scalar) is false."""
    c = convert_to_tensor(condition)
    if c.dtype != np.bool_:
        raise TypeError(f"Assert: condition must be bool, got {c.dtype.name}")
    data = list(data)
    labels = [str(d) if isinstance(d, str) else None for d in data]
    tensors = [d for d in data if not isinstance(d, str)]
    g = _graph_of([c, *tensors])
    ins = [_lift(g, t, [c]) for t in [c, *tensors]]
    attrs = {"labels": labels, "summarize": 3 if summarize is None else int(summarize)}
    return g.create_node(ASSERT, ins, attrs, [], name or "Assert")


def _compare(what, test, x, y, data, summarize, message, name):
    g = get_default_graph() if not any(isinstance(v, Tensor) for v in (x, y)) else \
        _graph_of([v for v in (x, y) if isinstance(v, Tensor)])
    with g.as_default(), g.name_scope(name or what):
        x = convert_to_tensor(x)
        y = None if y is None else (y if isinstance(y, Tensor) else
                                    convert_to_tensor(np.asarray(y, x.dtype)))
        cond = reduce_all(test(x) if y is None else test(x, y))
        if data is None:
            data = [f"Condition x {what.split('_', 1)[1]} did not hold element-wise:",
                    f"x (at {x.name}) = ", x]
            if y is not None:
                data += [f"y (at {y.name}) = ", y]
        if message is not None:
            data = [str(message)] + list(data)
        return Assert(cond, data, summarize)


def _binary_assert(what, test):
    def check(x, y, data=None, summarize=None, message=None, name=None):
        return _compare(what, test, x, y, data, summarize, message, name)
    check.__name__ = check.__qualname__ = what
    check.__doc__ = f"An Assert node that fails unless {what[7:]}(x, y) holds for every element."
    return check


def _unary_assert(what, test):
    def check(x, data=None, summarize=None, message=None, name=None):
        return _compare(what, test, x, None, data, summarize, message, name)
    check.__name__ = check.__qualname__ = what
    check.__doc__ = f"An Assert node that fails unless every element of x is {what[7:]}."
    return check


assert_equal = _binary_assert("assert_equal", ops.eq)
assert_none_equal = _binary_assert("assert_none_equal", ops.ne)
assert_less = _binary_assert("assert_less", ops.lt)
assert_less_equal = _binary_assert("assert_less_equal", ops.le)
assert_greater = _binary_assert("assert_greater", ops.gt)
assert_greater_equal = _binary_assert("assert_greater_equal", ops.ge)
assert_positive = _unary_assert("assert_positive", lambda x: ops.gt(x, 0))
assert_negative = _unary_assert("assert_negative", lambda x: ops.lt(x, 0))
assert_non_negative = _unary_assert("assert_non_negative", lambda x: ops.ge(x, 0))
assert_non_positive = _unary_assert("assert_non_positive", lambda x: ops.le(x, 0))


# -- check_numerics ----------------------------------------------------------------------------
def _check_numerics_kernel(node):
    message = node.attrs["message"]

    def run(state, x):
        x = np.asarray(x)
        if not np.isfinite(x).all():
            kind = "NaN" if np.isnan(x).any() else "Inf"
            if np.isnan(x).any() and np.isinf(x).any():
                kind = "Inf and NaN"
            raise InvalidArgumentError(f"{message} : Tensor had {kind} values\n  (the check "
                                       f"{describe(node)})", node=node)
        return x
    return run, True


CHECK_NUMERICS = graph_op("check_numerics", _check_numerics_kernel,
                          vjp=lambda g, x, **kw: (check_numerics(g, "the gradient of " +
                                                                 kw["message"]),))


def check_numerics(tensor, message, name=None) -> Tensor:
    """`tensor` passed through; running it raises InvalidArgumentError ('message : Tensor
    had NaN values') when it holds a NaN or an Inf. Its gradient is checked too, as TF's."""
    t = convert_to_tensor(tensor)
    if t.dtype.kind != "f":
        raise TypeError(f"check_numerics: expects a floating tensor, got {t.dtype.name}")
    g = _graph_of([t])
    return g.create_node(CHECK_NUMERICS, (_lift(g, t, [t]),), {"message": str(message)},
                         [t.spec], name or "CheckNumerics").outputs[0]
