"""How many threads NumPy's BLAS may use while a `dualgrad` command runs.

On a 2-core machine that other processes share, OpenBLAS's spinning threads fight numba's
pool and each other: `dualgrad train mlp --mode eager` took 4.3-6.8 s with OpenBLAS's
default threads under load against 0.4 s with one. The commands (`train`, `tour`, `bench`)
therefore default to one BLAS thread, `--blas-threads N` changes it (0: the library's
default). Only the command does this, for its own run: the library never changes the
user's thread pools.
"""
from __future__ import annotations

import contextlib

DEFAULT_BLAS_THREADS = 1


def blas_limit(n):
    """Limit NumPy's BLAS to n threads inside the block (threadpoolctl ships with sklearn)."""
    if not n:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")
