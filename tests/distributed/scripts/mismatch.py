"""A model built with another dtype (or shape) on rank 1: DDP / FSDP construction must raise
the same clear RuntimeError on every rank, naming the tensor, both dtypes and both ranks."""
import sys

from dualgrad import eager
from dualgrad.eager import distributed as dist
from dualgrad.eager import nn
from dualgrad.eager.distributed.fsdp import FullyShardedDataParallel as FSDP
from dualgrad.eager.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group(backend="mpi")
rank = dist.get_rank()
wrapper = {"ddp": DDP, "fsdp": FSDP}[sys.argv[1]]
model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
if rank == 1:
    if sys.argv[2] == "dtype":
        model = model.double()
    else:
        model[2] = nn.Linear(3, 2)
try:
    wrapper(model)
except RuntimeError as e:
    # one write per line: under PYTHONUNBUFFERED (as .ci/run sets) print() writes the text and
    # its newline apart, and mpiexec may put the other rank's line between them
    sys.stdout.write(f"rank {rank} raised: {e}\n")
dist.barrier()
sys.stdout.write(f"rank {rank} done\n")
