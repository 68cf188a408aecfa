"""FSDP as a user meets it: sharding, full state dicts, checkpoints, bad models (mpiexec -n 2)."""
import sys

import numpy as np

from dualgrad import eager
from dualgrad.eager import distributed as dist
from dualgrad.eager import nn, optim
from dualgrad.eager.distributed.fsdp import FullyShardedDataParallel as FSDP
from dualgrad.eager.distributed.fsdp import ModuleWrapPolicy

dist.init_process_group(backend="mpi")
rank = dist.get_rank()


def build(seed):
    eager.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Sequential(nn.Linear(7, 9)),
                         nn.Linear(9, 2))


reference = build(0)
model = FSDP(build(rank), auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))

# parameters, and so gradients and optimizer state, are 1/N per rank
full_numel = sum(p.numel() for p in reference.parameters())
shards = [p.numel() for p in model.parameters()]
assert sum(shards) == -(-(5 * 7 + 7 + 9 * 2 + 2) // 2) + -(-(7 * 9 + 9) // 2), shards
assert sum(shards) * 2 - full_numel <= 2            # only padding on top of 1/2
opt = optim.Adam(model.parameters(), lr=0.01)
model(eager.ones(4, 5)).sum().backward()
opt.step()
assert all(p.grad.shape == p.shape for p in model.parameters())
moments = [v for p in model.parameters() for k, v in opt.state[p].items() if k != "step"]
assert len(moments) == 4 and all(v.shape == p.shape for p, v in
                                 zip([p for p in model.parameters() for _ in (0, 1)], moments))

# state_dict: full tensors on every rank, the wrapped module's own keys; loads unwrapped
state = model.state_dict()
assert list(state) == list(reference.state_dict()), list(state)
plain = build(3)
plain.load_state_dict(state)
x = eager.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
with eager.no_grad():
    np.testing.assert_allclose(plain(x).numpy(), model(x).numpy(), rtol=1e-6)

# checkpoint: rank 0 saves the full state dict; every rank loads it into a fresh FSDP model
path = sys.argv[1]
if rank == 0:
    eager.save(state, path)
dist.barrier()
again = FSDP(build(7), auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))
again.load_state_dict(eager.load(path))
with eager.no_grad():
    np.testing.assert_allclose(again(x).numpy(), plain(x).numpy(), rtol=1e-6)
try:
    again.load_state_dict({**state, "0.weight": eager.zeros(3, 3)})
except RuntimeError as e:
    assert ("size mismatch for 0.weight: copying a param with shape torch.Size([3, 3]) from "
            "checkpoint, the shape in current model is torch.Size([7, 5]).") in str(e), e

# no_sync(): two backwards accumulate locally (full gradients, no traffic), the third
# reduce-scatters the sum: the same shards as one backward of the summed losses
from dualgrad.ops import distributed as mpi    # noqa: E402
xs = [eager.full((3, 5), 0.1 * (rank + k)) for k in range(3)]
acc = FSDP(build(4), auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))
sent = mpi.traffic()
with acc.no_sync():
    for k in range(2):
        acc(xs[k]).sum().backward()
assert mpi.traffic() - sent == 2 * sum(8 * p.numel() for p in acc.parameters())  # gathers only
assert all(p.grad is None for p in acc.parameters())
acc(xs[2]).sum().backward()
once = FSDP(build(4), auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))
sum(once(x).sum() for x in xs).backward()
for a, b in zip(acc.parameters(), once.parameters()):
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)

# clip_grad_norm_: the norm of the whole gradients (every rank's shards), the same everywhere
def global_norm(params):
    t = eager.tensor([sum(float((p.grad.numpy().astype(np.float64) ** 2).sum())
                          for p in params)], dtype=eager.float64)
    dist.all_reduce(t)
    return t.item() ** 0.5


whole = global_norm(once.parameters())
total = once.clip_grad_norm_(whole / 2)
assert abs(total.item() - whole) < 1e-5 * whole, (total.item(), whole)
assert abs(global_norm(once.parameters()) - whole / 2) < 1e-5 * whole

# a model built differently on one rank: a clear error on every rank
try:
    FSDP(nn.Linear(3, 4 + rank))
except RuntimeError as e:
    msg = str(e)
assert msg.startswith("FullyShardedDataParallel") and "float32 on rank 0 but" in msg, msg
dist.destroy_process_group()
print(f"rank {rank}: fsdp usage ok")
