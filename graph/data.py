"""`tf.data` for graphs: a lazy input pipeline whose iterators feed a graph.

A `Dataset` describes how to produce elements (a tensor, or a tuple / dict of them) one at a
time; nothing is produced until a Session runs an iterator's `get_next()` tensors, and then
only as many elements as asked for (`shuffle` holds `buffer_size`, `batch` one batch,
`prefetch` its buffer). At the end, `get_next()` raises `errors.OutOfRangeError`, as TF.
Functions given to `map` / `filter` are traced once into a graph of their own, as TF traces
them, and that graph runs for each element.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> ds = tf.data.Dataset.from_tensor_slices((np.arange(6.0), np.arange(6))).map(
...     lambda x, y: (x * 2.0, y)).batch(4)
>>> x, y = ds.make_one_shot_iterator().get_next()
>>> with tf.Session() as sess:
...     try:
...         while True:
...             print(*sess.run([x, y]))
...     except tf.errors.OutOfRangeError:
...         print("end")
[0. 2. 4. 6.] [0 1 2 3]
[ 8. 10.] [4 5]
end
"""
from __future__ import annotations

import itertools
import threading
from collections import deque

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec

from .core import Graph, Tensor, get_default_graph, graph_op, placeholder
from .dtypes import as_dtype
from .errors import FailedPreconditionError, OutOfRangeError
from .shapes import TensorShape

__all__ = ["Dataset", "Iterator", "TFRecordDataset", "TextLineDataset", "make_one_shot_iterator",
           "make_initializable_iterator", "get_output_types", "get_output_shapes"]


# -- element structures: a tensor, a tuple / list, or a dict of them ---------------------------
def _flatten(x):
    """Components of a structure; tuples and dicts nest, a list is one value, as in tf.data."""
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flatten(x[k])]
    if isinstance(x, tuple):
        return [v for item in x for v in _flatten(item)]
    return [x]


def _pack(structure, flat):
    flat = iter(flat)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, tuple):
            return tuple(build(v) for v in s)
        return next(flat)
    return build(structure)


def _as_array(x, dtype=None):
    if isinstance(x, Tensor):
        raise TypeError("tf.data: a dataset is made of values (arrays, lists, numbers), not of "
                        f"graph tensors such as {x.name!r}; pass a placeholder's values through "
                        "an initializable iterator's feed, or build the arrays first")
    a = np.asarray(x)
    if dtype is not None:
        return a.astype(dtype)
    if a.dtype == np.float64 and not isinstance(x, np.ndarray):
        return a.astype(np.float32)   # NOTE: Python floats become float32 tensors, as TF
    if a.dtype.kind in "US":
        return a.astype(object)
    return a


def _spec(a):
    return (a.dtype, TensorShape(a.shape))


class _Elements:
    """What datasets and iterators share: the element structure (`_structure`, a flat
    `_specs` list of (dtype, TensorShape)), as TF1's properties."""
    _structure = None
    _specs = ()

    @property
    def output_types(self):
        return _pack(self._structure, [d for d, _ in self._specs])

    @property
    def output_shapes(self):
        return _pack(self._structure, [s for _, s in self._specs])


# -- datasets ------------------------------------------------------------------------------
class Dataset(_Elements):
    """A lazy sequence of elements. Subclasses give `_elements()` (a fresh generator of
    flat lists of arrays) and `_specs` (a flat list of (dtype, TensorShape))."""
    runtime_object = True   # NOTE: graph.save writes a marker graph.load refuses

    def _elements(self):
        raise NotImplementedError

    @property
    def element_spec(self):
        return self.output_shapes

    # sources
    @staticmethod
    def from_tensor_slices(tensors):
        return _Slices(tensors)

    @staticmethod
    def from_tensors(tensors):
        return _Tensors(tensors)

    @staticmethod
    def range(*args, output_type=np.int64):  # noqa: A003 - TF's name
        return _Range(args, output_type)

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        return _Generator(generator, output_types, output_shapes, args)

    @staticmethod
    def zip(datasets):  # noqa: A003 - TF's name
        return _Zip(datasets)

    # transformations
    def map(self, map_func, num_parallel_calls=None, deterministic=None):  # noqa: A003
        return _Map(self, map_func)

    def filter(self, predicate):  # noqa: A003
        return _Filter(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None):
        return _Batch(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        return _Shuffle(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None):
        return _Derived(self, lambda: _repeat(self, count))

    def take(self, count):
        return _Derived(self, lambda: itertools.islice(self._elements(), _count(count)))

    def skip(self, count):
        return _Derived(self, lambda: itertools.islice(self._elements(), _count(count, 0), None))

    def prefetch(self, buffer_size):
        return _Derived(self, lambda: _prefetch(self._elements(), buffer_size))

    def cache(self, filename=""):
        if filename:
            raise NotImplementedError("Dataset.cache(filename): dualgrad caches in memory only; "
                                      "call cache() without a file name")
        return _Cached(self)

    def concatenate(self, dataset):
        return _Derived(self, lambda: itertools.chain(self._elements(), dataset._elements()))

    def enumerate(self, start=0):  # noqa: A003
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self))

    def apply(self, transformation_func):
        return transformation_func(self)

    # iterators (TF1 graph mode)
    def make_one_shot_iterator(self):
        return Iterator(self._structure, self._specs, dataset=self)

    def make_initializable_iterator(self, shared_name=None):
        it = Iterator(self._structure, self._specs)
        it._initializer = it.make_initializer(self)
        return it

    def __iter__(self):
        raise RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager "
                           "mode or within tf.function; in a graph, use "
                           "dataset.make_one_shot_iterator().get_next() and Session.run")


def _count(count, default=-1):
    count = default if count is None else int(count)
    return None if count < 0 else count


def _repeat(ds, count):
    n = _count(count)
    for _ in (itertools.count() if n is None else range(n)):
        yield from ds._elements()


def _prefetch(elements, size):
    buf = deque()
    size = max(1, int(size) if size not in (None, -1) else 1)   # AUTOTUNE (-1): one ahead
    for e in elements:
        buf.append(e)
        if len(buf) > size:
            yield buf.popleft()
    yield from buf


class _Slices(Dataset):
    def __init__(self, tensors):
        self._structure = tensors
        self._arrays = [_as_array(t) for t in _flatten(tensors)]
        n = {a.shape[0] if a.ndim else None for a in self._arrays}
        if None in n or len(n) != 1:
            raise ValueError("from_tensor_slices: every component needs the same first "
                             f"dimension; got shapes {[a.shape for a in self._arrays]}")
        self._n = n.pop()
        self._specs = [(a.dtype, TensorShape(a.shape[1:])) for a in self._arrays]

    def _elements(self):
        for i in range(self._n):
            yield [a[i] for a in self._arrays]


class _Tensors(Dataset):
    def __init__(self, tensors):
        self._structure = tensors
        self._arrays = [_as_array(t) for t in _flatten(tensors)]
        self._specs = [_spec(a) for a in self._arrays]

    def _elements(self):
        yield list(self._arrays)


class _Range(Dataset):
    def __init__(self, args, output_type):
        self._args, self._dtype = args, as_dtype(output_type)
        self._specs = [(self._dtype, TensorShape(()))]

    def _elements(self):
        for i in range(*self._args):
            yield [np.asarray(i, self._dtype)]


class _Generator(Dataset):
    def __init__(self, generator, output_types, output_shapes, args):
        self._gen, self._args = generator, tuple(args or ())
        self._structure = output_types
        types = [as_dtype(t) if t is not str else np.dtype(object)
                 for t in _flatten(output_types)]
        shapes = [None] * len(types) if output_shapes is None else _flatten_shapes(
            output_shapes, len(types))
        self._specs = [(t, TensorShape(s)) for t, s in zip(types, shapes)]
        if not isinstance(output_types, (tuple, dict)):
            self._structure = None

    def _elements(self):
        for item in self._gen(*self._args):
            flat = _flatten(item)
            if len(flat) != len(self._specs):
                raise ValueError(f"from_generator: the generator yielded {len(flat)} values, "
                                 f"output_types lists {len(self._specs)}")
            out = []
            for v, (dt, shape) in zip(flat, self._specs):
                a = np.asarray(v, dtype=dt)
                if not _compatible(shape, a.shape):
                    raise ValueError(f"from_generator: an element of shape {a.shape} does not "
                                     f"match output_shapes {tuple(shape)}")
                out.append(a)
            yield out


def _flatten_shapes(shapes, n):
    if n == 1 and (not shapes or not isinstance(shapes[0], (tuple, list, TensorShape))):
        return [shapes]
    return list(shapes) if not isinstance(shapes, dict) else [shapes[k] for k in sorted(shapes)]


def _compatible(shape, actual):
    dims = _dims(shape)
    return dims is None or len(dims) == len(actual) and all(
        d is None or d == a for d, a in zip(dims, actual))


def _dims(shape):
    """A TensorShape as a tuple for a placeholder / Spec; None for an unknown rank."""
    return None if shape is None or shape.ndims is None else tuple(tuple.__iter__(shape))


class _Zip(Dataset):
    def __init__(self, datasets):
        self._parts = _flatten_datasets(datasets)
        self._structure = tuple(d._structure for d in self._parts)
        self._specs = [s for d in self._parts for s in d._specs]

    def _elements(self):
        for parts in zip(*(d._elements() for d in self._parts)):
            yield [a for p in parts for a in p]


def _flatten_datasets(datasets):
    if isinstance(datasets, Dataset):
        return [datasets]
    return [d for x in datasets for d in _flatten_datasets(x)]


class _Derived(Dataset):
    """Same elements' structure as `source`, produced by `make()`."""

    def __init__(self, source, make):
        self._structure, self._specs, self._make = source._structure, source._specs, make

    def _elements(self):
        return self._make()


class _Cached(_Derived):
    def __init__(self, source):
        super().__init__(source, source._elements)
        self._seen = None

    def _elements(self):
        if self._seen is not None:
            yield from self._seen
            return
        seen = []
        for e in self._make():
            seen.append(e)
            yield e
        self._seen = seen


class _Batch(Dataset):
    def __init__(self, source, batch_size, drop_remainder):
        self._source, self._n, self._drop = source, int(batch_size), bool(drop_remainder)
        if self._n <= 0:
            raise ValueError(f"batch: batch_size must be positive, got {batch_size}")
        self._structure = source._structure
        lead = self._n if self._drop else None
        self._specs = [(d, TensorShape((lead,) + tuple(s))) for d, s in source._specs]

    def _elements(self):
        it = self._source._elements()
        while True:
            rows = list(itertools.islice(it, self._n))
            if not rows or (self._drop and len(rows) < self._n):
                return
            yield [_stack([r[i] for r in rows], "batch") for i in range(len(rows[0]))]


def _stack(arrays, what):
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"{what}: cannot batch elements of different shapes {sorted(shapes)}; "
                         "use padded_batch or make them one shape")
    return np.stack(arrays)


class _Shuffle(Dataset):
    """TF's shuffle: a buffer of `buffer_size` elements; each output is a random pick from it,
    replaced by the next input."""

    def __init__(self, source, buffer_size, seed, reshuffle):
        self._source, self._size = source, int(buffer_size)
        if self._size <= 0:
            raise ValueError(f"shuffle: buffer_size must be positive, got {buffer_size}")
        self._structure, self._specs = source._structure, source._specs
        self._seed, self._reshuffle = seed, True if reshuffle is None else reshuffle
        self._epoch = 0

    def _rng(self):
        if self._seed is None:
            return np.random.default_rng(ops.generator().integers(2 ** 63))
        epoch = self._epoch if self._reshuffle else 0
        self._epoch += 1
        return np.random.default_rng([int(self._seed), epoch])

    def _elements(self):
        rng, buf = self._rng(), []
        for e in self._source._elements():
            if len(buf) < self._size:
                buf.append(e)
                continue
            i = int(rng.integers(len(buf)))
            yield buf[i]
            buf[i] = e
        while buf:
            yield buf.pop(int(rng.integers(len(buf))))


# -- functions traced into graphs of their own (map, filter) -----------------------------------
class _Traced:
    """`fn` traced once on placeholders of the element's specs; run per element."""

    def __init__(self, fn, structure, specs, what):
        from .session import Session
        self.graph = Graph()
        with self.graph.as_default():
            self.inputs = [placeholder(d, _dims(s)) for d, s in specs]
            args = _pack(structure, self.inputs)
            out = fn(*args) if isinstance(args, tuple) else fn(args)
        out = tuple(out) if isinstance(out, list) else out
        self.structure = out
        self.outputs = [_lift_out(self.graph, o, what) for o in _flatten(out)]
        self.session = Session(graph=self.graph)

    def __call__(self, flat):
        out = self.session.run(self.outputs, dict(zip(self.inputs, flat)))
        return [np.asarray(v, dtype=object) if isinstance(v, (str, bytes)) else np.asarray(v)
                for v in out]


def _lift_out(g, o, what):
    if isinstance(o, Tensor):
        return o
    from .core import constant
    with g.as_default():
        return constant(_as_array(o))


class _Map(Dataset):
    def __init__(self, source, fn):
        self._source = source
        self._fn = _Traced(fn, source._structure, source._specs, "map")
        self._structure = self._fn.structure
        self._specs = [(t.dtype, TensorShape(t.shape)) for t in self._fn.outputs]

    def _elements(self):
        for e in self._source._elements():
            yield self._fn(e)


class _Filter(Dataset):
    def __init__(self, source, predicate):
        self._source = source
        self._fn = _Traced(predicate, source._structure, source._specs, "filter")
        self._structure, self._specs = source._structure, source._specs

    def _elements(self):
        for e in self._source._elements():
            if bool(self._fn(e)[0]):
                yield e


# -- file datasets --------------------------------------------------------------------------
def _files(filenames):
    if isinstance(filenames, (str, bytes)):
        return [filenames]
    return list(filenames)


class TFRecordDataset(Dataset):
    """The records of TFRecord files (bytes, checked against their CRCs), file by file."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        if compression_type:
            raise NotImplementedError("TFRecordDataset: compressed records are not supported")
        self._names = _files(filenames)
        self._specs = [(np.dtype(object), TensorShape(()))]

    def _elements(self):
        from .io import tf_record_iterator
        for name in self._names:
            for rec in tf_record_iterator(name):
                yield [np.asarray(rec, dtype=object)]


class TextLineDataset(Dataset):
    """The lines of text files (bytes, without the line ending), file by file."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        self._names = _files(filenames)
        self._specs = [(np.dtype(object), TensorShape(()))]

    def _elements(self):
        for name in self._names:
            with open(name, "rb") as f:
                for line in f:
                    yield [np.asarray(line.rstrip(b"\r\n"), dtype=object)]


# -- iterators ------------------------------------------------------------------------------
def _next_kernel(node):
    it = node.attrs["iterator"]

    def run(state):
        return it._next(state)
    return run, True


def _init_kernel(node):
    it, ds = node.attrs["iterator"], node.attrs["dataset"]

    def run(state):
        state.resources[it] = ds._elements()
    return run, True


ITERATOR_NEXT = graph_op("iterator_get_next", _next_kernel)
ITERATOR_INIT = graph_op("make_iterator", _init_kernel)


class Iterator(_Elements):
    """TF1's iterator: `get_next()` gives tensors that, each time a Session runs them, hold
    the next element; `initializer` (re)starts it on its dataset."""
    runtime_object = True   # NOTE: graph.save writes a marker graph.load refuses

    def __init__(self, structure, specs, dataset=None):
        self._structure, self._specs, self._one_shot = structure, list(specs), dataset
        self._initializer = None

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        types = [as_dtype(t) if t is not str else np.dtype(object)
                 for t in _flatten(output_types)]
        shapes = [None] * len(types) if output_shapes is None else \
            _flatten_shapes(output_shapes, len(types))
        return Iterator(output_types, [(t, TensorShape(s)) for t, s in zip(types, shapes)])

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer (a one-shot iterator "
                             "starts by itself)")
        return self._initializer

    def make_initializer(self, dataset, name=None):
        if len(dataset._specs) != len(self._specs) or any(
                d1 != d2 for (d1, _), (d2, _) in zip(dataset._specs, self._specs)):
            raise TypeError("make_initializer: the dataset's element types "
                            f"{[d.name for d, _ in dataset._specs]} do not match the "
                            f"iterator's {[d.name for d, _ in self._specs]}")
        g = get_default_graph()
        return g.create_node(ITERATOR_INIT, (), {"iterator": self, "dataset": dataset}, [],
                             name or "make_iterator")

    def get_next(self, name=None):
        g = get_default_graph()
        specs = [Spec(_dims(s), d) for d, s in self._specs]
        node = g.create_node(ITERATOR_NEXT, (), {"iterator": self}, specs,
                             name or "IteratorGetNext")
        return _pack(self._structure, node.outputs)

    def _next(self, state):
        with state.lock:   # NOTE: runs from several threads take turns (a generator is not
            lock = state.resources.setdefault((self, "lock"), threading.Lock())  # re-entrant)
        with lock:
            elements = state.resources.get(self)
            if elements is None:
                if self._one_shot is None:
                    raise FailedPreconditionError(
                        "GetNext() failed because the iterator has not been initialized. "
                        "Ensure that you have run the initializer operation for this iterator "
                        "before getting the next element.")
                elements = state.resources[self] = self._one_shot._elements()
            try:
                flat = next(elements)
            except StopIteration:
                raise OutOfRangeError("End of sequence") from None
        return tuple(flat) if len(flat) > 1 else flat[0]


def make_one_shot_iterator(dataset):
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset):
    return dataset.output_types


def get_output_shapes(dataset):
    return dataset.output_shapes


AUTOTUNE = -1
experimental = type("experimental", (), {"AUTOTUNE": AUTOTUNE})
