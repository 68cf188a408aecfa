"""The memory-budget curve of the GPT training step: peak memory against step time.

    python -m dualgrad.comparisons.bench.memory [--write-docs] [--rounds N] [--batch N]

The graph (TF1-style) GPT step of train_graph.py (realistic tier's GPT, batch 8 by default
so that the run takes under a minute here) runs in one Session without a budget and one per
`memory_budget` of 100%, 75%, 50% and 35% of the unbudgeted plan's peak. Per row: the
planned peak (`Session.plan_memory`); the measured peak: tracemalloc's high-water mark of a
steady-state run above what was live before it, plus the plan's preallocated buffers (which
live across runs), the least and the most of three runs (a fused loop's own temporaries
depend on whether it runs threaded, which it decides by timing); the median step time over
rounds that run every session once in turn (so a busy machine slows all rows alike); the
ratios to the unbudgeted row. Every row's losses must equal the unbudgeted row's bit for
bit, or the script fails.
glibc's thresholds are pinned first (`compiler.pin_malloc()`, as `dualgrad bench` does;
DUALGRAD_MALLOC=glibc leaves them): a budgeted plan allocates per run what the default plan
keeps in preallocated buffers, and with glibc's defaults those may be page-faulted in afresh.
`--write-docs` replaces the generated section of docs/compiler.md ("Memory budget").
"""
from __future__ import annotations

import gc
import statistics
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


def run(size, rounds=5):
    """One row per budget: dict(budget, planned, buffers, measured, seconds, losses)."""
    weights = train_models.initial_weights("gpt", size)
    rows = []
    for b in BUDGETS:
        step = train_graph.make_step("gpt", size, weights=weights, memory_budget=b)
        mem = step.session.plan_memory(step.fetches, step.feed)
        rows.append({"budget": b, "step": step, "mem": mem, "losses": [], "times": []})
    for r in rows:                   # NOTE: two warm-up runs (code generation, first faults)
        r["losses"] += [r["step"](), r["step"]()]
    for _ in range(rounds):
        for r in rows:
            t = time.perf_counter()
            r["losses"].append(r["step"]())
            r["times"].append(time.perf_counter() - t)
    for r in rows:
        # NOTE: after the timed runs (a fused loop's first large calls compile and time its
        # threaded variant); a kernel's own temporaries vary with the variant it picks
        peaks = []
        for _ in range(3):
            peak, losses = measured_peak(r["step"], r["mem"].buffers)
            peaks.append(peak)
            r["losses"] += losses
        r["measured"] = (min(peaks), max(peaks))
    ref = rows[0]["losses"]
    for r in rows[1:]:
        if r["losses"] != ref:
            raise AssertionError(f"memory_budget={r['budget']}: losses {r['losses']} differ "
                                 f"from the unbudgeted run's {ref}")
    return [{"budget": r["budget"], "planned": r["mem"].peak, "buffers": r["mem"].buffers,
             "measured": r["measured"], "seconds": statistics.median(r["times"]),
             "recomputed": r["mem"].recomputed, "target": r["mem"].budget} for r in rows]


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
    args = p.parse_args(argv)
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
