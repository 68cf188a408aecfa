"""DistributedSampler, as torch.utils.data.distributed: each rank its own share of a dataset.

>>> from dualgrad.eager.utils.data.distributed import DistributedSampler
>>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
[[0, 2, 4], [1, 3, 0]]
"""
from __future__ import annotations

import math

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices rank `rank` of `num_replicas` takes: every num_replicas-th of one ordering.

    The ordering is the same on every rank (a permutation seeded with seed + epoch when
    `shuffle`; call set_epoch(e) before each epoch for a new one). Without `drop_last` the
    ordering is padded by repeating its start so every rank gets the same count, as PyTorch
    does; with it, the tail that does not divide evenly is dropped. `num_replicas` and `rank`
    default to the process group's world size and rank.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from dualgrad.eager import distributed as dist
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        self.num_samples = (n // num_replicas if drop_last
                            else math.ceil(n / num_replicas))
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n)
        else:
            order = np.arange(n)
        if self.total_size > n:
            order = np.resize(order, self.total_size)    # NOTE: repeats from the start
        order = order[:self.total_size]
        return iter(order[self.rank:self.total_size:self.num_replicas].tolist())

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """A new shuffle for each epoch, the same on every rank."""
        self.epoch = epoch
