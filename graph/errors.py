"""Errors raised while a graph runs, named as in `tf.errors`.

Every run-time error names the node that failed, its op, the shapes of the arrays it
received, and the line of user code that created it ("defined at"), like TF1's
"Caused by op ..., defined at". A node built by `gradients()` also names the forward node
it differentiates and where that one was defined. The original exception is chained
(`err.__cause__`).

>>> import numpy as np, pytest
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 3))
>>> y = x + np.ones((2, 3), np.float32)
>>> with graph.Session() as s:
...     s.run(y, {x: np.ones((4, 3), np.float32)})      # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
graph.errors.ShapeMismatchError: add: cannot broadcast (4, 3), (2, 3): ...
"""
from __future__ import annotations

from dualgrad.ops.core import KernelError, ShapeError, explain_failure, fmt_shape, spec_of, where_str


class OpError(Exception):
    """An error while running a node. `node` is the failing node (TF's `OpError.op`)."""

    def __init__(self, message, node=None, input_shapes=None):
        super().__init__(message)
        self.message = message
        self.node = node
        self.input_shapes = input_shapes

    @property
    def op(self):
        return self.node

    @property
    def location(self):
        return None if self.node is None else self.node.loc

    def __reduce__(self):
        return (type(self), (self.message,))


class InvalidArgumentError(OpError, ValueError):
    """A node received arguments it cannot work with (bad feed, bad shape at run time)."""


class ShapeMismatchError(InvalidArgumentError, ShapeError):
    """A shape rule failed at run time, with the real dims (also an `ops.ShapeError`)."""


class FailedPreconditionError(OpError):
    """The graph cannot run yet, e.g. a Variable was read before it was initialised."""


class OutOfRangeError(OpError):
    """The end of the input, as TF's: an iterator (`tf.data`) has no more elements, or a
    closed queue too few (`num_epochs` reached)."""


class DeadlineExceededError(OpError):
    """An op waited longer than `RunOptions(timeout_in_ms=)` or
    `ConfigProto(operation_timeout_in_ms=)` allows (a dequeue on an empty queue)."""


class CancelledError(OpError):
    """An op was cancelled: an enqueue to a closed queue, or a blocked queue op when its
    queue closed with `cancel_pending_enqueues` or its Session closed."""


class NotFoundError(OpError, KeyError):
    """A name that is not in the graph."""

    def __str__(self):  # KeyError would quote the message
        return self.message


class UnimplementedError(OpError, NotImplementedError):
    """Something this engine does not do (e.g. gradients of a graph-only node)."""


class InternalError(OpError):
    """A failure of the engine itself, not of the user's graph."""


class GraphFileError(ValueError):
    """A saved graph file that cannot be loaded: not JSON, unknown op, malformed structure."""


def describe(node) -> str:
    """`'dense/MatMul' (op matmul) defined at file.py:12`, plus the forward op for gradients."""
    part = getattr(node, "built_by", None)
    part = f", part of {part}" if part and part != node.type else ""
    s = f"'{node.name}' (op {node.type}{part}) defined at {where_str(node.loc)}"
    fwd = node.grad_of
    if fwd is not None:
        s += (f"\n  it computes the gradient of node '{fwd.name}' (op {fwd.type}) defined at "
              f"{where_str(fwd.loc)}")
    return s


def node_error(node, arrays, err) -> OpError:
    """The error a user sees when `node` failed on `arrays` at run time."""
    if isinstance(err, OpError):
        return err
    specs = [spec_of(a) for a in arrays]
    shapes = ", ".join(fmt_shape(s) for s in specs) or "no inputs"
    reason = err
    if node.op is not None and node.op.infer is not None and not isinstance(err, KernelError):
        try:
            reason = explain_failure(node.op, specs, node.attrs, err)
        except Exception:  # noqa: BLE001 - keep the original when the rule cannot explain
            reason = err
    cls = ShapeMismatchError if isinstance(reason, ShapeError) else InvalidArgumentError
    text = str(reason) if str(reason) else type(reason).__name__
    msg = f"{text}\n  in node {describe(node)}\n  with input shapes {shapes}"
    return cls(msg, node=node, input_shapes=[s.shape for s in specs])
