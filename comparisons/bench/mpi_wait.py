"""What waiting for a collective costs when ranks share cores: MPI progress and polling.

    mpiexec -n 2 python -m dualgrad.comparisons.bench.mpi_wait [--iters N] [--work-us U]

Each iteration does U µs of NumPy work (a stand-in for the backward pass; rank 1 does 20 %
more, as an uneven share of a machine would), then averages a gradient buffer across the
ranks with one way of waiting for it:

    blocking   comm.Allreduce (MPICH polls its progress engine until the partner arrives)
    backoff    Iallreduce, then Test() with sleeps doubling 10 µs -> 1 ms
    backoff100 the same with sleeps capped at 100 µs (ops/distributed's wait until 2026-12-07)
    yield      Iallreduce, then Test() and os.sched_yield() in turn
    spin200    Test() without sleeping for up to 200 µs, then backoff
    yield1ms   Test() and sched_yield() for up to 1 ms, then backoff100
    yield5ms   ops/distributed's wait now: the same for up to 5 ms

The ways alternate iteration by iteration. It prints, for 38 KB (the small MLP's gradients)
and 4 MB buffers, µs per iteration (median of rank 0's iterations) and the CPU time each rank
used per iteration (what the waiting took from the other rank's core).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from dualgrad.ops import distributed


def _backoff(cap, spin=0.0):
    def wait(req):
        t_end = time.perf_counter() + spin
        while time.perf_counter() < t_end:
            if req.Test():
                return
        pause = 1e-5
        while not req.Test():
            time.sleep(pause)
            pause = min(2 * pause, cap)
    return wait


def _yield(req):
    while not req.Test():
        os.sched_yield()


def _yield_then_backoff(window, cap):
    def wait(req):
        t_end = time.perf_counter() + window
        while time.perf_counter() < t_end:
            if req.Test():
                return
            os.sched_yield()
        _backoff(cap)(req)
    return wait


HOWS = ("blocking", "backoff", "backoff100", "yield", "spin200", "yield1ms", "yield5ms")


def measure(comm, nbytes, iters, work_us):
    """{how: (median µs per iteration, CPU µs per iteration)}; the ways alternate iteration by
    iteration, so the machine's drift hits them alike."""
    from mpi4py import MPI
    buf = np.ones(nbytes // 4, np.float32)
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    work = work_us * (1.2 if comm.Get_rank() == 1 else 1.0) * 1e-6
    waits = {"backoff": _backoff(1e-3), "backoff100": _backoff(1e-4), "yield": _yield,
             "spin200": _backoff(1e-3, 2e-4), "yield1ms": _yield_then_backoff(1e-3, 1e-4),
             "yield5ms": lambda req: distributed.wait(req, "mpi_wait")}
    times = {h: [] for h in HOWS}
    cpu = dict.fromkeys(HOWS, 0.0)
    for _ in range(iters):
        for how in HOWS:
            c0, t0 = time.process_time(), time.perf_counter()
            while time.perf_counter() - t0 < work:
                a @ a
            if how == "blocking":
                comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)
            else:
                waits[how](comm.Iallreduce(MPI.IN_PLACE, buf, MPI.SUM))
            times[how].append(time.perf_counter() - t0)
            cpu[how] += time.process_time() - c0
    return {h: (statistics.median(times[h]) * 1e6, cpu[h] / iters * 1e6) for h in HOWS}


def main(argv=None):
    from mpi4py import MPI
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--work-us", type=float, default=400.0)
    args = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in (38_448, 4 << 20):
        comm.Barrier()
        got = measure(comm, nbytes, args.iters, args.work_us)
        cpus = comm.gather({h: c for h, (_, c) in got.items()}, 0)
        for how in HOWS:
            rows.append((nbytes, how, got[how][0], [c[how] for c in cpus or []]))
    if comm.Get_rank() == 0:
        print(f"{comm.Get_size()} ranks, {args.work_us:.0f} µs of work per iteration, "
              f"load average {os.getloadavg()[0]:.1f}")
        print(f"{'bytes':>9} {'wait':>10} {'µs/iter':>8} {'CPU µs/iter per rank':>22}")
        for nbytes, how, us, cpus in rows:
            print(f"{nbytes:>9,} {how:>10} {us:>8.0f} {' / '.join(f'{c:.0f}' for c in cpus):>22}")


if __name__ == "__main__":
    main()
