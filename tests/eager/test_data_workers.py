"""Issue 32, DataLoader workers: prompt shutdown on `break`, torch's per-worker seeding
(np.random and random differ across workers and epochs; generator=, worker_init_fn,
seed_worker, get_worker_info), a worker's exception re-raised as its own type, and a batch
that cannot travel reported instead of waited for. Every test runs under hang_guard."""
from __future__ import annotations

import random
import time

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager.utils.data import DataLoader, Dataset, get_worker_info

pytestmark = pytest.mark.usefixtures("hang_guard")


class Images(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return np.zeros((256, 256), np.float32)


@pytest.mark.parametrize("workers", [2, 4])
def test_break_after_the_first_batch_ends_the_workers_promptly(workers):
    loader = DataLoader(Images(), batch_size=8, num_workers=workers)
    start = time.perf_counter()
    for _ in loader:
        break
    took = time.perf_counter() - start
    assert took < 2.0, f"break with {workers} workers took {took:.2f} s (torch: ~0.2 s)"


class Draws(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return np.array([np.random.randint(2 ** 31), random.randint(0, 2 ** 31),
                         int(eager.randint(0, 2 ** 31, ()).item()), info.id, info.seed,
                         eager.initial_seed()], np.int64)


def _epochs(n, **kw):
    loader = DataLoader(Draws(), batch_size=2, num_workers=2, **kw)
    return [np.concatenate([b.numpy() for b in loader]) for _ in range(n)]


def test_random_streams_differ_across_workers_and_epochs():
    rows = np.concatenate(_epochs(2))
    for col, name in enumerate(["np.random", "random", "eager.randint"]):
        assert len(set(rows[:, col])) == len(rows), f"{name}: {rows[:, col]}"
    # initial_seed() inside a worker is its seed: base_seed + worker id, as torch
    assert (rows[:, 4] == rows[:, 5]).all()
    for epoch in _epochs(2):
        base = epoch[epoch[:, 3] == 0, 4][0]
        assert (epoch[:, 4] == base + epoch[:, 3]).all()


def test_generator_makes_worker_randomness_reproducible():
    a = _epochs(2, generator=eager.Generator().manual_seed(7))
    b = _epochs(2, generator=eager.Generator().manual_seed(7))
    assert all((x == y).all() for x, y in zip(a, b))
    assert not (a[0][:, 0] == a[1][:, 0]).all()        # a new base seed each epoch


def seed_worker(worker_id):             # the pattern of torch's reproducibility notes
    worker_seed = eager.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def test_seed_worker_pattern_and_worker_init_fn():
    runs = [np.concatenate([b.numpy() for b in DataLoader(
        Draws(), batch_size=2, num_workers=2, worker_init_fn=seed_worker,
        generator=eager.Generator().manual_seed(0))]) for _ in range(2)]
    assert (runs[0] == runs[1]).all()
    assert len(set(runs[0][:, 0])) == len(runs[0])


class Fails(Dataset):
    def __init__(self, error):
        self.error = error

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 3:
            raise self.error
        return i


class MyError(Exception):
    pass


class NeedsTwo(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


@pytest.mark.parametrize("error, kind", [
    (ValueError("bad sample"), ValueError), (KeyError("missing"), KeyError),
    (MyError("mine"), MyError), (NeedsTwo(1, 2), RuntimeError)], ids=repr)
def test_a_worker_exception_is_re_raised_as_its_own_type(error, kind):
    loader = DataLoader(Fails(error), batch_size=2, num_workers=2)
    with pytest.raises(kind) as info:
        list(loader)
    text = str(info.value)
    assert f"Caught {type(error).__name__} in DataLoader worker process 1" in text
    assert "Original Traceback" in text and "__getitem__" in text and "\\n" not in text


class Unpicklable(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {"fn": lambda: i}


@pytest.mark.hang_guard(30)
def test_a_batch_that_cannot_be_pickled_is_an_error_not_a_hang():
    loader = DataLoader(Unpicklable(), batch_size=2, num_workers=2, collate_fn=lambda b: b)
    with pytest.raises(Exception, match="DataLoader worker process 0"):
        next(iter(loader))
