"""How far each model's step is from this machine's limit: FLOPs per step (XLA's cost
analysis of the jitted step) against the single-core sgemm rate (NumPy float32 matmul,
512 x 512 x 512, best of several, on the BLAS threads the run uses)."""
from __future__ import annotations

import time

import numpy as np


def sgemm_gflops(n=512, repeat=10):
    """Best float32 matmul rate of NumPy's BLAS here, GFLOP/s."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    np.matmul(a, b, out=out)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - t)
    return 2.0 * n ** 3 / best / 1e9


def model_flops(name):
    """FLOPs of one training step of a model workload, or None without jax."""
    try:
        from dualgrad.comparisons.refs import jax_models
    except ImportError:
        return None
    from dualgrad.comparisons.models import load
    from .workloads import model_batch
    return jax_models.step_flops(name, load(name, "eager").initial_weights(0), model_batch(name))
