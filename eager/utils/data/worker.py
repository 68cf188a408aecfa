"""What runs inside a DataLoader worker process."""
from __future__ import annotations

import random
import traceback
from dataclasses import dataclass

from dualgrad import ops


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


def worker_loop(loader, index_queue, results, worker_id, base_seed):
    """Fetch the batches whose indices arrive on index_queue until a None arrives."""
    seed = base_seed + worker_id
    ops.manual_seed(seed)              # NOTE: each worker draws its own random stream, as torch
    random.seed(seed)
    _INFO[0] = WorkerInfo(worker_id, loader.num_workers, seed, loader.dataset)
    try:
        if loader.worker_init_fn is not None:
            loader.worker_init_fn(worker_id)
    except Exception:  # noqa: BLE001 - reported to the main process with the batch it spoils
        init_error = _describe(worker_id)
    else:
        init_error = None
    while True:
        job = index_queue.get()
        if job is None:
            return
        k, index = job
        if init_error is not None:
            results.put((k, False, init_error))
            continue
        try:
            results.put((k, True, loader._fetch(index)))
        except Exception:  # noqa: BLE001 - re-raised in the main process, traceback included
            results.put((k, False, _describe(worker_id)))


def _describe(worker_id):
    return (f"Caught an exception in DataLoader worker process {worker_id}.\n"
            f"Original {traceback.format_exc()}")
