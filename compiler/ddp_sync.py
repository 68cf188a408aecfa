"""DistributedDataParallel under compile(): one bucket of a traced graph's gradients replaced
by their mean over the ranks, as graph nodes (`ops.all_reduce_many`). Both the compiled
function's gradient graph (compiled.py) and a traced `backward()` (tracer.py) use it.
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops import distributed as _mpi

__all__ = ["average_bucket"]


def average_bucket(dxs, pairs, find_unused, xs):
    """One bucket: its gradients replaced by their all-reduced mean (ops.all_reduce_many)."""
    missing = [n for n, k in pairs if dxs[k] is None]
    keep = [k for _, k in pairs]
    if find_unused:   # NOTE: as torch: used on some rank -> zeros here; on none -> no .grad
        used = np.array([dxs[k] is not None for k in keep], np.int64)
        _mpi.all_reduce(used, "sum", what="DistributedDataParallel (compiled)")
        keep = [k for k, u in zip(keep, used) if u]
        for k in keep:
            dxs[k] = ops.zeros_like(xs[k]) if dxs[k] is None else dxs[k]
    elif missing:
        raise RuntimeError(f"DistributedDataParallel under compile: no gradient reaches "
                           f"{missing[:8]}, so the traced graph cannot average it. Every "
                           f"parameter must take part in the loss, or pass "
                           f"find_unused_parameters=True")
    if keep:
        for k, d in zip(keep, ops.all_reduce_many([dxs[k] for k in keep], "avg")):
            dxs[k] = d
