"""DataLoader: batches from a dataset through a sampler, optionally in worker processes.

>>> from dualgrad import eager
>>> from dualgrad.eager.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(eager.arange(10).float(), eager.arange(10))
>>> loader = DataLoader(ds, batch_size=4, shuffle=True, generator=eager.Generator().manual_seed(0))
>>> [tuple(y.shape) for x, y in loader], len(loader)
([(4,), (4,), (2,)], 3)
"""
from __future__ import annotations

import collections.abc as abc
import multiprocessing
import pickle
import queue
import time
import warnings

import numpy as np

from ...generator import rng_of
from ...core import Tensor
from ...factories import from_host
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker import WorkerInfo, get_worker_info, reraise, worker_loop

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo"]


def _stack(arrays):
    arrays = [np.asarray(a) for a in arrays]
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != arrays[0].shape:   # NOTE: torch's message (NumPy's names no entry)
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(arrays[0].shape)} at entry 0 and {list(a.shape)} at "
                               f"entry {i}")
    return from_host(Tensor(np.stack(arrays)))


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into tuples, lists and dicts as torch.

    Tensors and arrays are stacked; Python floats become float64, ints int64 and bools bool
    tensors; strings stay the sequence they came in (a list, or a tuple for a field of
    tuple samples, as torch's); a tuple of fields becomes a list of batched fields.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack([b._array for b in batch])
    if isinstance(elem, (np.ndarray, np.generic)) and elem.dtype.kind not in "OSU":
        return _stack(batch)
    if isinstance(elem, bool):
        return from_host(Tensor(np.array(batch, dtype=np.bool_)))
    if isinstance(elem, int):
        return from_host(Tensor(np.array(batch, dtype=np.int64)))
    if isinstance(elem, float):
        return from_host(Tensor(np.array(batch, dtype=np.float64)))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem}) \
            if type(elem) is not dict else {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):   # a namedtuple keeps its type
        return type(elem)(*(default_collate(f) for f in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(f) for f in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")


def default_convert(data):
    """What a loader with batch_size=None yields: arrays become tensors, the rest is kept."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSU":
        return Tensor(data)
    if isinstance(data, abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data


class DataLoader:
    """torch.utils.data.DataLoader: iterate over batches of `dataset`.

    `num_workers > 0` loads batches in that many worker processes (forked where the platform
    allows; `multiprocessing_context` chooses otherwise), `prefetch_factor` batches ahead per
    worker, yielded in sampler order. A worker's exception is re-raised here as its own type
    (RuntimeError when that type cannot travel) with the worker's traceback in the message.
    Workers are seeded as torch's (see worker.py). When iteration stops early (`break`, an
    exception) the workers skip what is queued and exit at once.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        self.dataset, self.num_workers, self.timeout = dataset, num_workers, timeout
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.worker_init_fn, self.generator = worker_init_fn, generator
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory, self.persistent_workers = pin_memory, persistent_workers
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, "
                                 "sampler and batch_sampler options")
            if num_workers:
                raise NotImplementedError(
                    "DataLoader: num_workers > 0 with an IterableDataset is not supported by "
                    "dualgrad; use num_workers=0 or a map-style Dataset")
        self._set_samplers(batch_size, shuffle, sampler, batch_sampler, drop_last, generator)
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self.batch_size is not None or batch_sampler is not None
            else default_convert)

    def _set_samplers(self, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(self.dataset, generator=generator) if shuffle \
                else SequentialSampler(self.dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler

    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _fetch(self, index):
        if self.batch_sampler is not None:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])

    def __iter__(self):
        if self._iterable:
            return self._iter_stream()
        if self.num_workers == 0:
            return (self._fetch(index) for index in self._index_sampler())
        return self._iter_workers()

    def _iter_stream(self):
        if self.batch_size is None:
            yield from (self.collate_fn(x) for x in self.dataset)
            return
        batch = []
        for x in self.dataset:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def _iter_workers(self):
        ctx = self.multiprocessing_context
        if ctx is None:
            ctx = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        ctx = multiprocessing.get_context(ctx) if isinstance(ctx, (str, type(None))) else ctx
        base_seed = int(rng_of(self.generator).integers(0, 2 ** 62))
        results, done = ctx.Queue(), ctx.Event()
        index_queues = [ctx.Queue() for _ in range(self.num_workers)]
        workers = [ctx.Process(target=worker_loop, daemon=True,
                               args=(self, index_queues[w], results, done, w, base_seed))
                   for w in range(self.num_workers)]
        try:
            for p in workers:
                p.start()
            yield from self._ordered(iter(self._index_sampler()), index_queues, results, workers)
        finally:
            _shutdown(workers, index_queues, results, done)

    def _ordered(self, indices, index_queues, results, workers):
        """Keep prefetch_factor batches per worker in flight; yield them in sampler order."""
        sent = done = 0
        ready = {}
        for _ in range(self.prefetch_factor * self.num_workers):
            sent += self._send(indices, index_queues, sent)
        while done < sent:
            while done not in ready:
                k, ok, value = self._receive(results, workers)
                ready[k] = (ok, value)
            ok, value = ready.pop(done)
            done += 1
            sent += self._send(indices, index_queues, sent)
            if not ok:
                reraise(*value)
            yield value

    @staticmethod
    def _send(indices, index_queues, k):
        index = next(indices, None)
        if index is None:
            return 0
        index_queues[k % len(index_queues)].put((k, index))
        return 1

    def _receive(self, results, workers):
        waited = 0.0
        while True:
            try:
                return pickle.loads(results.get(timeout=1.0))
            except queue.Empty:
                waited += 1.0
                dead = [w for w, p in enumerate(workers) if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"DataLoader worker (pid(s) "
                                       f"{', '.join(str(workers[w].pid) for w in dead)}) "
                                       f"exited unexpectedly") from None
                if self.timeout and waited >= self.timeout:
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} "
                                       f"seconds") from None

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler())


def _shutdown(workers, index_queues, results, done, grace=5.0):
    """Stop the workers now: they skip queued batches (`done`) and exit without waiting for
    the main process to read what they sent; one still alive after `grace` s is terminated.
    NOTE: nothing is read from `results` here: a worker that exits mid-write leaves a partial
    message there that a read would wait on forever."""
    done.set()
    for q in index_queues:
        q.put(None)
    deadline = time.monotonic() + grace
    for p in workers:
        if p.pid is None:
            continue                      # NOTE: never started (start() itself failed)
        p.join(timeout=max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.terminate()
            p.join(timeout=1.0)
    for q in (*index_queues, results):
        q.cancel_join_thread()
        q.close()

