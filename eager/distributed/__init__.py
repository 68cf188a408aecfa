"""eager.distributed: torch.distributed's names on MPI (launch with `mpiexec -n N`).

Collectives work in place on eager tensors, as in PyTorch; every rank must call them in the
same order with tensors of the same shape and dtype (else a clear error, not a hang).

Under `mpiexec -n 2 python script.py`:

    from dualgrad import eager
    from dualgrad.eager import distributed as dist
    dist.init_process_group(backend="mpi")
    t = eager.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)      # t is now [3., 3., 3.] on both ranks
    dist.destroy_process_group()
"""
from __future__ import annotations

import enum
from datetime import timedelta

import numpy as np

from dualgrad.ops import distributed as _mpi
from ..core import Tensor
from .. import devices as _devices

__all__ = ["get_default_backend_for_device", "ReduceOp", "init_process_group", "destroy_process_group", "is_initialized",
           "is_available", "is_mpi_available", "get_rank", "get_world_size", "barrier",
           "all_reduce", "broadcast", "all_gather", "reduce_scatter"]


class ReduceOp(enum.Enum):
    """How all_reduce and reduce_scatter combine the ranks' tensors."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def get_default_backend_for_device(device):
    """The backend collectives use for tensors on `device`: MPI for the CPU (dualgrad's only
    backend, where torch answers "gloo"); a CUDA device raises torch's CPU-only error."""
    _devices.check(device)
    return "mpi"


def is_available():
    return True


def is_mpi_available():
    """mpi4py (the `dist` extra) can be imported."""
    try:
        _mpi.mpi()
    except ImportError:
        return False
    return True


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       device_id=None):
    """Join the MPI job that `mpiexec` started: rank and world size come from MPI.
    `device_id` binds the group to a device: the CPU here (a CUDA one raises torch's
    CPU-only error).

    `timeout` (a timedelta or seconds; default 300 s, or $DUALGRAD_DIST_TIMEOUT) bounds every
    collective's wait: past it the job aborts with an error naming the waiting rank.
    """
    if backend not in ("mpi", None):
        raise ValueError(f"init_process_group: dualgrad trains distributed on MPI only; got "
                         f"backend={backend!r}, use backend='mpi' and launch with mpiexec")
    if init_method is not None:
        raise ValueError("init_process_group: with backend='mpi' mpiexec starts and connects "
                         f"the ranks; init_method={init_method!r} is not used, leave it out")
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    _devices.check(f"cuda:{device_id}" if isinstance(device_id, int) else device_id)
    _mpi.init(timeout)
    for name, given, actual in (("world_size", world_size, _mpi.size()),
                                ("rank", rank, _mpi.rank())):
        if given not in (-1, None) and given != actual:
            raise ValueError(f"init_process_group: {name}={given} but mpiexec started this "
                             f"process as {name} {actual}; leave {name} out with MPI")


def destroy_process_group(group=None):
    _no_group(group)
    _mpi.finalize()


def is_initialized():
    return _mpi.is_initialized()


def get_rank(group=None):
    _no_group(group)
    return _mpi.rank()


def get_world_size(group=None):
    _no_group(group)
    return _mpi.size()


def barrier(group=None, async_op=False):
    _plain(group, async_op, "barrier")
    _mpi.barrier()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Every rank's `tensor` becomes the reduction (sum by default) over all ranks."""
    _plain(group, async_op, "all_reduce")
    _mpi.all_reduce(_array(tensor, "all_reduce"), _op(op, "all_reduce"))


def broadcast(tensor, src, group=None, async_op=False):
    """Every rank's `tensor` becomes rank `src`'s."""
    _plain(group, async_op, "broadcast")
    _mpi.broadcast(_array(tensor, "broadcast"), src)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] becomes rank r's `tensor` (a list of world-size tensors of its shape)."""
    _plain(group, async_op, "all_gather")
    _check_list("all_gather", "tensor_list", tensor_list, _array(tensor, "all_gather"))
    gathered = _mpi.all_gather(tensor._array)
    for t, part in zip(tensor_list, gathered):
        np.copyto(t._array, part, casting="same_kind")


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank r's `output` becomes the reduction of every rank's input_list[r]."""
    _plain(group, async_op, "reduce_scatter")
    out = _array(output, "reduce_scatter")
    _check_list("reduce_scatter", "input_list", input_list, out)
    part = _mpi.reduce_scatter(np.stack([t._array for t in input_list]),
                               _op(op, "reduce_scatter"))
    np.copyto(out, part, casting="same_kind")


# -- argument checks --------------------------------------------------------------------------
def _no_group(group):
    if group is not None:
        raise NotImplementedError("dualgrad.eager.distributed has one process group, the "
                                  "whole MPI job: new_group() and group= are not supported")


def _plain(group, async_op, what):
    _no_group(group)
    if async_op:
        raise NotImplementedError(f"{what}(async_op=True) is not supported: collectives "
                                  f"complete before they return (DDP overlaps its own)")


def _op(op, what):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a dist.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), "
                        f"got {op!r}")
    return op.value


def _array(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected an eager tensor, got {type(t).__name__}")
    return t._array


def _check_list(what, name, tensors, like):
    n = _mpi.size()
    if len(tensors) != n:
        raise ValueError(f"{what}: {name} has {len(tensors)} tensors; it needs one per rank "
                         f"(world size {n})")
    for i, t in enumerate(tensors):
        a = _array(t, what)
        if a.shape != like.shape or a.dtype != like.dtype:
            raise ValueError(f"{what}: {name}[{i}] has shape {a.shape} {a.dtype}; every "
                             f"entry must match the tensor's {like.shape} {like.dtype}")
