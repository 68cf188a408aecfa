"""The memory-budget curve of the GPT training step: peak memory against step time.

    python -m dualgrad.comparisons.bench.memory [--write-docs] [--rounds N] [--batch N]

The graph (TF1-style) GPT step of train_graph.py (realistic tier's GPT, batch 8 by default
so that the whole script takes about a minute here) runs in one Session without a budget
and one per `memory_budget` of 100%, 75%, 50% and 35% of the unbudgeted plan's peak. Per row: the
planned peak (`Session.plan_memory`); the measured peak: tracemalloc's high-water mark of a
steady-state run above what was live before it, plus the plan's preallocated buffers (which
live across runs), the least and the most of three runs, each row measured in a child
process of its own (`--measure`; a fused loop's own temporaries depend on whether it runs
threaded, which it decides by timing); the median step time over rounds that run every
session once in turn in this process (so a busy machine slows all rows alike); the ratios
to the unbudgeted row. Every row's losses must equal the unbudgeted row's bit for bit, in
this process and in the children, or the script fails.
glibc's thresholds are pinned first (`compiler.pin_malloc()`, as `dualgrad bench` does;
DUALGRAD_MALLOC=glibc leaves them): a budgeted plan allocates per run what the default plan
keeps in preallocated buffers, and with glibc's defaults those may be page-faulted in afresh.
`--write-docs` replaces the generated section of docs/compiler.md ("Memory budget").
"""
from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from . import train_graph, train_models
from .train_report import write_section

BUDGETS = (None, 1.0, 0.75, 0.5, 0.35)
MARKERS = ("<!-- memory-budget: begin (generated) -->", "<!-- memory-budget: end -->")
PAGE = Path(__file__).resolve().parents[2] / "docs" / "compiler.md"


def gpt_size(batch=8):
    return dict(train_models.SIZES["gpt"], batch=batch)


def measured_peak(step, buffers):
    """(tracemalloc's high-water mark of one run of `step` above what was live before it
    (its variables' values are traced by a run before), plus `buffers` bytes; the losses of
    the two runs)."""
    tracemalloc.start()
    try:
        losses = [step()]
        gc.collect()
        gc.disable()   # NOTE: a collection of earlier garbage would lower the figure
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        losses.append(step())
        return tracemalloc.get_traced_memory()[1] - before + buffers, losses
    finally:
        gc.enable()
        tracemalloc.stop()


def measure(budget, batch, warmups=6, runs=3):
    """In this process, alone: one session's planned peak, its measured peaks (`runs` of
    them, after `warmups` runs) and every loss, as a dict."""
    size = gpt_size(batch)
    step = train_graph.make_step("gpt", size, memory_budget=budget)
    mem = step.session.plan_memory(step.fetches, step.feed)
    losses = [step() for _ in range(warmups)]
    peaks = []
    for _ in range(runs):
        peak, more = measured_peak(step, mem.buffers)
        peaks.append(peak)
        losses += more
    return {"budget": budget, "planned": mem.peak, "buffers": mem.buffers,
            "target": mem.budget, "recomputed": mem.recomputed, "measured": peaks,
            "losses": [float(x).hex() for x in losses]}


def _measure_apart(budget, batch):
    """`measure` in a child process (sessions sharing a process disturb tracemalloc's
    figures: up to 20 MiB either way here), read back from its one JSON line."""
    arg = "none" if budget is None else repr(budget)
    out = subprocess.run([sys.executable, "-m", "dualgrad.comparisons.bench.memory",
                          "--measure", arg, "--batch", str(batch)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(size, rounds=5):
    """One row per budget: dict(budget, planned, buffers, measured, seconds, ...)."""
    weights = train_models.initial_weights("gpt", size)
    steps = [train_graph.make_step("gpt", size, weights=weights, memory_budget=b)
             for b in BUDGETS]
    losses = [[s(), s()] for s in steps]   # NOTE: warm-up (code generation, first faults)
    times = [[] for _ in steps]
    for _ in range(rounds):
        for s, ls, ts in zip(steps, losses, times):
            t = time.perf_counter()
            ls.append(s())
            ts.append(time.perf_counter() - t)
    _same_losses([[float(x).hex() for x in ls] for ls in losses])
    rows = [_measure_apart(b, size["batch"]) for b in BUDGETS]
    _same_losses([r["losses"] for r in rows])
    for r, ts in zip(rows, times):
        r["seconds"] = statistics.median(ts)
        r["measured"] = (min(r["measured"]), max(r["measured"]))
    return rows


def _same_losses(per_row):
    for b, ls in zip(BUDGETS[1:], per_row[1:]):
        if ls != per_row[0]:
            raise AssertionError(f"memory_budget={b}: losses {ls} differ from the unbudgeted "
                                 f"run's {per_row[0]}")


def markdown(rows, size, rounds, malloc):
    base = rows[0]
    lines = [f"GPT training step (graph engine, Adam; {size['blocks']} blocks, d {size['d']}, "
             f"{size['heads']} heads, T {size['tokens']}, vocab {size['vocab']}, batch "
             f"{size['batch']}), median of {rounds} rounds, malloc {malloc}; every row's "
             f"losses equal the unbudgeted row's bit for bit. `python -m "
             f"dualgrad.comparisons.bench.memory --write-docs` regenerates this table.", "",
             "| memory_budget | budget (MiB) | planned peak (MiB) | measured peak (MiB, 3 runs) | "
             "peak / unbudgeted | step (ms) | time / unbudgeted | nodes recomputed |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        name = "none" if r["budget"] is None else f"{r['budget']:.0%}"
        target = "" if r["target"] is None else f"{r['target'] / 2**20:.1f}"
        lines.append(f"| {name} | {target} | {r['planned'] / 2**20:.1f} | "
                     f"{r['measured'][0] / 2**20:.1f}-{r['measured'][1] / 2**20:.1f} | "
                     f"{r['planned'] / base['planned']:.2f} | "
                     f"{r['seconds'] * 1e3:.0f} | {r['seconds'] / base['seconds']:.2f} | "
                     f"{r['recomputed']} |")
    return "\n".join(lines)


def main(argv=None):
    import argparse
    import warnings
    p = argparse.ArgumentParser(prog="python -m dualgrad.comparisons.bench.memory")
    p.add_argument("--write-docs", action="store_true",
                   help="replace the generated section of docs/compiler.md")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--measure", metavar="BUDGET", help=argparse.SUPPRESS)   # the child's part
    args = p.parse_args(argv)
    if args.measure is not None:
        from dualgrad.compiler import pin_malloc
        pin_malloc()
        budget = None if args.measure == "none" else float(args.measure)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            print(json.dumps(measure(budget, args.batch)))
        return
    from dualgrad.compiler import pin_malloc
    from dualgrad.compiler.memory import malloc_mode
    print(f"malloc: {pin_malloc()}")   # NOTE: as `dualgrad bench` (DUALGRAD_MALLOC=glibc: not)
    size = gpt_size(args.batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = run(size, args.rounds)
    for w in caught:
        print(f"warning: {w.message}")
    text = markdown(rows, size, args.rounds, malloc_mode())
    print(text)
    if args.write_docs:
        write_section(PAGE, MARKERS, text)
        print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
