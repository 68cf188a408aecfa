"""DistributedSampler: each rank's share of a dataset, as torch.utils.data.distributed."""
import pytest

from dualgrad.eager.utils.data import DataLoader, TensorDataset
from dualgrad.eager.utils.data.distributed import DistributedSampler
from dualgrad import eager


@pytest.mark.parametrize("n", [5, 6, 7])
@pytest.mark.parametrize("drop_last", [False, True])
def test_same_shares_as_torch_without_shuffle(n, drop_last):
    torch_data = pytest.importorskip("torch.utils.data.distributed")
    for rank in range(3):
        want = torch_data.DistributedSampler(range(n), num_replicas=3, rank=rank,
                                             shuffle=False, drop_last=drop_last)
        got = DistributedSampler(range(n), num_replicas=3, rank=rank, shuffle=False,
                                 drop_last=drop_last)
        assert list(got) == list(want) and len(got) == len(want)


def test_shuffled_shares_are_disjoint_cover_the_data_and_change_with_set_epoch():
    shares = [DistributedSampler(range(10), num_replicas=2, rank=r, seed=3) for r in (0, 1)]
    first = [list(s) for s in shares]
    assert sorted(first[0] + first[1]) == list(range(10))
    for s in shares:
        s.set_epoch(1)
    second = [list(s) for s in shares]
    assert sorted(second[0] + second[1]) == list(range(10)) and second != first


def test_with_a_dataloader():
    data = TensorDataset(eager.arange(8, dtype=eager.float32))
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 2, 1, False))
    assert [b[0].tolist() for b in loader] == [[1.0, 3.0], [5.0, 7.0]]


def test_rank_and_world_size_come_from_the_process_group():
    with pytest.raises(RuntimeError, match="not been initialized"):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
