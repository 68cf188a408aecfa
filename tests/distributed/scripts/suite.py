"""Every multi-rank check that does not abort the job, in one `mpiexec -n 2` launch.

Last, the ```python blocks of docs/distributed.md run in order, as tests/test_docs.py runs
them in one process (world size 1), here on each of the two ranks.

Each script joins the process group, checks, prints "... ok" lines and leaves it again, so
they run one after another in one process per rank (MPI starts once). An assertion that
fails on a rank aborts the job (MPI_Abort) with its message, and the tests see it.
"""
import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent
CHECKPOINTS = Path(sys.argv[1])

for argv in (["collectives.py"],
             ["equivalence.py", "ddp", "compiled", "compiled_loss", "compiled_step", "fsdp",
              "fully_shard"],
             ["ddp_usage.py", str(CHECKPOINTS / "ddp.safetensors")],
             ["fsdp_usage.py", str(CHECKPOINTS / "fsdp.safetensors")],
             ["fully_shard_usage.py"],
             ["graph_equivalence.py"]):
    sys.argv = [str(HERE / argv[0]), *argv[1:]]
    runpy.run_path(sys.argv[0], run_name="__main__")

os.chdir(CHECKPOINTS)          # the docs save model.safetensors in the working directory
docs = runpy.run_path(str(HERE.parents[1] / "test_docs.py"))
assert docs["run_blocks"](HERE.parents[2] / "docs" / "distributed.md") == 0
from mpi4py import MPI         # noqa: E402 - the docs' last block left the process group
print(f"rank {MPI.COMM_WORLD.Get_rank()}: docs/distributed.md runs on 2 ranks", flush=True)
