"""DDP as a user meets it: .module, buffers, no_sync(), checkpoints, bad models (mpiexec -n 2)."""
import os
import sys

import numpy as np

from dualgrad import eager
from dualgrad.eager import distributed as dist
from dualgrad.eager import nn
from dualgrad.eager.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group(backend="mpi")
rank = dist.get_rank()
eager.manual_seed(rank)                    # different on each rank until DDP broadcasts
inner = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
model = DDP(inner)
assert model.module is inner
everyone = [eager.zeros(8, 4) for _ in range(2)]
dist.all_gather(everyone, inner[0].weight.detach())
assert np.array_equal(everyone[0].numpy(), everyone[1].numpy())
means = [eager.zeros(8) for _ in range(2)]
dist.all_gather(means, inner[1].running_mean)
assert np.array_equal(means[0].numpy(), means[1].numpy())

# no_sync: local accumulation, then one averaged backward
x = [eager.full((3, 4), float(rank + k)) for k in range(2)]
with model.no_sync():
    model(x[0]).sum().backward()
local = inner[2].weight.grad.numpy().copy()
theirs = [eager.zeros(1, 8) for _ in range(2)]
dist.all_gather(theirs, eager.tensor(local))
assert not np.allclose(theirs[0].numpy(), theirs[1].numpy())      # not averaged yet
model(x[1]).sum().backward()
both = inner[2].weight.grad.numpy()
dist.all_gather(theirs, eager.tensor(both))
assert np.array_equal(theirs[0].numpy(), theirs[1].numpy())       # averaged, sum of both

# checkpoint: save on rank 0 only, load on every rank
path = sys.argv[1]
if rank == 0:
    eager.save(model.module.state_dict(), path)
dist.barrier()
fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
fresh.load_state_dict(eager.load(path))
assert np.array_equal(fresh[0].weight.detach().numpy(), inner[0].weight.detach().numpy())
assert list(model.state_dict())[0] == "module.0.weight"        # torch's keys

# a model built differently on one rank: a clear error on every rank, never a wrong average
other = nn.Linear(4, 8 + rank)
try:
    DDP(other)
except RuntimeError as e:
    msg = str(e)
assert "parameter shapes differ across ranks" in msg and f"weight ({8 + rank}, 4)" in msg, msg
dist.destroy_process_group()
print(f"rank {rank}: ddp usage ok")
