"""The LSTM training step (train_models' lstm: nn.LSTM 128 -> 256, T 50, batch 64, Adam) before
and after ops.lstm_seq, alternating in one run: each (tree, column, round) is a fresh
`comparisons.bench.train_tier` child, the "before" tree given by --before (main's checkout),
the "after" tree this one; PyTorch on one thread as the reference. Medians per column.

    python scripts/benchmarks/lstm_seq.py [--before /work/main] [--rounds 5] [--steps 10]
        [--columns eager,comp]
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
    from dualgrad.comparisons.bench import train_models as M
    spec = {"model": "lstm", "column": column, "size": M.SIZES["lstm"], "steps": steps,
            "blas_threads": 1}
    env = dict(os.environ, ACC_ROOT=root)
    out = subprocess.run([sys.executable, "-m", "dualgrad.comparisons.bench.train_tier", "child",
                          json.dumps(spec)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", default="/work/main")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--columns", default="eager,comp")
    a = p.parse_args()
    runs = [(tree, root, col) for col in a.columns.split(",")
            for tree, root in (("before", a.before), ("after", HERE))]
    runs.append(("torch", HERE, "torch1"))
    times = {(t, c): [] for t, _, c in runs}
    for r in range(a.rounds):
        for tree, root, col in runs:
            res = child(root, col, a.steps)
            times[(tree, col)].append(statistics.median(res["times_ms"]))
            print(f"round {r + 1} {tree:6} {col:6} {times[(tree, col)][-1]:8.1f} ms "
                  f"loss {res['loss']:.6f}", flush=True)
    torch = statistics.median(times[("torch", "torch1")])
    print(f"\nmedians of {a.rounds} rounds' medians ({a.steps} steps each):")
    for (tree, col), ts in times.items():
        m = statistics.median(ts)
        print(f"  {tree:6} {col:6} {m:8.1f} ms   {m / torch:5.2f}x torch 1 thread")


if __name__ == "__main__":
    main()
