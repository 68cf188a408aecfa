"""`mpiexec -n N dualgrad train MODEL --distributed ddp|fsdp`: the same models, data-parallel.

Every rank builds the model from the same seed; the wrapper (DDP, FSDP, or for graphs
Horovod's DistributedOptimizer plus broadcast_global_variables) starts every rank from rank
0's values. Each of the model's batches is split between the ranks by a DistributedSampler
(each rank its share of the batch's positions), so with mean losses N ranks take the same
steps as one process on the whole batch. Rank 0 prints; the loss shown is the mean over
ranks.
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops import distributed as _mpi
from .models import load, make_trainer

KINDS = ("ddp", "fsdp")


def init():
    """Join the MPI job; this process's rank."""
    from dualgrad.eager import distributed as dist
    dist.init_process_group(backend="mpi")
    return dist.get_rank()


def unsupported(mode, kind):
    """Why `mode` cannot train with `kind`, or None."""
    if mode == "all" and kind == "fsdp":
        return "fsdp trains in eager mode only; use --mode eager, or --distributed ddp"
    if mode == "graph" and kind == "fsdp":
        return ("graph mode trains data-parallel with Horovod's DistributedOptimizer "
                "(--distributed ddp); it shards nothing, so fsdp is eager-only")
    if mode == "compiled" and kind == "fsdp":
        return ("compiled mode cannot trace FSDP (it gathers and frees parameters around "
                "each unit); use --distributed ddp, or --mode eager")
    return None


def distributed_trainer(model, mode, kind, seed=0, optimize=True):
    """(trainer, step) on this rank; step(*batch) trains on this rank's share of batch."""
    from dualgrad.eager.utils.data.distributed import DistributedSampler
    if kind not in KINDS:
        raise ValueError(f"--distributed must be one of {', '.join(KINDS)}, got {kind!r}")
    if unsupported(mode, kind):
        raise ValueError(unsupported(mode, kind))
    init()
    trainer = _graph(model, seed, optimize) if mode == "graph" else _eager(model, mode, seed, kind)

    def step(*batch):
        share = list(DistributedSampler(range(len(batch[-1])), shuffle=False))
        loss = np.array([trainer.step(*(a[share] for a in batch))], np.float64)
        return float(_mpi.all_reduce(loss, "avg", check=False)[0])
    return trainer, step


def _graph(model, seed, optimize):
    from dualgrad.graph import distributed as hvd
    weights = load(model, "eager").initial_weights(seed)
    trainer = load(model, "graph").build(weights=weights, optimize=optimize, distributed=True)
    with trainer.graph.as_default():
        bcast = hvd.broadcast_global_variables(0)
    trainer.sess.run(bcast)
    return trainer


def _eager(model, mode, seed, kind):
    from dualgrad.eager import nn
    from dualgrad.eager.distributed.fsdp import FullyShardedDataParallel, ModuleWrapPolicy
    from dualgrad.eager.nn.parallel import DistributedDataParallel
    trainer = make_trainer(model, mode, seed)
    if kind == "ddp":
        wrapped = DistributedDataParallel(trainer.model)
    else:   # each Linear/Conv2d its own unit: one layer's full parameters at a time
        wrapped = FullyShardedDataParallel(
            trainer.model, auto_wrap_policy=ModuleWrapPolicy({nn.Linear, nn.Conv2d}))
    trainer.model = wrapped    # NOTE: the trainer's loss function reads self.model per call
    trainer.opt = type(trainer.opt)(wrapped.parameters(), **trainer.opt.defaults)
    return trainer

