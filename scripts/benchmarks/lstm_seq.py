"""The LSTM training step (train_models' lstm: nn.LSTM 128 -> 256, T 50, batch 64, Adam) before
and after ops.lstm_seq, alternating in one run: each (tree, column, round) is a fresh
`comparisons.bench.train_tier` child, the "before" tree given by --before (main's checkout),
the "after" tree this one; PyTorch on one thread as the reference. Medians per column, of
wall time and of the process's CPU time per step (on a machine shared with other work the
CPU time is the steadier figure: it leaves out the time other processes held the core).

    python scripts/benchmarks/lstm_seq.py [--before /work/main] [--rounds 5] [--steps 10]
        [--columns eager,comp]
    python scripts/benchmarks/lstm_seq.py --toggle [--steps 40]

--toggle: one process, this tree, the eager step alternating between the per-step path (main's
code for the LSTM, kept for packed sequences) and lstm_seq, step by step: the same process,
heap and BLAS, so the difference is the one change's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child(root, column, steps):
    env = dict(os.environ, ACC_ROOT=root)
    out = subprocess.run([sys.executable, __file__, "--child", column, "--steps", str(steps)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_child(column, steps):
    """One column's step times in this process, as train_tier's child builds and times them."""
    import time
    from dualgrad.comparisons.bench import train_models as M
    from dualgrad.comparisons.bench.train_tier import _make
    from dualgrad.comparisons.threads import blas_limit
    from dualgrad.compiler.memory import pin_malloc
    pin_malloc()
    with blas_limit(1 if not column.startswith("torch") else 0):
        step = _make(column, "lstm", M.SIZES["lstm"])
        loss = step()
        step()
        wall, cpu = [], []
        for _ in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            step()
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    print(json.dumps({"times_ms": wall, "cpu_ms": cpu, "loss": loss}))


def toggle(steps):
    import time
    from dualgrad import eager
    from dualgrad.comparisons.bench import train_models as M
    from dualgrad.comparisons.threads import blas_limit
    from dualgrad.compiler.memory import pin_malloc
    from dualgrad.eager.nn import rnn
    pin_malloc()     # NOTE: as train_tier's child: dualgrad bench's allocator setting
    one_op = rnn._one_op
    paths = {"per-step": lambda *a: False, "lstm_seq": one_op}
    times = {k: ([], []) for k in paths}
    with blas_limit(1):
        step = M.build(eager, "lstm", M.SIZES["lstm"])
        for k in range(steps + 2):
            for name, fn in paths.items():
                rnn._one_op = fn
                t0, c0 = time.perf_counter(), time.process_time()
                step()
                if k >= 2:
                    times[name][0].append((time.perf_counter() - t0) * 1e3)
                    times[name][1].append((time.process_time() - c0) * 1e3)
    rnn._one_op = one_op
    for name, (wall, cpu) in times.items():
        print(f"  {name:9} wall {statistics.median(wall):7.1f} ms  cpu "
              f"{statistics.median(cpu):7.1f} ms  (medians of {steps} steps)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", default="/work/main")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--columns", default="eager,comp")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--toggle", action="store_true")
    a = p.parse_args()
    if a.toggle:
        return toggle(a.steps)
    if a.child:
        return run_child(a.child, a.steps)
    runs = [(tree, root, col) for col in a.columns.split(",")
            for tree, root in (("before", a.before), ("after", HERE))]
    runs.append(("torch", HERE, "torch1"))
    times = {(t, c): ([], []) for t, _, c in runs}
    for r in range(a.rounds):
        for tree, root, col in runs:
            res = child(root, col, a.steps)
            wall, cpu = times[(tree, col)]
            wall.append(statistics.median(res["times_ms"]))
            cpu.append(statistics.median(res["cpu_ms"]))
            print(f"round {r + 1} {tree:6} {col:6} wall {wall[-1]:7.1f} ms  cpu {cpu[-1]:7.1f} ms"
                  f"  loss {res['loss']:.6f}", flush=True)
    ref = [statistics.median(x) for x in times[("torch", "torch1")]]
    print(f"\nmedians of {a.rounds} rounds' medians ({a.steps} steps each):")
    for (tree, col), (wall, cpu) in times.items():
        w, c = statistics.median(wall), statistics.median(cpu)
        print(f"  {tree:6} {col:6} wall {w:7.1f} ms ({w / ref[0]:4.2f}x torch 1 thread)  "
              f"cpu {c:7.1f} ms ({c / ref[1]:4.2f}x)")


if __name__ == "__main__":
    main()
