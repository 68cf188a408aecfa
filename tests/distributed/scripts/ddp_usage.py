"""DDP as a user meets it: .module, buffers, no_sync(), checkpoints, bad models (mpiexec -n 2)."""
import os
import sys
import warnings

import numpy as np

from dualgrad import compiler, eager
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
assert "(8, 4) float32 on rank 0 but (9, 4) float32 on rank 1" in msg, msg


# find_unused_parameters: rank 0 uses head b, rank 1 does not, nobody uses `never`
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.a, self.b, self.never = (nn.Linear(4, 4), nn.Linear(4, 1),
                                                 nn.Linear(4, 1), nn.Linear(4, 1))

    def forward(self, x, use_b):
        h = self.body(x).tanh()
        return self.a(h) + self.b(h) if use_b else self.a(h)


def two_heads():
    eager.manual_seed(3)
    return TwoHeads()


data = [eager.full((2, 4), 0.5 + r) for r in range(2)]
ref = two_heads()                              # one process: the mean of both ranks' losses
((ref(data[0], True).sum() + ref(data[1], False).sum()) / 2).backward()
for compiled in (False, True):
    ddp = DDP(two_heads(), find_unused_parameters=True)
    loss_fn = compiler.compile(lambda x, b: ddp(x, b).sum()) if compiled else \
        (lambda x, b: ddp(x, b).sum())
    for _ in range(2):                         # the second time replays the traced graph
        ddp.zero_grad()
        loss_fn(data[rank], rank == 0).backward()
        for name, p in ddp.module.named_parameters():
            want = dict(ref.named_parameters())[name].grad
            if name.startswith("never"):
                assert p.grad is None, (compiled, name)
            else:
                np.testing.assert_allclose(p.grad.numpy(), want.numpy(), rtol=1e-6,
                                           err_msg=f"compiled={compiled} {name}")

# a compiled call and an eager call of one DDP model in the same backward: all averaged
eager.manual_seed(1)
mixed = DDP(nn.Linear(4, 2))
compiled_sum = compiler.compile(lambda x: mixed(x).sum())
xa, xb = eager.full((2, 4), 1.0 + rank), eager.full((2, 4), 3.0 * rank)
for _ in range(2):
    mixed.zero_grad()
    (compiled_sum(xa) + mixed(xb).sum()).backward()
    # d/dW: column sums of xa + xb, i.e. 2 + 0 on rank 0 and 4 + 6 on rank 1: mean 6
    np.testing.assert_allclose(mixed.module.weight.grad.numpy(), np.full((2, 4), 6.0))

# a compiled function that cannot be traced runs eagerly, and the hooks average
def breaks(x):
    out = mixed(x).sum()
    return out if out > -1e9 else -out          # control flow on a value: a graph break


compiled_breaks = compiler.compile(breaks)
mixed.zero_grad()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    compiled_breaks(xa).backward()
assert any("graph break" in str(w.message) for w in caught), [str(w.message) for w in caught]
np.testing.assert_allclose(mixed.module.weight.grad.numpy(), np.full((2, 4), 3.0))

# without it, a parameter without a gradient is a clear error, eager or compiled
strict = DDP(two_heads())
strict(data[rank], rank == 0).sum().backward()
try:
    strict(data[rank], True)
except RuntimeError as e:
    assert "no gradient reached" in str(e) and "find_unused_parameters=True" in str(e), e
strict = DDP(two_heads())
try:
    compiler.compile(lambda x: strict(x, False).sum())(data[rank])
except RuntimeError as e:
    msg = str(e)
assert "under compile: no gradient reaches ['never.bias', 'never.weight', 'b.bias', " \
    "'b.weight']" in msg and "find_unused_parameters=True" in msg, msg
dist.destroy_process_group()
print(f"rank {rank}: ddp usage ok")
