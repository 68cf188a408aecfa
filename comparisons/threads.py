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


# -- which kernels NumPy's OpenBLAS runs ----------------------------------------------------
# NOTE: OpenBLAS picks its kernels (the "core type") from the CPU when it loads, unless
# OPENBLAS_CORETYPE names them: this workplace's machines set OPENBLAS_CORETYPE=Haswell, so on
# their AVX-512 EPYCs NumPy's float32 1024^3 product ran at 105 GFLOP/s on one thread against
# 186 with the SkylakeX kernels OpenBLAS picks by itself (PyTorch's oneDNN ignores the
# variable). The commands leave it as the user set it and report it with their figures.
def blas_core():
    """The kernels NumPy's BLAS runs ('SkylakeX', 'Haswell', ...), and why: ' (set by
    OPENBLAS_CORETYPE)' where the environment chose them; None where it cannot be told."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    import os
    import numpy  # noqa: F401 - loads the BLAS threadpoolctl reports on
    core = next((i.get("architecture") for i in threadpool_info()
                 if i.get("user_api") == "blas" and i.get("architecture")), None)
    if core and os.environ.get("OPENBLAS_CORETYPE"):
        core += " (set by OPENBLAS_CORETYPE)"
    return core
