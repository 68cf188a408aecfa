"""2 ranks on half batches == 1 process on the whole batch, step after step.

Run under mpiexec -n 2 with the wrappers to check: ddp, fsdp, fully_shard (FSDP2, in place), compiled (compile(DDP(model)):
non-scalar output, gradients at backward), compiled_loss (a compiled loss function:
forward and averaged gradients in one replay) and compiled_step (the whole training step
compiled: zero_grad, backward and the optimizer's step inside). Every rank also trains an unwrapped copy on
the whole batch and compares parameters after every step; the compiled kinds are also
compared with eager DDP, step by step, parameters and bytes communicated.
"""
import sys

import warnings

import numpy as np

from dualgrad import compiler, eager, ops
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
        return compiler.compile(DDP(model, bucket_cap_mb=0.001))
    if kind in ("compiled_loss", "compiled_step"):
        return DDP(model, bucket_cap_mb=0.001)
    if kind == "fully_shard":
        from dualgrad.eager.distributed.fsdp import fully_shard
        fully_shard(model[3])                                                 # 2 units, as
        return fully_shard(model)                                             # FSDP's below
    from dualgrad.eager.distributed.fsdp import FullyShardedDataParallel as FSDP
    from dualgrad.eager.distributed.fsdp import ModuleWrapPolicy
    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}))   # 2 units


def local_model(rank):
    if rank == 1:      # a different init on rank 1: the wrapper must start from rank 0's
        eager.manual_seed(5)
        return nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.Tanh(),
                             nn.Sequential(nn.Linear(16, 16), nn.GELU()), nn.Linear(16, 3))
    return build()


class Run:
    """One way of training, stepped on this rank's part (or all) of each batch."""

    def __init__(self, kind, model, opt_name):
        self.kind, self.model = kind, model
        self.wrapped = wrap(kind, model) if kind != "ref" else model
        self.opt = make_optimizer(opt_name, self.wrapped.parameters())
        self.loss_fn = compiler.compile(self.loss) if kind == "compiled_loss" else self.loss
        self.train = compiler.compile(self.whole_step) if kind == "compiled_step" else None
        self.sent = []

    def whole_step(self, x, y):
        self.opt.zero_grad()
        loss = self.loss(x, y)
        loss.backward()
        self.opt.step()
        return loss

    def loss(self, x, y):
        return F.mse_loss(self.wrapped(x), y)

    def step(self, x, y):
        sent = dist_traffic()
        if self.train is not None:
            self.train(x, y)
        else:
            loss = self.loss_fn(x, y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        self.sent.append(dist_traffic() - sent)

    def state(self):
        if self.kind == "fully_shard":        # shards: torch's idiom for the full values
            return {k: v.full_tensor() for k, v in self.model.state_dict().items()}
        return (self.wrapped if self.kind == "fsdp" else self.model).state_dict()


def dist_traffic():
    return ops.distributed.traffic()


def same(got, want, what):
    for name, w in want.items():
        np.testing.assert_allclose(got[name].numpy(), w.numpy(), rtol=2e-5, atol=2e-6,
                                   err_msg=f"{what}: {name}")


def check(kind, opt_name, rank, world):
    rng = np.random.default_rng(1)
    ref = Run("ref", build(), opt_name)
    run = Run(kind, local_model(rank), opt_name)
    compiled = kind.startswith("compiled")
    eager_ddp = Run("ddp", local_model(rank), opt_name) if compiled else None
    half = BATCH // world
    mine = slice(rank * half, (rank + 1) * half)
    for step in range(STEPS):
        x = eager.tensor(rng.standard_normal((BATCH, 6)).astype(np.float32))
        y = eager.tensor(rng.standard_normal((BATCH, 3)).astype(np.float32))
        with warnings.catch_warnings():
            warnings.simplefilter("error")            # a graph break (eager fallback) fails
            run.step(x[mine], y[mine])
        ref.step(x, y)
        same(run.state(), ref.state(), f"{kind} {opt_name} step {step} vs one process")
        if compiled:
            eager_ddp.step(x[mine], y[mine])
            same(run.state(), eager_ddp.state(), f"{kind} {opt_name} step {step} vs eager DDP")
    if compiled:   # the replayed graph averages, once: the bytes of eager DDP's buckets
        fn = {"compiled": run.wrapped, "compiled_loss": run.loss_fn,
              "compiled_step": run.train}[kind]
        assert fn.traces == 1, fn.signatures
        assert "all_reduce" in [n.type for n in fn.graph.get_operations()]
        assert run.sent == eager_ddp.sent, (run.sent, eager_ddp.sent)
    print(f"rank {rank}: {kind} {opt_name} matches one process for {STEPS} steps", flush=True)


dist.init_process_group(backend="mpi")
for kind in sys.argv[1:]:
    for opt_name in ("sgd", "adam"):
        check(kind, opt_name, dist.get_rank(), dist.get_world_size())
dist.destroy_process_group()
