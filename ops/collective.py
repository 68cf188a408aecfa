"""The all-reduce as an op: a collective both engines and compile() can stage as a graph node.

`all_reduce(x, op="avg")` is x reduced over every rank of the MPI job (ops/distributed.py);
its gradient is the same all-reduce of the incoming gradient (every rank's loss depends on
every rank's x). It is stateful, so the optimiser never folds, merges or drops it, and every
run checks that all ranks pass the same shape and dtype before data moves. Graphs use it
through `graph.distributed` (Horovod's `allreduce`, `DistributedOptimizer`), and
`compiler.compile` of a `DistributedDataParallel` model puts it on the gradients, so the
replayed graph averages them. Under one process (world size 1) it is the identity.
"""
from __future__ import annotations

import numpy as np

from . import distributed as _mpi
from .core import bind, register
from .shape import concat, reshape, slice_

OPS = ("sum", "avg")


def _infer(x, reduce="sum"):
    return x


def _kernel(x, reduce="sum"):
    return _mpi.all_reduce(np.array(x, copy=True, order="C"), reduce)


def _vjp(g, x, out, needs, reduce="sum"):
    # NOTE: every rank's result depends on every rank's x: dL/dx_r = all-reduce of the g's
    return (all_reduce(g, reduce),)


ALL_REDUCE = register("all_reduce", _infer, _kernel, _vjp, category="other", stateful=True,
                      samples=())


def all_reduce(x, op="sum"):
    """x summed (op="sum") or averaged (op="avg") over the ranks, as a new value."""
    if op not in OPS:
        raise ValueError(f"all_reduce: op must be one of {OPS}, got {op!r}")
    return bind(ALL_REDUCE, x, reduce=op)


ALL_REDUCE.fn = all_reduce


def all_reduce_many(tensors, op="avg"):
    """all_reduce of several tensors with one collective per dtype (Horovod's tensor fusion):
    flattened, concatenated, reduced, then cut back to their shapes."""
    out = [None] * len(tensors)
    for dtype in dict.fromkeys(t.dtype for t in tensors):
        idx = [i for i, t in enumerate(tensors) if t.dtype == dtype]
        shapes = [tuple(tensors[i].shape) for i in idx]
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        flat = [reshape(tensors[i], (n,)) for i, n in zip(idx, sizes)]
        total = all_reduce(flat[0] if len(flat) == 1 else concat(*flat), op)
        start = 0
        for i, shape, n in zip(idx, shapes, sizes):
            part = total if len(idx) == 1 else slice_(total, index=(slice(start, start + n),))
            out[i] = reshape(part, shape)
            start += n
    return out
