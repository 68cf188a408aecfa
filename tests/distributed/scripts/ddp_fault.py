"""A DDP training step with a fault on rank 1 at boundary K of its step (mpiexec -n 2).

argv: `count` (rank 1 prints how many boundaries one step has; nothing fails), or a fault
(`raise`, `sigint`, `kill`) and K. Rank 0 runs two steps: whatever rank 1 was doing when it
failed, rank 0 meets it in a collective and must fail loudly, naming the rank, within the
process group's timeout."""
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dualgrad import eager  # noqa: E402
from dualgrad.eager import distributed as dist  # noqa: E402
from dualgrad.eager import nn  # noqa: E402
from dualgrad.eager.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from tests.fault_injection import count_boundaries, fire_at  # noqa: E402

dist.init_process_group(backend="mpi", timeout=timedelta(seconds=3))
rank = dist.get_rank()
eager.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
opt = eager.optim.SGD(model.parameters(), lr=0.1)
x = eager.randn(16, 4) + rank


class SigKill(BaseException):
    """A fault that is SIGKILL itself (what the OOM killer does): no handler, no cleanup."""

    def __init__(self, _message):
        os.kill(os.getpid(), signal.SIGKILL)


def step():
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss


step()                                                   # warm-up: both ranks whole
if sys.argv[1] == "count":
    if rank == 1:
        print(f"boundaries {count_boundaries(step)}", flush=True)
    else:
        step()
    dist.barrier()
    print(f"rank {rank} counted", flush=True)
elif rank == 1:
    fault = {"raise": OSError, "sigint": "sigint", "kill": "kill", "sigkill": SigKill}[sys.argv[1]]
    fire_at(int(sys.argv[2]), step, fault)
    step()
    print("rank 1 finished: the fault never fired", flush=True)
else:
    step()
    step()
    print("rank 0 finished: the fault was not noticed", flush=True)
