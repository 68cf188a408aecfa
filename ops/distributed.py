"""The MPI world that both engines' distributed front ends share (the `dist` extra).

`eager.distributed` (PyTorch's names) and `graph.distributed` (Horovod's) are thin layers
over these functions, which work on NumPy arrays in place. mpi4py is imported on first use,
never when dualgrad loads. Every wait has a deadline: a collective that the other ranks do
not join within the timeout (300 s unless configured) aborts the whole job with a message
naming the rank, and once `init` has run an exception that escapes on one rank aborts all
(MPI_Abort) with that exception shown, instead of leaving the other ranks waiting forever.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

DEFAULT_TIMEOUT = 300.0
_SIG_LEN = 16                     # collective, op, root, dtype, ndim, up to 11 dims
_KINDS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier")


class _World:
    comm = None                   # a duplicate of COMM_WORLD while initialised
    timeout = DEFAULT_TIMEOUT
    calls = 0                     # collectives issued so far (named in timeout messages)
    sent = 0                      # payload bytes this rank handed to data collectives
    hook = None                   # sys.excepthook before init replaced it
    averaged = set()              # ids of tensors whose gradient a compiled graph averaged


def mpi():
    """mpi4py's MPI module, imported on first use with a clear error when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("dualgrad's distributed training runs on MPI: install the `dist` "
                          "extra (pip install 'dualgrad[dist]', i.e. mpi4py and mpich) and "
                          "launch with `mpiexec -n N python script.py`") from e
    return MPI


def init(timeout=None):
    """Join the MPI job (rank and size from mpiexec). A second call changes only the timeout."""
    if timeout is None:
        timeout = float(os.environ.get("DUALGRAD_DIST_TIMEOUT", DEFAULT_TIMEOUT))
    if timeout <= 0:
        raise ValueError(f"collective timeout must be positive, got {timeout} s")
    _World.timeout = float(timeout)
    if _World.comm is None:
        _World.comm = mpi().COMM_WORLD.Dup()   # NOTE: our traffic never meets the user's
        abort_on_uncaught()


def is_initialized():
    return _World.comm is not None


def finalize():
    """Leave the process group (MPI itself is finalised by mpi4py at exit)."""
    if _World.comm is not None:
        _World.comm.Free()
        _World.comm = None
        restore_excepthook()


def abort_on_uncaught():
    """From now on an exception that escapes on this rank ends every rank (MPI_Abort) with
    that exception shown (the process group's and the RPC agent's policy; idempotent)."""
    if sys.excepthook is not _abort_on_exception:
        _World.hook = sys.excepthook
        sys.excepthook = _abort_on_exception


def restore_excepthook():
    """Undo abort_on_uncaught (the process group and the RPC agent both gone)."""
    if sys.excepthook is _abort_on_exception:
        sys.excepthook = _World.hook


def world(what="this call"):
    if _World.comm is None:
        raise RuntimeError(f"{what}: the default process group has not been initialized; call "
                           f"init_process_group(backend='mpi') (eager) or hvd.init() (graph) "
                           f"first, and launch with `mpiexec -n N`")
    return _World.comm


def traffic():
    """Payload bytes this rank has handed to collectives (all-reduce, broadcast, gathers)."""
    return _World.sent


def mark_averaged(tensors):
    """Note that these leaves' incoming gradients were averaged over the ranks inside a graph
    (a compiled DDP call): DDP's hooks then leave them alone (see take_averaged)."""
    _World.averaged.update(id(t) for t in tensors)


def take_averaged(t):
    """Whether t's gradient came averaged already (and forget it: once per backward)."""
    if id(t) in _World.averaged:
        _World.averaged.discard(id(t))
        return True
    return False


def rank():
    return world("get_rank").Get_rank()


def size():
    return world("get_world_size").Get_size()


# -- faults -----------------------------------------------------------------------------------
def abort(message, code=1):
    """Print `message` (prefixed with this rank) and end every rank of the job."""
    comm = _World.comm if _World.comm is not None else mpi().COMM_WORLD   # NOTE: RPC's case
    sys.stderr.write(f"\ndualgrad.distributed: rank {comm.Get_rank()} of {comm.Get_size()}: "
                     f"{message}\n")
    sys.stderr.flush()
    # NOTE: mpiexec forwards a rank's stderr asynchronously and MPI_Abort ends its forwarder:
    # without a pause the traceback was lost in 2 of 6 runs of an RPC worker's fault, none of
    # 12 with it (tests/distributed/test_rpc.py)
    time.sleep(0.2)
    comm.Abort(code)


def _abort_on_exception(kind, value, tb):
    if _World.hook is not None:
        _World.hook(kind, value, tb)
    abort(f"raised {kind.__name__}: {value} (aborting all ranks: MPI_Abort)")


# NOTE: how a rank waits for a collective (comparisons/bench/mpi_wait.py: 2 ranks, 400 µs of
# work per iteration, then a 38 KB or 4 MB all-reduce; median µs per iteration, 0/1/2/4 other
# processes spinning on the 2 cores). MPICH advances a non-blocking collective only inside
# Test(), and a 38 KB all-reduce takes several protocol steps, so sleeping between polls (10
# -> 100 µs, this wait until 2026-12-07) put a sleep into every step: 1,329 / 1,639 / 1,250 /
# 1,252 µs against MPICH's blocking 534 / 1,101 / 528 / 522. Now: Test() and sched_yield()
# in turn for up to 5 ms, which hands the core to whatever else is runnable there, then the
# sleeps: 535 / 1,307 / 538 / 523 µs (4 MB: 2,395 / 2,582 / 3,349 / 1,964 against the sleeps'
# 2,621 / 2,959 / 2,927 / 3,297). A yield that took longer than CONTENDED_S ran another
# process, so the core is shared and the rank goes to sleeping at once: CFS keeps a yielding
# task runnable, and polling on would take the partner rank's time. Past the window the
# partner is truly late (uneven work, a slow rank) and sleeps leave the core to it; capped at
# 100 µs they were faster than at 1 ms in every one of 14 in-run comparisons on loaded cores.
YIELD_WINDOW_S = 5e-3
CONTENDED_S = 5e-5
WAIT_CAP_S = 1e-4


def wait(req, what):
    """Complete a non-blocking request, aborting the job once the timeout has passed."""
    if req.Test():
        return
    now = time.monotonic()
    deadline, yielding = now + _World.timeout, now + YIELD_WINDOW_S
    while now < yielding:
        os.sched_yield()
        if req.Test():
            return
        before, now = now, time.monotonic()
        if now - before > CONTENDED_S:
            break                   # the yield ran another process: this core is shared
    pause = 1e-5
    while not req.Test():
        if time.monotonic() > deadline:
            abort(f"{what} (collective #{_World.calls}) waited {_World.timeout:g} s for the "
                  f"other ranks to join: a rank has failed, hangs, or called a different "
                  f"collective. Aborting the job (MPI_Abort); the limit is "
                  f"init_process_group(timeout=...) or DUALGRAD_DIST_TIMEOUT (seconds)")
        time.sleep(pause)
        pause = min(2 * pause, WAIT_CAP_S)


# -- checks: what every rank passes must agree before any data moves --------------------------
def _signature(kind, arr, op=0, root=-1):
    sig = np.full(_SIG_LEN, -1, np.int64)
    dims = arr.shape if arr.ndim <= _SIG_LEN - 5 else (-2,)   # NOTE: > 11 dims: checked by size
    sig[:5] = (_KINDS.index(kind), op, root, arr.dtype.num, arr.ndim)
    sig[5:5 + len(dims)] = dims
    if arr.ndim > _SIG_LEN - 5:
        sig[-1] = arr.size
    return sig


def _describe(sig):
    kind, op, root, num, ndim = (int(v) for v in sig[:5])
    dtype = _dtype(num)
    shape = tuple(int(d) for d in sig[5:5 + ndim]) if ndim <= _SIG_LEN - 5 else f"{ndim}-d"
    extra = f", src={root}" if root >= 0 else ""
    return f"{_KINDS[kind]} of shape {shape} {dtype}{extra}"


def check_agree(kind, arr, op=0, root=-1):
    """Every rank must call the same collective on the same shape and dtype: else a clear
    RuntimeError on every rank (MPI would hang, fail, or mix mismatched buffers)."""
    comm = world(kind)
    sig = _signature(kind, arr, op, root)
    table = np.empty((comm.Get_size(), _SIG_LEN), np.int64)
    _World.calls += 1
    wait(comm.Iallgather(sig, table), kind)
    if not (table == table[0]).all():
        rows = "; ".join(f"rank {r}: {_describe(s)}" for r, s in enumerate(table))
        raise RuntimeError(f"{kind}: ranks disagree on the collective ({rows}); every rank "
                           f"must pass tensors of the same shape and dtype")


def check_same_shapes(what, tensors):
    """Every rank holds the same list of (name, shape, dtype): else, on every rank, a
    RuntimeError naming the first tensor that differs, what it is on rank 0 and on the other
    rank (MPI would fail or mix mismatched buffers later, in the first broadcast)."""
    comm = world(what)
    flat = np.array([len(tensors)] + [v for _, s, d in tensors
                                      for v in (len(s), *s, np.dtype(d).num)], np.int64)
    n = np.empty(comm.Get_size(), np.int64)
    wait(comm.Iallgather(np.array([flat.size], np.int64), n), what)
    ok = np.full(1, int((n == n[0]).all()), np.int64)
    if ok[0]:
        table = np.empty((comm.Get_size(), flat.size), np.int64)
        wait(comm.Iallgather(flat, table), what)
        ok[0] = int((table == table[0]).all())
    if ok[0]:
        return
    if (n == n[0]).all():
        raise RuntimeError(_first_difference(what, tensors, table))
    # NOTE: every rank reaches here; say what differs from the lengths alone when needed
    mine = ", ".join(f"{k} {tuple(s)} {np.dtype(d)}" for k, s, d in tensors)
    raise RuntimeError(f"{what}: parameter shapes differ across ranks (the model must be "
                       f"built identically on every rank); rank {comm.Get_rank()} has "
                       f"{len(tensors)} tensors: {mine}")


def _specs(row):
    """[(shape, dtype)] from one rank's flattened row of check_same_shapes."""
    out, i = [], 1
    for _ in range(int(row[0])):
        ndim = int(row[i])
        out.append((tuple(int(v) for v in row[i + 1:i + 1 + ndim]), _dtype(row[i + 1 + ndim])))
        i += ndim + 2
    return out


def _dtype(num):
    return next((np.dtype(c) for c in np.typecodes["All"] if np.dtype(c).num == num), num)


def _first_difference(what, tensors, table):
    ref = _specs(table[0])
    for r in range(1, len(table)):
        for (name, _, _), a, b in zip(tensors, ref, _specs(table[r])):
            if a != b:
                return (f"{what}: {name!r} is {a[0]} {a[1]} on rank 0 but {b[0]} {b[1]} on "
                        f"rank {r}; every rank must build the same model with the same dtypes "
                        f"(e.g. model.double() on every rank or none)")
    return f"{what}: the ranks' parameter lists differ"


# -- collectives on arrays, in place ----------------------------------------------------------
def _mpi_op(op):
    MPI = mpi()
    return {"sum": MPI.SUM, "avg": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN,
            "max": MPI.MAX}[op]


_OPS = ("sum", "avg", "product", "min", "max")


def _contiguous(fn):
    """Run fn on a C-contiguous, writable buffer of arr, written back to arr (MPI needs one)."""
    def run(arr, *args, **kwargs):
        if arr.flags.c_contiguous and arr.flags.writeable:
            return fn(arr, *args, **kwargs)
        buf = fn(np.ascontiguousarray(arr), *args, **kwargs)
        arr[...] = buf
        return arr
    return run


@_contiguous
def all_reduce(arr, op="sum", check=True, what="all_reduce"):
    """arr (every rank's, same shape) becomes the reduction over ranks, in place."""
    comm = world(what)
    if check:
        check_agree("all_reduce", arr, _OPS.index(op))
    _World.calls += 1
    _World.sent += arr.nbytes
    wait(comm.Iallreduce(mpi().IN_PLACE, arr, _mpi_op(op)), what)
    if op == "avg":
        arr /= comm.Get_size()
    return arr


def start_all_reduce(arr):
    """Begin summing arr across ranks in place; pass the request to wait(). (DDP's buckets.)"""
    _World.calls += 1
    _World.sent += arr.nbytes
    return world("all_reduce").Iallreduce(mpi().IN_PLACE, arr, mpi().SUM)


@_contiguous
def broadcast(arr, src=0, check=True):
    comm = world("broadcast")
    if not 0 <= src < comm.Get_size():
        raise ValueError(f"broadcast: src={src} is not a rank of this job "
                         f"(world size {comm.Get_size()})")
    if check:
        check_agree("broadcast", arr, root=src)
    _World.calls += 1
    _World.sent += arr.nbytes
    wait(comm.Ibcast(arr, root=src), "broadcast")
    return arr


def all_gather(arr, check=True):
    """A new array (world size, *arr.shape) holding every rank's arr, in rank order."""
    comm = world("all_gather")
    if check:
        check_agree("all_gather", arr)
    out = np.empty((comm.Get_size(),) + arr.shape, arr.dtype)
    _World.calls += 1
    _World.sent += arr.nbytes
    wait(comm.Iallgather(np.ascontiguousarray(arr), out), "all_gather")
    return out


def reduce_scatter(chunks, op="sum", check=True):
    """chunks (world size, *shape): rank r gets the reduction of every rank's chunks[r]."""
    comm = world("reduce_scatter")
    chunks = np.ascontiguousarray(chunks)
    if check:
        check_agree("reduce_scatter", chunks, _OPS.index(op))
    out = np.empty(chunks.shape[1:], chunks.dtype)
    _World.calls += 1
    _World.sent += chunks.nbytes
    wait(comm.Ireduce_scatter_block(chunks, out, _mpi_op(op)), "reduce_scatter")
    if op == "avg":
        out /= comm.Get_size()
    return out


def barrier():
    comm = world("barrier")
    _World.calls += 1
    wait(comm.Ibarrier(), "barrier")
