"""`optimize(graph, fetches, feed_specs) -> (plan, report)`: the passes, in order.

The plan is a `graph.Plan` (see graph/plan.py); `Session(optimize=True)` calls this once per
(fetches, feed signature) and caches the plan, so a training loop pays for it once.
"""
from __future__ import annotations

import time
import warnings

from .ir import ReinferError, from_graph, to_plan, topo_sort
from dualgrad.graph.core import Tensor
from dualgrad.graph.plan import build_plan, needed_nodes
from dualgrad.ops.core import user_stacklevel

from . import plan_memory
from .memory import pin_if_asked
from .passes import BY_NAME, PASSES
from .report import PassRecord, Report


def optimize(graph, fetches, feed_specs=None, passes=None, memory_budget=None):
    """Optimise the subgraph `fetches` need, for feeds of the given specs (default: every
    placeholder it needs, with its declared spec; unknown dims stay unknown).

    passes: names to run (default: all, in the listed order: prune, constant_fold, cse,
    simplify, cse again, layout, fuse, remat (only with a memory_budget), buffers; a subset
    keeps that order). A shape rule that fails with the actual feed shapes gives the
    unoptimised plan, so the error is raised at run time naming the node, as without
    the optimiser.

    memory_budget: None (no budget), bytes (an int), or a fraction of the plan's peak
    without a budget (a float in (0, 1]): the `remat` pass, run only then, recomputes
    activations so that the planned peak (`plan.memory`) is at most the budget; a warning
    names the budget and the peak reached when it cannot be met. Results are the same bits.
    """
    pin_if_asked()
    if feed_specs is None:      # as Grappler: optimise for the placeholders' declared specs
        feed_specs = declared_specs(fetches)
    check_budget(memory_budget)
    chosen = PASSES if passes is None else [p for p in PASSES if p.NAME in _check(passes)]
    if memory_budget is None:
        chosen = [p for p in chosen if p.NAME != "remat"]
    t0 = time.perf_counter()
    try:
        prog = from_graph(fetches, feed_specs)
    except ReinferError as e:
        plan = build_plan(fetches, list(feed_specs))
        return plan, Report(len(plan.steps), len(plan.steps), [], note=f"not optimised: {e}")
    topo_sort(prog)
    prog.memory_budget = memory_budget
    before = prog.count()
    records = []
    for p in chosen:
        n0, t = prog.count(), time.perf_counter()
        details = p.run(prog)
        topo_sort(prog)
        records.append(PassRecord(p.NAME, n0, prog.count(), details,
                                  time.perf_counter() - t))
    plan = to_plan(prog)
    plan.memory = _memory(prog, memory_budget)
    report = Report(before, prog.count(), records, seconds=time.perf_counter() - t0)
    report.program = prog
    report.memory = plan.memory
    return plan, report


def check_budget(budget):
    """A memory_budget is None, a positive int (bytes) or a float in (0, 1] (a fraction)."""
    ok = budget is None or (isinstance(budget, int) and not isinstance(budget, bool)
                            and budget > 0) or (isinstance(budget, float) and 0 < budget <= 1)
    if not ok:
        raise ValueError(f"memory_budget must be None, a positive int (bytes) or a float in "
                         f"(0, 1] (a fraction of the peak without a budget), got {budget!r}")
    return budget


def _memory(prog, budget):
    """The plan's MemoryReport; warns when a budget was given and is not met."""
    if budget is None:
        return plan_memory.report(prog)
    target, unbudgeted = prog.memory_target
    if target is None:   # NOTE: remat was not among the passes run
        from .passes.remat import budget_bytes
        unbudgeted = plan_memory.report(prog).peak
        target = budget_bytes(budget, unbudgeted)
    mem = plan_memory.report(prog, target, unbudgeted, prog.recomputed)
    if mem.peak > target:
        warnings.warn(f"memory_budget={budget!r} ({target} bytes) cannot be met: the plan's "
                      f"peak is {mem.peak} bytes at best ({mem.peak / max(target, 1):.2f}x the "
                      f"budget; {mem.unbudgeted} bytes without a budget), recomputing "
                      f"{mem.recomputed} values", UserWarning, stacklevel=user_stacklevel())
    return mem


def declared_specs(fetches):
    """{placeholder Tensor: its declared Spec} for the placeholders `fetches` need."""
    nodes = needed_nodes([f.node if isinstance(f, Tensor) else f for f in fetches], frozenset())
    return {n.outputs[0]: n.outputs[0].spec for n in nodes if n.type == "placeholder"}


def _check(names):
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown pass(es) {unknown}; the passes are {list(BY_NAME)}")
    return set(names)
