"""What runs inside a DataLoader worker process.

Seeding, as torch's workers: each worker gets `seed = base_seed + worker_id` (base_seed is
drawn anew by every epoch's iterator from the loader's `generator`, else the global
generator); `eager.initial_seed()`, dualgrad's own stream and `random` are seeded with it,
and NumPy's global `np.random` with a state mixed from (base_seed, worker_id) by
`np.random.SeedSequence`, so random augmentation differs across workers and epochs.
`worker_init_fn(worker_id)` runs after that (the documented `seed_worker` pattern works).

Every result travels pickled by the worker itself: a batch that cannot be pickled becomes
an error of that batch instead of a silently dropped item (the queue's feeder thread would
only print it, and the main process would wait for a batch that never comes).
"""
from __future__ import annotations

import pickle
import random
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ...generator import default_generator


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


_INFO: list = [None]


def get_worker_info():
    """Inside a worker: its id, the number of workers, its seed and its dataset copy; else None."""
    return _INFO[0]


def seed_worker(worker_id, base_seed):
    """Seed this worker's generators as torch does; returns its seed (base_seed + worker_id)."""
    seed = base_seed + worker_id
    default_generator.manual_seed(seed)
    random.seed(seed)
    mask = 2 ** 32 - 1
    np.random.seed(np.random.SeedSequence([worker_id, base_seed & mask, base_seed >> 32])
                   .generate_state(4))
    return seed


def worker_loop(loader, index_queue, results, done, worker_id, base_seed):
    """Fetch the batches whose indices arrive on index_queue until a None arrives or `done`
    is set (the main process stopped iterating: skip what is still queued)."""
    seed = seed_worker(worker_id, base_seed)
    _INFO[0] = WorkerInfo(worker_id, loader.num_workers, seed, loader.dataset)
    init_error = None
    try:
        if loader.worker_init_fn is not None:
            loader.worker_init_fn(worker_id)
    except Exception as e:  # noqa: BLE001 - reported to the main process with the batch it spoils
        init_error = _describe(e, worker_id)
    while True:
        job = index_queue.get()
        if job is None or done.is_set():
            results.cancel_join_thread()   # NOTE: exit now, even if the main process stopped reading
            return
        k, index = job
        results.put(_result(loader, k, index, init_error, worker_id))


def _result(loader, k, index, init_error, worker_id):
    if init_error is not None:
        return pickle.dumps((k, False, init_error))
    try:
        return bytes(ForkingPickler.dumps((k, True, loader._fetch(index))))
    except Exception as e:  # noqa: BLE001 - re-raised in the main process, traceback included
        return pickle.dumps((k, False, _describe(e, worker_id)))


def _describe(e, worker_id):
    """(exception type when it travels, message with the worker's traceback)."""
    kind = type(e)
    try:
        pickle.loads(pickle.dumps(kind))
    except Exception:  # noqa: BLE001 - a class pickle cannot name: RuntimeError carries it
        kind = RuntimeError
    return kind, (f"Caught {type(e).__name__} in DataLoader worker process {worker_id}.\n"
                  f"Original {traceback.format_exc()}")


def reraise(kind, message):
    """Raise the worker's exception type with its message, as torch's DataLoader does."""
    if kind is KeyError:
        raise KeyError(_Verbatim(message))
    try:
        error = kind(message)
    except Exception:  # noqa: BLE001 - a constructor that wants other arguments
        raise RuntimeError(message) from None
    raise error


class _Verbatim(str):
    """KeyError shows repr() of its argument; this keeps the traceback's line breaks."""

    def __repr__(self):
        return str(self)
