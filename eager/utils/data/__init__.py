"""eager.utils.data, as torch.utils.data: datasets, samplers and the DataLoader.

>>> from dualgrad import eager
>>> from dualgrad.eager.utils.data import DataLoader, TensorDataset
>>> x, y = eager.randn(10, 3), eager.randint(0, 2, (10,))
>>> for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True):
...     print(tuple(xb.shape), tuple(yb.shape))
(4, 3) (4,)
(4, 3) (4,)
"""
from .dataloader import DataLoader, default_collate, default_convert
from .dataset import (ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "Dataset", "IterableDataset",
           "TensorDataset", "Subset", "ConcatDataset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "WorkerInfo", "get_worker_info"]
