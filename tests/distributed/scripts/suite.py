"""Every multi-rank check that does not abort the job, in one `mpiexec -n 2` launch.

Each script joins the process group, checks, prints "... ok" lines and leaves it again, so
they run one after another in one process per rank (MPI starts once). An assertion that
fails on a rank aborts the job (MPI_Abort) with its message, and the tests see it.
"""
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent
CHECKPOINTS = Path(sys.argv[1])

for argv in (["collectives.py"],
             ["equivalence.py", "ddp", "compiled", "compiled_loss", "fsdp"],
             ["ddp_usage.py", str(CHECKPOINTS / "ddp.safetensors")],
             ["fsdp_usage.py", str(CHECKPOINTS / "fsdp.safetensors")],
             ["graph_equivalence.py"]):
    sys.argv = [str(HERE / argv[0]), *argv[1:]]
    runpy.run_path(sys.argv[0], run_name="__main__")
