"""`dualgrad tour`: the first minute with dualgrad.

1. The MLP trained twice from the same weights on the same batches, eager and graph, side
   by side: the losses agree step by step, and both reach the same held-out accuracy.
2. A quick benchmark of that training step and of a GELU chain.
3. One shape bug, written in both styles, and where it surfaces in each: the graph refuses
   it while being built, before any data exists; eager meets it when the first batch runs.
"""
from __future__ import annotations

import os
import time

import numpy as np
from rich.panel import Panel
from rich.table import Table

from .models import load
from .models.common import mlp_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES_PAIR = "dense_inner"   # the catalogue's bug shown (issue 7), when it is there


def tour(console, epochs=5):
    console.rule("[bold]dualgrad tour[/]: one framework, two front doors")
    agree(console, epochs)
    quick_bench(console)
    shape_errors(console)
    console.rule()
    console.print("next: [bold]dualgrad train cnn --mode graph[/], [bold]dualgrad bench[/], "
                  "[bold]dualgrad graph mlp --optimized[/]; read comparisons/models/*_eager.py "
                  "beside *_graph.py, and docs/tutorial.md")


# -- 1. the same model, both ways ----------------------------------------------------------------
def agree(console, epochs):
    console.print(Panel("[bold]1. The same MLP, written twice[/]\n"
                        "comparisons/models/mlp_eager.py: an nn.Module, called batch by batch\n"
                        "comparisons/models/mlp_graph.py: placeholders, Variables, a train op, "
                        "Session.run\nBoth start from the same weights (the eager model's "
                        "state_dict) and see the same batches.", expand=False))
    E, G = load("mlp", "eager"), load("mlp", "graph")
    weights = E.initial_weights(0)
    te, tg = E.build(weights=weights), G.build(weights=weights)
    task = mlp_task()
    t = Table(title="training side by side", title_justify="left",
              caption="diff: the largest relative difference between the two losses at any "
                      "step of the epoch; acc: held-out accuracy; s: seconds (graph epoch 1 "
                      "includes optimising the graph and compiling its fused kernels)",
              caption_justify="left")
    for col in ("epoch", "eager\nloss", "graph\nloss", "diff", "eager\nacc", "graph\nacc",
                "eager\ns", "graph\ns"):
        t.add_column(col, justify="right")
    worst = 0.0
    for epoch in range(epochs):
        le, lg, se, sg = [], [], 0.0, 0.0
        for batch in task.batches(epoch):
            s = time.perf_counter()
            le.append(te.step(*batch))
            se += time.perf_counter() - s
            s = time.perf_counter()
            lg.append(tg.step(*batch))
            sg += time.perf_counter() - s
        diff = float(np.max(np.abs(np.subtract(le, lg)) / np.abs(le)))
        worst = max(worst, diff)
        t.add_row(str(epoch + 1), f"{np.mean(le):.5f}", f"{np.mean(lg):.5f}", f"{diff:.1e}",
                  f"{_acc(te, task):.3f}", f"{_acc(tg, task):.3f}", f"{se:.2f}", f"{sg:.2f}")
    console.print(t)
    same = np.allclose(te.predict(task.test[0]), tg.predict(task.test[0]), rtol=1e-4,
                       atol=1e-5)
    console.print(f"largest step-by-step loss difference {worst:.1e}; held-out logits "
                  f"{'agree' if same else 'DIFFER'} (rtol 1e-4)\n")


def _acc(trainer, task):
    from .models.common import evaluate
    return evaluate(trainer, task)


# -- 2. a quick benchmark ------------------------------------------------------------------------
def quick_bench(console):
    from .bench import report, run_bench
    console.print(Panel("[bold]2. How fast, side by side[/] (quick sizes; "
                        "run [bold]dualgrad bench[/] for the full table)", expand=False))
    with console.status("benchmarking the MLP step and a GELU chain…"):
        res = run_bench(["mlp", "gelu"], quick=True)
    console.print(report.times_table(res))
    console.print(f"[dim]{report.legend(report.shown_columns(res))}[/]", highlight=False)
    for line in report.optimizer_lines(res):
        console.print(f"optimiser: {line}", highlight=False)
    for line in report.notes(res):
        console.print(f"[dim]note: {line}[/]", highlight=False)
    console.print()


# -- 3. one shape bug, both ways -----------------------------------------------------------------
def shape_errors(console):
    rows, title = _from_catalogue() or ([_run(eager_bug, "eager"), _run(graph_bug, "graph")],
                                        "the second layer expects 100 inputs, the first "
                                        "gives 128")
    console.print(Panel(f"[bold]3. One shape bug, both ways[/]: {title}", expand=False))
    t = Table()
    for col in ("mode", "surfaces", "after", "where"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["mode"], r["phase"], f"{r['seconds'] * 1e3:.1f} ms", r["where"])
    console.print(t)
    for r in rows:
        console.print(f"[bold]{r['mode']}[/]: {r['message']}", highlight=False)
    console.print("The graph checks shapes as each node is built, so the bug stops the "
                  "program before any data exists; eager checks as each op runs, so it "
                  "stops at the first batch — with the line either way. More bugs, both "
                  "ways: comparisons/shapes/.")


def _run(fn, mode):
    t0 = time.perf_counter()
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error is what we show
        secs = time.perf_counter() - t0
        msg = str(e).splitlines()[0]
        loc = getattr(e, "location", None)
        where = f"{_rel(loc[0])}:{loc[1]}" if loc else "-"
        phase = "build (no data yet)" if mode == "graph" else "first batch (step 1)"
        return {"mode": mode, "phase": phase, "seconds": secs, "where": where, "message": msg}
    return {"mode": mode, "phase": "never", "seconds": time.perf_counter() - t0, "where": "-",
            "message": "(no error)"}


def eager_bug():
    from dualgrad import eager
    from dualgrad.eager import nn
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(),
                          nn.Linear(100, 10))                      # BUG: 100 != 128
    x, _ = mlp_task().batches(0)[0]
    return model(eager.from_numpy(x))                             # fails here, on data


def graph_bug():
    from dualgrad import graph
    with graph.Graph().as_default():
        x = graph.placeholder(graph.float32, (None, 64), name="x")
        h = graph.nn.dense(x, 128, activation=graph.nn.relu, name="dense1")
        kernel = graph.Variable(np.zeros((100, 10), np.float32), name="dense2/kernel")
        return graph.matmul(h, kernel)                            # BUG: fails here, no data


def _rel(path):
    """A path inside the checkout, relative to its root (short, and the same from any cwd)."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def _from_catalogue():
    """(rows, title) for the same kind of bug from the shape catalogue, or None."""
    try:
        from .shapes import harness
        base = os.path.join(os.path.dirname(harness.__file__), "bugs", SHAPES_PAIR)
        with open(f"{base}_eager.py") as f:
            title = f.readline().strip().strip('"').rstrip(".")
        rows = []
        for mode in ("eager", "graph"):
            rec = harness.run_file(f"{base}_{mode}.py", mode)
            if rec.get("status") != "raised":
                return None
            where = f"{os.path.basename(rec['file'])}:{rec.get('msg_line') or rec['tb_line']}"
            rows.append({"mode": mode, "phase": rec["phase"], "seconds": rec["seconds"],
                         "where": where, "message": rec["first_line"]})
        return rows, f"{title} (comparisons/shapes/bugs/{SHAPES_PAIR}_*.py)"
    except Exception:  # noqa: BLE001 - catalogue absent or changed: use the built-in bug
        return None
