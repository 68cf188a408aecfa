"""TF1's queue-based input pipelines: `QueueRunner`, the input producers and `batch`.

A `QueueRunner` holds a queue and the ops that fill it; `tf.train.start_queue_runners(sess,
coord)` starts a thread per op for every runner in the graph's QUEUE_RUNNERS collection,
each running its op until the queue closes or the coordinator asks to stop. The producers
(`string_input_producer`, `input_producer`, `range_input_producer`, `slice_input_producer`)
fill a FIFOQueue with their input, `num_epochs` times (counted by a local variable, so run
`local_variables_initializer()`), shuffled unless `shuffle=False`; `batch` / `shuffle_batch`
gather single examples into batches through a FIFOQueue / RandomShuffleQueue. The end of
the input reaches the training loop as `errors.OutOfRangeError`, as in TF1:

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> x, y = tf.train.slice_input_producer([np.arange(5.0), np.arange(5)], num_epochs=1,
...                                      shuffle=False)
>>> xs, ys = tf.train.batch([x, y], batch_size=2, allow_smaller_final_batch=True)
>>> with tf.Session() as sess:
...     sess.run(tf.local_variables_initializer())
...     coord = tf.train.Coordinator()
...     threads = tf.train.start_queue_runners(sess, coord)
...     try:
...         while not coord.should_stop():
...             print(sess.run(ys))
...     except tf.errors.OutOfRangeError:
...         print("done")
...     finally:
...         coord.request_stop()
...     coord.join(threads)
[0 1]
[2 3]
[4]
done
"""
from __future__ import annotations

import threading

import numpy as np

from dualgrad.ops.core import user_frame, where_str

from .core import (GraphKeys, Tensor, control_dependencies, convert_to_tensor,
                   get_default_graph, graph_op, name_scope)
from .errors import OutOfRangeError
from .queues import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue, _value
from .shapes import TensorShape

__all__ = ["QueueRunner", "add_queue_runner", "limit_epochs", "input_producer",
           "string_input_producer", "range_input_producer", "slice_input_producer", "batch",
           "shuffle_batch", "batch_join", "shuffle_batch_join", "random_shuffle"]


# -- QueueRunner ------------------------------------------------------------------------------
class QueueRunner:
    """`QueueRunner(queue, enqueue_ops, close_op=None, cancel_op=None,
    queue_closed_exception_types=None)`: `create_threads(sess, coord=None, daemon=False,
    start=False)` makes a thread per enqueue op that runs it over and over. A thread ends
    when its op raises one of `queue_closed_exception_types` (default OutOfRangeError: the
    input is used up), the last one to end runs `close_op` (default `queue.close()`); with a
    coordinator, a thread also ends when the coordinator stops, another thread then runs
    `cancel_op` (default `queue.close(cancel_pending_enqueues=True)`) to release the ops that
    wait, and any other error is reported to the coordinator (`coord.join` raises it)."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            raise NotImplementedError("QueueRunner(queue_runner_def=...): protobuf graphs are "
                                      "not read by dualgrad; build the runner from its queue")
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner: queue and enqueue_ops are required")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types or (OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs = {}            # session -> threads of it still running enqueue ops
        self._exceptions = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._closed_types)
    exceptions_raised = property(lambda self: list(self._exceptions))
    name = property(lambda self: self._queue.name)

    def __repr__(self):
        return f"<graph.train.QueueRunner of '{self.name}' ({len(self._enqueue_ops)} ops)>"

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The threads of this runner for `sess` (none when they are running already)."""
        with self._lock:
            if self._runs.get(sess, 0) > 0:
                return []
            self._runs[sess] = len(self._enqueue_ops)
            self._exceptions = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            daemon=daemon,
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads

    def _run(self, sess, op, coord):
        counted = False
        try:
            while coord is None or not coord.should_stop():
                try:
                    sess.run(op)
                except self._closed_types:
                    counted = True
                    if self._done(sess) == 0:   # NOTE: the last thread of sess closes
                        try:
                            sess.run(self._close_op)
                        except Exception:  # noqa: BLE001, S110 - a closed session
                            pass
                    return
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, as TF's runner
            if coord is not None:
                coord.request_stop(e)
            else:
                with self._lock:
                    self._exceptions.append(e)
                raise
        finally:
            if not counted:
                self._done(sess)

    def _done(self, sess):
        """Count one thread of `sess` as ended; how many are left."""
        with self._lock:
            self._runs[sess] = left = max(0, self._runs.get(sess, 1) - 1)
        return left

    def _close_on_stop(self, sess, coord):
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception:  # noqa: BLE001, S110 - a closed session cancelled its ops itself
            pass


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    """Add `qr` to the default graph's QUEUE_RUNNERS (what start_queue_runners starts)."""
    get_default_graph().add_to_collection(collection, qr)


# -- epochs and shuffling -----------------------------------------------------------------------
def _shuffle_kernel(node):
    seed = node.attrs["seed"]

    def run(state, value):
        from dualgrad import ops
        rng = ops.generator() if seed is None else state.rngs.setdefault(
            node.name, np.random.default_rng(seed))
        return value[rng.permutation(len(value))] if np.ndim(value) else value
    return run, True


SHUFFLE = graph_op("random_shuffle", _shuffle_kernel)


def random_shuffle(value, seed=None, name=None):
    """`value` with its slices along axis 0 in a random order (a new one each run)."""
    from .math_ops import get_seed
    t = convert_to_tensor(value)
    gs, s = get_seed(seed)
    return t.graph.create_node(SHUFFLE, (t,), {"seed": None if gs is None else [gs, s]},
                               [t.spec], name or "RandomShuffle").outputs[0]


def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, which raises OutOfRangeError once it has been evaluated num_epochs times
    (counted in a local variable `epochs`: run local_variables_initializer())."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    from .control_flow import identity
    from .variables import Variable, count_up_to
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        epochs = Variable(np.int64(0), trainable=False, name="epochs",
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = count_up_to(epochs, num_epochs)
        with control_dependencies([counter]):
            return identity(tensor, name=scope.rstrip("/").rsplit("/", 1)[-1])


# -- input producers ------------------------------------------------------------------------------
def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """A FIFOQueue filled by a QueueRunner with the rows of `input_tensor`, num_epochs times
    (None: forever), each epoch shuffled unless shuffle=False."""
    with name_scope(name, "input_producer", [input_tensor]) as scope:
        t = input_tensor if isinstance(input_tensor, Tensor) else \
            convert_to_tensor(np.asarray(input_tensor))
        shape = TensorShape(t.shape[1:] if t.shape is not None else None)
        if element_shape is not None:
            shape = TensorShape(element_shape).merge_with(shape) if t.shape is not None else \
                TensorShape(element_shape)
        if shape.ndims is None or not shape.is_fully_defined():
            raise ValueError(f"input_producer (at {where_str(user_frame())}): either "
                             f"`input_tensor` must have a fully defined shape or "
                             f"`element_shape` must be specified")
        if shuffle:
            t = random_shuffle(t, seed=seed)
        t = limit_epochs(t, num_epochs)
        q = FIFOQueue(capacity, [t.dtype], shapes=[shape], shared_name=shared_name,
                      name=scope)
        add_queue_runner(QueueRunner(q, [q.enqueue_many([t])], cancel_op=cancel_op))
        if summary_name is not None:
            _fullness(summary_name, q, 0, capacity)
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """A queue of file names (strings) for a reader: `string_tensor`, num_epochs times,
    shuffled unless shuffle=False."""
    from .dtypes import string
    if not isinstance(string_tensor, Tensor):
        what = f"string_input_producer (at {where_str(user_frame())})"
        arr = _value(string_tensor, string, 0, what)
        if arr.size == 0:
            raise ValueError(f"{what}: string_input_producer requires a non-null input tensor "
                             f"(no file names given)")
        string_tensor = convert_to_tensor(arr, name="input")
    elif string_tensor.dtype != string:
        raise TypeError(f"string_input_producer: '{string_tensor.name}' has dtype "
                        f"{string_tensor.dtype.name}, not string (file names)")
    return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity, shared_name,
                          f"fraction_of_{capacity}_full", name, cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers 0 .. limit - 1 (int32), num_epochs times."""
    from .array_ops import range as range_
    from .dtypes import int32
    with name_scope(name, "input_producer", [limit] if isinstance(limit, Tensor) else None):
        r = range_(limit) if isinstance(limit, Tensor) else \
            convert_to_tensor(np.arange(int(limit), dtype=np.int32))
        if r.dtype != int32:
            from .math_ops import cast
            r = cast(r, int32)
        return input_producer(r, [], num_epochs, shuffle, seed, capacity, shared_name,
                              f"fraction_of_{capacity}_full")


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row of each tensor of `tensor_list` per run (the same row of each), all rows
    num_epochs times, shuffled unless shuffle=False: a list of tensors."""
    from .array_ops import shape as shape_of
    from .math_ops import gather
    tensors = [t if isinstance(t, Tensor) else convert_to_tensor(np.asarray(t))
               for t in tensor_list]
    if not tensors:
        raise ValueError("Expected at least one tensor in slice_input_producer().")
    with name_scope(name, "input_producer", tensors):
        n = tensors[0].shape[0] if tensors[0].shape else None
        limit = shape_of(tensors[0])[0] if n is None else n
        q = range_input_producer(limit, num_epochs, shuffle, seed, capacity, shared_name)
        index = q.dequeue()
        return [gather(t, index) for t in tensors]


# -- batching ---------------------------------------------------------------------------------
def _tensor_list(tensors, what):
    items = [tensors[k] for k in sorted(tensors)] if isinstance(tensors, dict) else \
        list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if not items:
        raise ValueError(f"Expected at least one tensor in {what}().")
    return [t if isinstance(t, Tensor) else convert_to_tensor(t) for t in items]


def _shapes(tensor_lists, shapes, enqueue_many, what, dynamic_pad=False):
    if shapes is not None:
        return [TensorShape(s) for s in shapes]
    out = []
    for i, t in enumerate(tensor_lists[0]):
        s = None if t.shape is None else (t.shape[1:] if enqueue_many else t.shape)
        for other in tensor_lists[1:]:
            o = other[i].shape
            o = None if o is None else (o[1:] if enqueue_many else o)
            s = s if o is None else o if s is None else TensorShape(s).merge_with(o)
        out.append(TensorShape(s))
    bad = [s for s in out if s.ndims is None or not (dynamic_pad or s.is_fully_defined())]
    if bad:
        found = [str(s) if s.ndims is not None else '<unknown rank>' for s in out]
        raise ValueError(f"{what} (at {where_str(user_frame())}): " + (
            f"with dynamic_pad every tensor needs a known rank: {found}" if dynamic_pad else
            f"All shapes must be fully defined: {found}; pass shapes= (one per tensor), or "
            f"dynamic_pad=True to pad dims of unknown size"))
    return out


def _restructure(tensors, dequeued):
    if isinstance(tensors, dict):
        outs = dequeued if isinstance(dequeued, list) else [dequeued]
        return dict(zip(sorted(tensors), outs))
    return dequeued


def _fullness(tag, q, offset, span):
    from . import summary
    from .math_ops import cast, maximum
    from .dtypes import float32
    size = cast(q.size(), float32)
    if offset:
        size = maximum(size - float(offset), 0.0)
    summary.scalar(tag, size * (1.0 / span))


def _batch(tensor_lists, original, batch_size, capacity, enqueue_many, shapes, dynamic_pad,
           allow_smaller, shared_name, name, what, shuffle=None):
    with name_scope(name, what, tensor_lists[0]) as scope:
        lists = [_tensor_list(ts, what) for ts in tensor_lists]
        dtypes = [t.dtype for t in lists[0]]
        for ts in lists[1:]:
            if [t.dtype for t in ts] != dtypes:
                raise TypeError(f"{what}: the tensor lists have different dtypes")
        shapes = _shapes(lists, shapes, enqueue_many, what, dynamic_pad)
        if shuffle is None:
            kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
            q = kind(capacity, dtypes, shapes, shared_name=shared_name)
            _fullness(f"fraction_of_{capacity}_full", q, 0, capacity)
        else:
            min_after, seed = shuffle
            q = RandomShuffleQueue(capacity, min_after, dtypes, shapes, seed=seed,
                                   shared_name=shared_name)
            _fullness(f"fraction_over_{min_after}_of_{capacity - min_after}_full", q, min_after,
                      capacity - min_after)
        ops = [q.enqueue_many(ts) if enqueue_many else q.enqueue(ts) for ts in lists]
        add_queue_runner(QueueRunner(q, ops))
        dequeued = q.dequeue_up_to(batch_size, name=scope) if allow_smaller else \
            q.dequeue_many(batch_size, name=scope)
        return _restructure(original, dequeued)


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of `batch_size` examples of `tensors` (a list or dict of tensors, each one
    example, or a batch of them with enqueue_many=True), in order with one thread; the
    final, smaller batch only with allow_smaller_final_batch=True. With dynamic_pad=True,
    dims of unknown size are padded per batch to its largest example (PaddingFIFOQueue)."""
    return _batch([tensors] * int(num_threads), tensors, batch_size, capacity, enqueue_many,
                  shapes, dynamic_pad, allow_smaller_final_batch, shared_name, name, "batch")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """As batch, with one enqueueing thread per list of tensors in `tensors_list`."""
    return _batch(list(tensors_list), tensors_list[0], batch_size, capacity, enqueue_many,
                  shapes, dynamic_pad, allow_smaller_final_batch, shared_name, name,
                  "batch_join")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """As batch, through a RandomShuffleQueue holding at least min_after_dequeue examples
    after each dequeue (until the input ends): batches of examples drawn at random."""
    return _batch([tensors] * int(num_threads), tensors, batch_size, capacity, enqueue_many,
                  shapes, False, allow_smaller_final_batch, shared_name, name, "shuffle_batch",
                  shuffle=(min_after_dequeue, seed))


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """As shuffle_batch, with one enqueueing thread per list of tensors in `tensors_list`."""
    return _batch(list(tensors_list), tensors_list[0], batch_size, capacity, enqueue_many,
                  shapes, False, allow_smaller_final_batch, shared_name, name,
                  "shuffle_batch_join", shuffle=(min_after_dequeue, seed))
