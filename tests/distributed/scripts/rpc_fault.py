"""Worker 1 raises after init_rpc while worker 0 waits in shutdown() for it: the job must
end at once with worker 1's error (MPI_Abort), not wait for the shutdown's timeout."""
import time

from mpi4py import MPI

from dualgrad.eager.distributed import rpc

rank = MPI.COMM_WORLD.Get_rank()
rpc.init_rpc(f"worker{rank}")
if rank == 1:
    time.sleep(0.3)
    raise ValueError("bad step on worker 1")
rpc.shutdown()
print("worker 0 finished: the fault was not noticed")
