"""TF1's queues: `FIFOQueue` and `RandomShuffleQueue`, whose ops block as TF's do.

A queue is built into a graph; its elements live in each Session that runs its ops (TF1's
queues are per-session resources too), so the ops are nodes like any other and
`Session.run` may run them from several threads at once: a queue runner's threads enqueue
while the training loop dequeues. `dequeue` waits for an element, `enqueue` for room
(`capacity`); once the queue is closed, a dequeue that cannot get enough elements raises
`errors.OutOfRangeError` (how training loops learn that `num_epochs` are done), and an
enqueue raises `errors.CancelledError`. Closing the Session cancels every op still waiting.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> q = tf.FIFOQueue(4, [tf.float32], shapes=[()])
>>> fill = q.enqueue_many([[1.0, 2.0, 3.0]])
>>> pair = q.dequeue_many(2)
>>> with tf.Session() as sess:
...     sess.run(fill); sess.run(q.close())
...     print(sess.run(pair))
...     try:
...         sess.run(pair)
...     except tf.errors.OutOfRangeError:
...         print("closed, 1 element left")
[1. 2.]
closed, 1 element left
"""
from __future__ import annotations

import threading
import time
import warnings
from collections import deque

import numpy as np

from dualgrad.ops.core import Spec, fmt_shape, user_frame, where_str

from .core import Tensor, _graph_of, constant, get_default_graph, graph_op
from .dtypes import as_dtype, int32, bool_, string
from .errors import (CancelledError, DeadlineExceededError, InvalidArgumentError,
                     NotFoundError, OutOfRangeError, describe)
from .session import run_deadline
from .shapes import TensorShape

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"]

_POLL = 0.5          # seconds between checks for a cancelled wait
_HINT_AFTER = 10.0   # a dequeue waiting this long on a never-fed queue says why


# -- a queue's elements in one Session ------------------------------------------------------
class _Store:
    """The elements of one queue in one Session, with the waiting rules. Dequeues are served
    in arrival order (tickets), each taking elements as they come, as TF's queues do."""

    def __init__(self, queue, rng):
        self.queue, self.rng = queue, rng
        self.items = deque() if rng is None else []
        self.cond = threading.Condition()
        self.closed = self.cancel_enqueues = False
        self.cancelled = None            # why, once the Session closed
        self.next_ticket = self.serving = 0
        self.enqueued = 0
        self.waited, self.hinted = 0.0, False

    # waiting
    def wait(self, node, dequeuing=False):
        if self.cancelled:
            raise CancelledError(f"{self.queue._kind} '{self.queue.name}': {self.cancelled}",
                                 node=node)
        deadline, poll = run_deadline(), _POLL
        if deadline is not None:
            poll = deadline - time.monotonic()
            if poll <= 0:
                raise DeadlineExceededError(
                    f"Timed out waiting for notification: {describe(node)} waited on "
                    f"{self.queue._kind} '{self.queue.name}' longer than the run's timeout "
                    f"(RunOptions.timeout_in_ms / ConfigProto.operation_timeout_in_ms)",
                    node=node)
            poll = min(poll, _POLL)
        if not self.cond.wait(poll) and dequeuing and not self.enqueued:
            self.waited += poll
            if self.waited >= _HINT_AFTER and not self.hinted:
                self.hinted = True
                warnings.warn(f"{describe(node)} has waited {self.waited:g} s on queue "
                              f"'{self.queue.name}', which nothing has fed in this Session: "
                              f"start its queue runners (tf.train.start_queue_runners(sess)) "
                              f"or run an enqueue op from another thread", RuntimeWarning,
                              stacklevel=2)

    def session_closed(self):
        with self.cond:
            self.cancelled = "the Session was closed while this op waited"
            self.cond.notify_all()

    # enqueue
    def put(self, elements, node):
        q = self.queue
        with self.cond:
            if self.closed:
                raise CancelledError(f"{q._kind} '{q.name}' is closed.", node=node)
            for e in elements:
                while len(self.items) >= q.capacity and not self.cancel_enqueues:
                    self.wait(node)
                if self.cancel_enqueues:
                    raise CancelledError(f"{q._kind} '{q.name}' is closed: pending enqueue "
                                         f"cancelled (close(cancel_pending_enqueues=True))",
                                         node=node)
                self.items.append(e)
                self.enqueued += 1
                self.cond.notify_all()

    # dequeue
    def available(self):
        if self.rng is None or self.closed:
            return len(self.items)
        return len(self.items) - self.queue.min_after_dequeue

    def pop(self):
        if self.rng is None:
            return self.items.popleft()
        i = int(self.rng.integers(len(self.items)))
        self.items[i], self.items[-1] = self.items[-1], self.items[i]
        return self.items.pop()

    def restore(self, got):
        if self.rng is None:
            self.items.extendleft(reversed(got))
        else:
            self.items.extend(got)

    def take(self, n, up_to, node):
        """n elements (fewer, at least one, when `up_to` and the queue is closed)."""
        with self.cond:
            ticket = self.next_ticket
            self.next_ticket += 1
            try:
                while self.serving != ticket:
                    self.wait(node, True)
                return self._collect(n, up_to, node)
            finally:
                self.serving += 1
                self.cond.notify_all()

    def _collect(self, n, up_to, node):
        got = []
        while len(got) < n:
            if self.available() > 0:
                got.append(self.pop())
                self.cond.notify_all()
            elif self.closed:
                if up_to and got:
                    break
                self.restore(got)
                q = self.queue
                raise OutOfRangeError(f"{q._kind} '{q.name}' is closed and has insufficient "
                                      f"elements (requested {n}, current size "
                                      f"{len(self.items)})\n  in node {describe(node)}",
                                      node=node)
            else:
                try:
                    self.wait(node, True)
                except CancelledError:
                    self.restore(got)
                    raise
        return got

    def close(self, cancel_pending):
        with self.cond:
            self.closed = True
            self.cancel_enqueues = self.cancel_enqueues or cancel_pending
            self.cond.notify_all()


def store_of(state, queue):
    """The queue's elements in the Session of `state` (made on first use)."""
    key = ("queue", queue.shared_name) if queue.shared_name else queue
    with state.lock:
        s = state.resources.get(key)
        if s is None:
            s = state.resources[key] = _Store(queue, queue._rng())
        return s


# -- the ops ----------------------------------------------------------------------------------
def _enqueue_kernel(node):
    q, many = node.attrs["queue"], node.attrs["many"]

    def run(state, *values):
        q._check_values(values, many, node)
        # NOTE: copies, as TF's queues hold their own: the caller may fetch and change a value
        if many:
            elements = [tuple(np.array(v[i]) for v in values) for i in range(len(values[0]))]
        else:
            elements = [tuple(np.array(v) for v in values)]
        store_of(state, q).put(elements, node)
    return run, True


def _dequeue_kernel(node):
    q, n, up_to = node.attrs["queue"], node.attrs["n"], node.attrs["up_to"]

    def run(state):
        got = store_of(state, q).take(1 if n is None else n, up_to, node)
        if n is None:
            comps = [np.asarray(c, dtype=d) for c, d in zip(got[0], q.dtypes)]
        else:
            comps = [_stack([e[i] for e in got], d, s) for i, (d, s) in
                     enumerate(zip(q.dtypes, q._shapes))]
        return tuple(comps) if len(comps) > 1 else comps[0]
    return run, True


def _stack(values, dtype, shape):
    """The elements stacked along a new axis 0; elements of different sizes (a
    PaddingFIFOQueue's) padded at the end of each axis with 0 (b"" for strings)."""
    if not values:
        return np.empty((0,) + tuple(d or 0 for d in shape), dtype)
    dims = tuple(max(sizes) for sizes in zip(*[np.shape(v) for v in values]))
    out = np.full((len(values),) + dims, b"" if dtype == string else 0, dtype)
    for i, v in enumerate(values):
        # NOTE: the Ellipsis makes a 0-d target a view: a string is copied in, not its array
        out[(i,) + tuple(slice(0, d) for d in np.shape(v)) + (Ellipsis,)] = v
    return out


def _close_kernel(node):
    q, cancel = node.attrs["queue"], node.attrs["cancel_pending_enqueues"]

    def run(state):
        store_of(state, q).close(cancel)
    return run, True


def _size_kernel(node):
    q = node.attrs["queue"]

    def run(state):
        return np.array(len(store_of(state, q).items), np.int32)
    return run, True


def _is_closed_kernel(node):
    q = node.attrs["queue"]

    def run(state):
        return np.array(store_of(state, q).closed)
    return run, True


ENQUEUE = graph_op("queue_enqueue", _enqueue_kernel)
DEQUEUE = graph_op("queue_dequeue", _dequeue_kernel)
CLOSE = graph_op("queue_close", _close_kernel)
SIZE = graph_op("queue_size", _size_kernel)
IS_CLOSED = graph_op("queue_is_closed", _is_closed_kernel)


# -- the queue objects --------------------------------------------------------------------------
def _dtype_list(dtypes):
    dts = list(dtypes) if isinstance(dtypes, (list, tuple)) else [dtypes]
    return [string if d is str or d == "string" else as_dtype(d) for d in dts]


def _shape_list(shapes, n, what, unknown_dims=False):
    """TF's shape list: None (unknown), one shape per component; a list of ints (or
    Nones) alone is the one component's shape. Dims may be None only with unknown_dims."""
    if shapes is None:
        return None
    shapes = list(shapes) if isinstance(shapes, (list, tuple)) else [shapes]
    if all(d is None or isinstance(d, (int, np.integer)) for d in shapes):
        shapes = [shapes]
    shapes = [TensorShape(s) for s in shapes]
    if len(shapes) != n:
        raise ValueError(f"{what}: {len(shapes)} shapes for {n} dtypes: give one shape per "
                         f"component")
    for s in shapes:
        if s.ndims is None or not (unknown_dims or s.is_fully_defined()):
            raise ValueError(f"{what}: all shapes must be fully defined, got {shapes} "
                             f"(a queue's elements have one fixed shape per component)"
                             if not unknown_dims else f"{what}: every shape needs a known "
                             f"rank (its dims may be None), got {shapes}")
    return shapes


class QueueBase:
    """What TF1's queues share: the component dtypes / shapes / names and the ops
    `enqueue`, `enqueue_many`, `dequeue`, `dequeue_many`, `dequeue_up_to`, `close`,
    `is_closed`, `size`."""
    runtime_object = True   # NOTE: graph.save writes a marker graph.load refuses
    _kind = "Queue"
    _unknown_dims = False   # PaddingFIFOQueue: shapes' dims may be None
    min_after_dequeue = 0

    def __init__(self, capacity, dtypes, shapes, names, shared_name, name):
        self.capacity = int(capacity)
        if self.capacity <= 0:
            raise ValueError(f"{type(self).__name__}: capacity must be positive, got {capacity}")
        self._dtypes = _dtype_list(dtypes)
        what = f"{type(self).__name__}({name!r})"
        self._shapes = _shape_list(shapes, len(self._dtypes), what, self._unknown_dims)
        self._names = None if names is None else list(names)
        if self._names is not None and len(self._names) != len(self._dtypes):
            raise ValueError(f"{what}: {len(self._names)} names for {len(self._dtypes)} "
                             f"dtypes")
        self.shared_name = shared_name or None
        self._graph = get_default_graph()
        # NOTE: a name ending in '/' is a name scope's, used as is (TF1's producers do so)
        self.name = name[:-1] if name.endswith("/") else self._graph.unique_name(name)
        self._base = self.name.rsplit("/", 1)[-1]   # its ops' names, in the scope they are built

    # -- TF's properties ---------------------------------------------------------------------
    @property
    def dtypes(self):
        return list(self._dtypes)

    @property
    def shapes(self):
        return list(self._shapes) if self._shapes is not None else \
            [TensorShape(None) for _ in self._dtypes]

    @property
    def names(self):
        return self._names

    @property
    def graph(self):
        return self._graph

    def __repr__(self):
        return f"<graph.{type(self).__name__} '{self.name}' capacity={self.capacity}>"

    def _rng(self):
        return None

    # -- ops -------------------------------------------------------------------------------
    def enqueue(self, vals, name=None):
        """An op adding one element (a value per component)."""
        return self._enqueue(vals, False, name or f"{self._base}_enqueue")

    def enqueue_many(self, vals, name=None):
        """An op adding the slices along axis 0 of each component, as many elements."""
        return self._enqueue(vals, True, name or f"{self._base}_EnqueueMany")

    def dequeue(self, name=None):
        """One element: a tensor (one component), a list, or a dict (`names`)."""
        return self._dequeue(None, False, name or f"{self._base}_Dequeue")

    def dequeue_many(self, n, name=None):
        """n elements, stacked along a new axis 0; waits until n are there."""
        return self._dequeue(n, False, name or f"{self._base}_DequeueMany")

    def dequeue_up_to(self, n, name=None):
        """As dequeue_many, but a closed queue gives what it has left (at least one)."""
        return self._dequeue(n, True, name or f"{self._base}_DequeueUpTo")

    def close(self, cancel_pending_enqueues=False, name=None):
        """An op closing the queue: enqueues then fail; dequeues get what is left, then
        raise OutOfRangeError. With cancel_pending_enqueues, waiting enqueues fail too."""
        node = self._graph.create_node(
            CLOSE, (), {"queue": self, "cancel_pending_enqueues": bool(
                cancel_pending_enqueues)}, [], name or f"{self._base}_Close")
        return node

    def is_closed(self, name=None):
        return self._graph.create_node(IS_CLOSED, (), {"queue": self}, [Spec((), bool_)],
                                       name or f"{self._base}_IsClosed").outputs[0]

    def size(self, name=None):
        """The number of elements in the queue, as an int32 scalar."""
        return self._graph.create_node(SIZE, (), {"queue": self}, [Spec((), int32)],
                                       name or f"{self._base}_Size").outputs[0]

    # -- building ----------------------------------------------------------------------------
    def _where(self, what):
        return f"{what} of {type(self).__name__} '{self.name}' (at {where_str(user_frame())})"

    def _enqueue(self, vals, many, name):
        what = self._where("enqueue_many" if many else "enqueue")
        comps = [self._component(v, i, many, what)
                 for i, v in enumerate(self._ordered(vals, what))]
        g = _graph_of(comps) if comps else self._graph
        if g is not self._graph:
            raise ValueError(f"{what}: the values belong to another graph than the queue")
        return g.create_node(ENQUEUE, tuple(comps), {"queue": self, "many": many}, [], name)

    def _ordered(self, vals, what):
        if self._names is not None:
            if not isinstance(vals, dict) or set(vals) != set(self._names):
                raise ValueError(f"{what}: this queue has names {self._names}: enqueue a dict "
                                 f"with exactly those keys, got {vals!r}")
            return [vals[k] for k in self._names]
        if isinstance(vals, dict):
            raise ValueError(f"{what}: a dict can only be enqueued to a queue built with names=")
        vals = list(vals) if isinstance(vals, (list, tuple)) else [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"{what}: the queue's elements have {len(self._dtypes)} "
                             f"component(s) ({', '.join(d.name for d in self._dtypes)}), got "
                             f"{len(vals)} value(s)")
        return vals

    def _component(self, v, i, many, what):
        dt = self._dtypes[i]
        if isinstance(v, Tensor):
            if v.dtype != dt:
                raise ValueError(f"{what}: component {i}: tensor '{v.name}' has dtype "
                                 f"{v.dtype.name}, but the queue holds {dt.name} there; cast "
                                 f"it first (tf.cast)")
            t = v
        else:
            t = constant(_value(v, dt, i, what), name=f"component_{i}")
        shape = t.shape
        if many:
            if shape is not None and len(shape) == 0:
                raise ValueError(f"{what}: component {i} has shape (), but enqueue_many needs "
                                 f"rank at least 1 (axis 0 runs over the elements)")
            shape = None if shape is None else shape[1:]
        if self._shapes is not None and shape is not None and not \
                TensorShape(shape).is_compatible_with(self._shapes[i]):
            raise ValueError(f"{what}: component {i}: an element of shape "
                             f"{fmt_shape(tuple(shape))} does not fit the queue's shape "
                             f"{fmt_shape(tuple(self._shapes[i].as_list()))}")
        return t

    def _dequeue(self, n, up_to, name):
        if n is not None:
            n = _count(n, self._where("dequeue_up_to" if up_to else "dequeue_many"))
            if self._shapes is None:
                raise ValueError(
                    f"{self._where('dequeue_up_to' if up_to else 'dequeue_many')}: the queue "
                    f"was built without shapes, and DequeueMany / DequeueUpTo need every "
                    f"component's shape: pass shapes= to {type(self).__name__} (TF1 fails "
                    f"the same way when the op runs)")
        specs = []
        for i, dt in enumerate(self._dtypes):
            shape = None if self._shapes is None else tuple(self._shapes[i].as_list())
            if n is not None:
                shape = ((None if up_to else n),) + shape
            specs.append(Spec(shape, dt))
        # NOTE: a name scope's name ('batch/'): the node takes it as is (train.batch's 'batch')
        exact = name.endswith("/") and not _has_node(self._graph, name[:-1])
        node = self._graph.create_node(DEQUEUE, (), {"queue": self, "n": n, "up_to": up_to},
                                       specs, name[:-1] if exact else name.rstrip("/"),
                                       exact_name=exact)
        outs = list(node.outputs)
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def _check_values(self, values, many, node):
        """Run-time checks of what an enqueue received (shapes the graph did not know)."""
        if many and len({np.shape(v)[0] for v in values}) > 1:
            raise InvalidArgumentError(
                f"enqueue_many to {self._kind} '{self.name}': the components have different "
                f"sizes along axis 0 ({', '.join(str(np.shape(v)[0]) for v in values)})\n"
                f"  in node {describe(node)}", node=node)
        if self._shapes is None:
            return
        for i, (v, want) in enumerate(zip(values, self._shapes)):
            got = np.shape(v)[1:] if many else np.shape(v)
            if len(got) != len(want) or any(w is not None and w != g
                                            for w, g in zip(want.as_list(), got)):
                raise InvalidArgumentError(
                    f"Shape mismatch in tuple component {i} of {self._kind} '{self.name}': "
                    f"expected {fmt_shape(tuple(want.as_list()))}, got {fmt_shape(got)}\n"
                    f"  in node {describe(node)}", node=node)


def _has_node(g, name):
    try:
        g.get_operation_by_name(name)
    except NotFoundError:
        return False
    return True


def _count(n, what):
    if isinstance(n, Tensor):
        raise NotImplementedError(f"{what}: n must be a Python int here (a tensor n is not "
                                  f"supported)")
    if int(n) < 0:
        raise ValueError(f"{what}: n must be >= 0, got {n}")
    return int(n)


def _value(v, dt, i, what):
    """A Python / NumPy value as an array of the queue's dtype, as TF converts it."""
    if dt == string:
        arr = np.asarray(v, dtype=object)
        bad = [x for x in arr.flat if not isinstance(x, (str, bytes))]
        if bad:
            raise TypeError(f"{what}: component {i} holds strings; got {bad[0]!r}")
        return np.vectorize(lambda x: x.encode() if isinstance(x, str) else x,
                            otypes=[object])(arr) if arr.size else arr
    arr = np.asarray(v)
    if arr.dtype.kind in "USO" or not np.can_cast(arr.dtype, dt, "same_kind"):
        first = arr.flat[0].item() if arr.size else arr
        raise TypeError(f"{what}: component {i}: expected {dt.name}, got {first!r} of "
                        f"type '{type(first).__name__}'")
    return arr.astype(dt)


class FIFOQueue(QueueBase):
    """`FIFOQueue(capacity, dtypes, shapes=None, names=None, shared_name=None,
    name="fifo_queue")`: elements come out in the order they went in."""
    _kind = "FIFOQueue"

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class PaddingFIFOQueue(QueueBase):
    """`PaddingFIFOQueue(capacity, dtypes, shapes, names=None, shared_name=None,
    name="padding_fifo_queue")`: a FIFOQueue whose shapes may have None dims (the rank is
    required); `dequeue_many` / `dequeue_up_to` pad each batch to its largest element, with
    0 (b"" for strings), as `train.batch(dynamic_pad=True)` needs."""
    _kind = "PaddingFIFOQueue"
    _unknown_dims = True

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        if shapes is None:
            raise ValueError("PaddingFIFOQueue: shapes are required (their dims may be None)")
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class RandomShuffleQueue(QueueBase):
    """`RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes=None, names=None,
    seed=None, shared_name=None, name="random_shuffle_queue")`: each dequeue takes an element
    at random, once more than `min_after_dequeue` are there (until the queue closes). With a
    seed (or a graph seed) the order is the same in every Session, though not TF's."""
    _kind = "RandomShuffleQueue"

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        from .math_ops import get_seed
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)
        self.min_after_dequeue = int(min_after_dequeue)
        if not 0 <= self.min_after_dequeue < self.capacity:
            raise ValueError(f"RandomShuffleQueue('{self.name}'): min_after_dequeue must be "
                             f"in [0, capacity), got {min_after_dequeue} with capacity "
                             f"{capacity}")
        self._seed = get_seed(seed)

    def _rng(self):
        gs, s = self._seed
        return np.random.default_rng(None if gs is None else [gs, s])
