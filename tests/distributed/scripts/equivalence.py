"""2 ranks on half batches == 1 process on the whole batch, step after step.

Run under mpiexec -n 2 with the wrappers to check (ddp, compiled, fsdp). Every rank also
trains an unwrapped copy on the whole batch and compares parameters after every step.
"""
import sys

import numpy as np

from dualgrad import compiler, eager
from dualgrad.eager import distributed as dist
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F
from dualgrad.eager.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH = 4, 16


def build():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.Tanh(),
                         nn.Sequential(nn.Linear(16, 16), nn.GELU()), nn.Linear(16, 3))


def make_optimizer(name, params):
    if name == "sgd":
        return optim.SGD(params, lr=0.1, momentum=0.9)
    return optim.Adam(params, lr=0.01)


def wrap(kind, model):
    if kind == "ddp":
        return DDP(model, bucket_cap_mb=0.001)        # several buckets
    if kind == "compiled":
        return compiler.compile(DDP(model))
    from dualgrad.eager.distributed.fsdp import FullyShardedDataParallel as FSDP
    from dualgrad.eager.distributed.fsdp import ModuleWrapPolicy
    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))   # 2 units


def check(kind, opt_name, rank, world):
    rng = np.random.default_rng(1)
    ref = build()
    if rank == 1:      # a different init on rank 1: the wrapper must start from rank 0's
        eager.manual_seed(5)
        model = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.Tanh(),
                              nn.Sequential(nn.Linear(16, 16), nn.GELU()), nn.Linear(16, 3))
    else:
        model = build()
    wrapped = wrap(kind, model)
    opt = make_optimizer(opt_name, wrapped.parameters())
    ref_opt = make_optimizer(opt_name, ref.parameters())
    half = BATCH // world
    for step in range(STEPS):
        x = eager.tensor(rng.standard_normal((BATCH, 6)).astype(np.float32))
        y = eager.tensor(rng.standard_normal((BATCH, 3)).astype(np.float32))
        mine = slice(rank * half, (rank + 1) * half)
        loss = F.mse_loss(wrapped(x[mine]), y[mine])
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref_loss = F.mse_loss(ref(x), y)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        got = wrapped.state_dict() if kind == "fsdp" else model.state_dict()
        for name, want in ref.state_dict().items():
            np.testing.assert_allclose(got[name].numpy(), want.numpy(), rtol=2e-5, atol=2e-6,
                                       err_msg=f"{kind} {opt_name} step {step}: {name}")
    print(f"rank {rank}: {kind} {opt_name} matches one process for {STEPS} steps", flush=True)


dist.init_process_group(backend="mpi")
for kind in sys.argv[1:]:
    for opt_name in ("sgd", "adam"):
        check(kind, opt_name, dist.get_rank(), dist.get_world_size())
dist.destroy_process_group()
