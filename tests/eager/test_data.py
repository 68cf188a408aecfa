"""eager.utils.data as PyTorch scripts use it: datasets, samplers, DataLoader, workers."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                       IterableDataset, RandomSampler, Sampler,
                                       SequentialSampler, Subset, SubsetRandomSampler,
                                       TensorDataset, WeightedRandomSampler, default_collate,
                                       get_worker_info, random_split)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return {"x": np.full(3, i, np.float32), "y": i * i, "name": f"s{i}"}


def _ds(n=10):
    return TensorDataset(eager.arange(n).float().reshape(n, 1), eager.arange(n))


def test_tensor_dataset_and_loader_batches_in_order():
    batches = list(DataLoader(_ds(), batch_size=4))
    assert [tuple(x.shape) for x, _ in batches] == [(4, 1), (4, 1), (2, 1)]
    assert np.concatenate([y.numpy() for _, y in batches]).tolist() == list(range(10))
    assert len(DataLoader(_ds(), batch_size=4)) == 3
    assert len(DataLoader(_ds(), batch_size=4, drop_last=True)) == 2
    assert [tuple(y.shape) for _, y in DataLoader(_ds(), batch_size=4, drop_last=True)] == \
        [(4,), (4,)]


def test_tensor_dataset_size_mismatch_is_an_error():
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(eager.zeros(3, 2), eager.zeros(4))


def test_shuffle_is_a_permutation_reproducible_with_a_generator():
    def order(seed):
        g = eager.Generator().manual_seed(seed)
        return [int(v) for _, y in DataLoader(_ds(), batch_size=3, shuffle=True, generator=g)
                for v in y.numpy()]
    a, b = order(1), order(1)
    assert a == b and sorted(a) == list(range(10)) and a != list(range(10))
    loader = DataLoader(_ds(), batch_size=10, shuffle=True)
    e1, e2 = (next(iter(loader))[1].tolist() for _ in range(2))
    assert e1 != e2, "each epoch draws a new order"


def test_manual_seed_makes_shuffling_reproducible():
    eager.manual_seed(3)
    a = next(iter(DataLoader(_ds(), batch_size=10, shuffle=True)))[1].tolist()
    eager.manual_seed(3)
    assert next(iter(DataLoader(_ds(), batch_size=10, shuffle=True)))[1].tolist() == a


def test_default_collate_recurses_into_dicts_numbers_and_strings():
    batch = next(iter(DataLoader(Squares(), batch_size=3)))
    assert tuple(batch["x"].shape) == (3, 3) and batch["x"].dtype == np.float32
    assert batch["y"].dtype == np.int64 and batch["y"].tolist() == [0, 1, 4]
    assert batch["name"] == ["s0", "s1", "s2"]
    assert default_collate([1.5, 2.5]).dtype == np.float64
    assert default_collate([True, False]).dtype == np.bool_
    pair = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(pair, list) and pair[0].tolist() == [1, 3]
    P = collections.namedtuple("P", "a b")
    assert isinstance(default_collate([P(1, 2), P(3, 4)]), P)
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])


def test_collate_fn_sampler_and_batch_sampler():
    seen = list(DataLoader(_ds(), batch_size=2, sampler=[9, 8, 7, 6],
                           collate_fn=lambda b: [int(y) for _, y in b]))
    assert seen == [[9, 8], [7, 6]]
    bs = BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)
    assert [y.tolist() for _, y in DataLoader(_ds(5), batch_sampler=bs)] == [[0, 1], [2, 3], [4]]
    assert [int(y) for _, y in DataLoader(_ds(3), batch_size=None)] == [0, 1, 2]


def test_conflicting_options_raise_pytorchs_errors():
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(_ds(), sampler=SequentialSampler(range(10)), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(_ds(), batch_size=4, batch_sampler=[[0, 1]])
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(_ds(), num_workers=-1)


def test_samplers():
    g = eager.Generator().manual_seed(0)
    assert sorted(RandomSampler(range(6), generator=g)) == list(range(6))
    draws = list(RandomSampler(range(3), replacement=True, num_samples=20, generator=g))
    assert len(draws) == 20 and set(draws) <= {0, 1, 2}
    assert sorted(SubsetRandomSampler([5, 7, 9], generator=g)) == [5, 7, 9]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0], 5, generator=g))
    assert w == [1] * 5

    class Evens(Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

        def __len__(self):
            return (self.n + 1) // 2
    assert [y.tolist() for _, y in DataLoader(_ds(), batch_size=2, sampler=Evens(10))][0] == \
        [0, 2]


def test_random_split_subset_and_concat():
    g = eager.Generator().manual_seed(42)
    train, val = random_split(_ds(), [7, 3], generator=g)
    assert len(train) == 7 and len(val) == 3
    assert sorted([int(train[i][1]) for i in range(7)] + [int(val[i][1]) for i in range(3)]) == \
        list(range(10))
    assert [len(s) for s in random_split(range(10), [0.5, 0.3, 0.2])] == [5, 3, 2]
    with pytest.raises(ValueError, match="sum of input lengths"):
        random_split(_ds(), [3, 3])
    sub = Subset(_ds(), [4, 2])
    assert int(sub[0][1]) == 4 and len(sub) == 2
    both = ConcatDataset([_ds(3), _ds(2)])
    assert len(both) == 5 and int(both[3][1]) == 0 and int((_ds(3) + _ds(2))[-1][1]) == 1


def test_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Stream(), shuffle=True)
    with pytest.raises(NotImplementedError, match="num_workers > 0 with an IterableDataset"):
        DataLoader(Stream(), num_workers=2)


class Pids(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        import os
        info = get_worker_info()
        return i, os.getpid(), -1 if info is None else info.id



def test_workers_are_other_processes_and_keep_the_order():
    import os
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, shuffle=False)
    batches = list(loader)
    idx = [v for b in batches for v in b[0].tolist()]
    pids = {v for b in batches for v in b[1].tolist()}
    assert idx == list(range(12))
    assert os.getpid() not in pids and len(pids) == 2
    assert {v for b in batches for v in b[2].tolist()} == {0, 1}
    # the same batches as without workers
    ref = [b[0].tolist() for b in DataLoader(Pids(), batch_size=2)]
    assert [b[0].tolist() for b in batches] == ref


def test_worker_exception_reaches_the_main_process_with_its_traceback():
    loader = DataLoader(Squares(5), batch_size=2, num_workers=2, sampler=[0, 1, 2, 99])
    with pytest.raises(IndexError, match=r"(?s)Caught IndexError in DataLoader worker process "
                                         r"1.*Original Traceback.*IndexError"):
        list(loader)


def test_collating_samples_of_different_shapes_raises_torchs_error():
    """A dataset returning ragged samples: torch's RuntimeError naming the entries, not
    NumPy's "all input arrays must have the same shape"."""
    torch = pytest.importorskip("torch")
    for lib in (torch, eager):
        loader = lib.utils.data.DataLoader([np.ones(2, np.float32), np.zeros(3, np.float32)],
                                           batch_size=2)
        with pytest.raises(RuntimeError) as caught:
            next(iter(loader))
        if lib is torch:
            theirs = str(caught.value)
    assert str(caught.value) == theirs
