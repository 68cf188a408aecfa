"""A rank that fails: `raise` (rank 1 raises) or `hang` (rank 1 never joins the collective)."""
import sys
import time
from datetime import timedelta

from dualgrad import eager
from dualgrad.eager import distributed as dist

dist.init_process_group(backend="mpi", timeout=timedelta(seconds=2))
if dist.get_rank() == 1:
    if sys.argv[1] == "raise":
        raise ValueError("bad batch on rank 1")
    time.sleep(60)
dist.all_reduce(eager.ones(4))
print("rank 0 finished: the fault was not noticed")
