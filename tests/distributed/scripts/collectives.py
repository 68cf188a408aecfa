"""Collectives on eager tensors, as a PyTorch user calls them (run under mpiexec -n 2)."""
import numpy as np

from dualgrad import eager
from dualgrad.eager import distributed as dist

dist.init_process_group(backend="mpi")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2 and dist.is_initialized()

t = eager.tensor([1.0, 2.0]) * (rank + 1)
dist.all_reduce(t)
assert t.tolist() == [3.0, 6.0], t
m = eager.tensor([float(rank), 5.0 - rank])
dist.all_reduce(m, op=dist.ReduceOp.MAX)
assert m.tolist() == [1.0, 5.0], m
a = eager.full((2, 2), float(rank))
dist.all_reduce(a, op=dist.ReduceOp.AVG)
assert np.allclose(a.numpy(), 0.5)

b = eager.arange(4, dtype=eager.float32) if rank == 0 else eager.zeros(4)
dist.broadcast(b, src=0)
assert b.tolist() == [0.0, 1.0, 2.0, 3.0], b

parts = [eager.zeros(3) for _ in range(world)]
dist.all_gather(parts, eager.full((3,), 10.0 + rank))
assert [p.tolist()[0] for p in parts] == [10.0, 11.0], parts

out = eager.zeros(2)
dist.reduce_scatter(out, [eager.full((2,), 1.0 + rank), eager.full((2,), 10.0 * (rank + 1))])
assert out.tolist() == ([3.0, 3.0] if rank == 0 else [30.0, 30.0]), out

view = eager.zeros(2, 3).T          # not contiguous: still reduced in place
view.data[...] = rank + 1
dist.all_reduce(view)
assert np.all(view.numpy() == 3.0)

# bad use is an error on every rank, never a hang or a mix of mismatched buffers
try:
    dist.all_reduce(eager.ones(3 + rank))
except RuntimeError as e:
    msg = str(e)
assert "rank 0: all_reduce of shape (3,) float32; rank 1: all_reduce of shape (4,)" in msg, msg
try:
    dist.all_gather([eager.zeros(3)], eager.zeros(3))
except ValueError as e:
    assert "one per rank (world size 2)" in str(e), e

dist.barrier()
dist.destroy_process_group()
print(f"collectives ok on rank {rank}")
