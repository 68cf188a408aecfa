"""graph.distributed: Horovod's names for TF1-style graphs, on MPI (see docs/distributed.md).

Under `mpiexec -n 2 python train.py`:

    from dualgrad import graph
    from dualgrad.graph import distributed as hvd
    hvd.init()
    opt = hvd.DistributedOptimizer(graph.train.AdamOptimizer(1e-3 * hvd.size()))
    train_op = opt.minimize(loss)                 # gradients averaged over the ranks
    bcast = hvd.broadcast_global_variables(0)
    sess.run(graph.global_variables_initializer()); sess.run(bcast)

The collectives are graph nodes (stateful, so the optimiser never folds, merges or drops
them): `DistributedOptimizer` averages all of a step's gradients with one `ops.all_reduce`
node per dtype over their concatenation (`ops.all_reduce_many`). Every rank must run the
same graph: each run of a collective node checks that every rank passes the same shapes
(a clear error, not a hang).
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops import distributed as _mpi
from .control_flow import group
from .core import Tensor, graph_op
from .variables import assign, global_variables

__all__ = ["init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
           "allreduce", "broadcast", "broadcast_global_variables", "DistributedOptimizer",
           "Average", "Sum"]

Average, Sum = "average", "sum"


def init(timeout=None):
    """Join the MPI job mpiexec started (timeout: seconds a collective may wait, 300)."""
    _mpi.init(timeout)


def shutdown():
    _mpi.finalize()


def is_initialized():
    return _mpi.is_initialized()


def rank():
    return _mpi.rank()


def size():
    return _mpi.size()


def local_rank():
    """This process's rank among the ranks on its machine."""
    return _local().Get_rank()


def local_size():
    return _local().Get_size()


def _local():
    MPI = _mpi.mpi()
    return _mpi.world("local_rank").Split_type(MPI.COMM_TYPE_SHARED)


# -- collective nodes -------------------------------------------------------------------------
def _broadcast_kernel(node):
    root = node.attrs["root_rank"]

    def run(state, x):
        return _mpi.broadcast(np.array(x, copy=True), root)   # checks shapes agree
    return run, True


BROADCAST = graph_op("hvd_broadcast", _broadcast_kernel)
_REDUCE = {Average: "avg", Sum: "sum"}


def allreduce(tensor, average=None, op=None, name=None):
    """The mean (op=Average, the default) or sum over ranks of `tensor`, as a graph tensor."""
    op = _op(average, op)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"hvd.allreduce: expected a graph tensor, got {type(tensor).__name__}")
    with tensor.graph.name_scope(name or "HorovodAllreduce"):
        return ops.all_reduce(tensor, _REDUCE[op])


def broadcast(tensor, root_rank, name=None):
    """Rank `root_rank`'s value of `tensor` on every rank."""
    if not 0 <= root_rank < size():
        raise ValueError(f"hvd.broadcast: root_rank={root_rank} is not a rank of this job "
                         f"(size {size()})")
    g = tensor.graph
    node = g.create_node(BROADCAST, (tensor,), {"root_rank": root_rank}, [tensor.spec],
                         name or "HorovodBroadcast")
    return node.outputs[0]


def broadcast_global_variables(root_rank):
    """An op that sets every global variable to rank `root_rank`'s value (run it once,
    after the initializer)."""
    variables = global_variables()
    if not variables:
        raise ValueError("broadcast_global_variables: the default graph has no variables yet; "
                         "build the model and the optimizer first")
    return group(*[assign(v, broadcast(v, root_rank)).node for v in variables])


def _op(average, op):
    if average is not None and op is not None:
        raise ValueError("hvd.allreduce: pass op= or the older average=, not both")
    if average is not None:
        return Average if average else Sum
    if op not in (None, Average, Sum):
        raise ValueError(f"hvd.allreduce: op must be hvd.Average or hvd.Sum, got {op!r}")
    return op or Average


class DistributedOptimizer:
    """Wraps a graph.train optimizer: compute_gradients averages the gradients over ranks
    (one fused all-reduce node per dtype); apply_gradients and minimize as the wrapped one."""

    def __init__(self, optimizer, name=None, op=Average):
        self._optimizer = optimizer
        self._op = _op(None, op)
        self.name = name or f"Distributed{optimizer.name}"

    def compute_gradients(self, loss, var_list=None):
        pairs = self._optimizer.compute_gradients(loss, var_list)
        present = [g for g, _ in pairs if g is not None]
        if not present:
            return pairs
        with present[0].graph.name_scope(self.name):
            outs = iter(ops.all_reduce_many(present, _REDUCE[self._op]))
        return [(None if g is None else next(outs), v) for g, v in pairs]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

    def minimize(self, loss, global_step=None, var_list=None, name=None):
        return self.apply_gradients(self.compute_gradients(loss, var_list), global_step, name)

    def __getattr__(self, name):     # get_slot, get_slot_names, learning_rate, ...
        return getattr(self.__dict__["_optimizer"], name)
