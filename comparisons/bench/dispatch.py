#!/usr/bin/env python
"""Benchmark of the eager engine: per-op dispatch overhead and a digits-MLP training step.

    python -m dualgrad.comparisons.bench.dispatch [--quick] [--threads N] [--json PATH]

Two groups, each timed side by side in one run (median of 8 repeats in 2 passes over the
peers, the method of docs/benchmarks.md, so slow drifts of a shared machine hit every peer alike):

* dispatch: a Python loop of ops on 4-element float32 tensors, so the figure is the pure
  per-op overhead in microseconds: `a + b` without grad, `a + b` on tensors that require grad
  (forward only: the tape entry is recorded) and `(a + b).sum().backward()`; beside NumPy
  `a + b`, the least a Python wrapper class can do, and PyTorch eager when it is installed.
* MLP step: one training step of a 64-128-ReLU-10 MLP at batch 128 on the scikit-learn digits
  (forward, softmax cross-entropy, backward, SGD with momentum 0.9): eager, a hand-written
  NumPy step (the floor for the same arithmetic in Python) and PyTorch eager.

The issue's target: eager `a + b` (no grad) at most 2x PyTorch eager's per-op time.

NOTE: glibc malloc is pinned (mmap threshold 64 MiB, no trim) as in the peers' figures;
DUALGRAD_MALLOC=glibc turns that off. BLAS and torch run on ONE thread by default
(`--threads N` to change, `--threads 0` for the libraries' own defaults): these ops are too
small to gain from threads, and on a busy 2-core machine OpenBLAS / OpenMP pools that spin
against other processes made single MLP steps take 5-50 ms instead of 0.3 ms. The thread
counts in force are printed under the table.
"""
from __future__ import annotations

import json
import sys




from dualgrad.compiler.memory import pin_malloc  # noqa: E402
from dualgrad.comparisons.bench.timing import time_group  # noqa: E402

MALLOC = pin_malloc()


def bench_group(fns, repeat=8, passes=2, target=0.05):
    """{name: (median, min)} per-call seconds, peers side by side (bench/timing.py)."""
    st = time_group(fns, repeat, target, passes)
    return {name: (v["median_s"], v["min_s"]) for name, v in st.items()}

import numpy as np  # noqa: E402

from dualgrad import eager  # noqa: E402
from dualgrad.eager import nn, optim  # noqa: E402

DISPATCH_LOOPS = 10_000
MLP_BATCH = 128
LR, MOMENTUM = 0.1, 0.9


# -- timing ---------------------------------------------------------------------------------




# -- peers ----------------------------------------------------------------------------------
def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class _Wrapper:
    """The least a pure-Python eager tensor can do: wrap, dispatch, re-wrap."""
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        return _Wrapper(np.add(self.data, other.data))


def dispatch_peers(n, torch):
    """name -> (zero-arg callable running n ops, torch peer name or None)."""
    an, bn = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    a, b = eager.tensor(an), eager.tensor(bn)
    ag, bg = eager.tensor(an, requires_grad=True), eager.tensor(bn, requires_grad=True)
    aw, bw = _Wrapper(an), _Wrapper(bn)

    def empty():
        for _ in range(n):
            pass

    def np_add():
        for _ in range(n):
            an + bn

    def wrapper_add():
        for _ in range(n):
            aw + bw

    def eager_add():
        for _ in range(n):
            a + b

    def eager_add_grad():
        for _ in range(n):
            ag + bg

    def eager_fwd_bwd():
        for _ in range(n):
            (ag + bg).sum().backward()

    peers = {
        "python empty loop (floor)": (empty, None),
        "numpy `a + b`": (np_add, None),
        "Python wrapper class over numpy `a + b`": (wrapper_add, None),
        "eager `a + b` (no grad)": (eager_add, "torch `a + b` (no grad)"),
        "eager `a + b` (requires_grad, forward)": (eager_add_grad,
                                                   "torch `a + b` (requires_grad, forward)"),
        "eager `(a + b).sum().backward()`": (eager_fwd_bwd,
                                             "torch `(a + b).sum().backward()`"),
    }
    if torch is not None:
        at, bt = torch.from_numpy(an.copy()), torch.from_numpy(bn.copy())
        atg, btg = at.clone().requires_grad_(), bt.clone().requires_grad_()

        def torch_add():
            for _ in range(n):
                at + bt

        def torch_add_grad():
            for _ in range(n):
                atg + btg

        def torch_fwd_bwd():
            for _ in range(n):
                (atg + btg).sum().backward()

        peers["torch `a + b` (no grad)"] = (torch_add, None)
        peers["torch `a + b` (requires_grad, forward)"] = (torch_add_grad, None)
        peers["torch `(a + b).sum().backward()`"] = (torch_fwd_bwd, None)
    return peers


# -- the MLP step ---------------------------------------------------------------------------
def _digits_batches(n_batches):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    return [(x[perm[i:i + MLP_BATCH]], y[perm[i:i + MLP_BATCH]])
            for i in range(0, MLP_BATCH * n_batches, MLP_BATCH)]


def _init_weights():
    """torch's Linear init, drawn once so every peer starts from the same weights."""
    rng = np.random.default_rng(0)
    b1, b2 = 1 / np.sqrt(64), 1 / np.sqrt(128)
    return [rng.uniform(-b1, b1, (128, 64)).astype(np.float32),
            rng.uniform(-b1, b1, 128).astype(np.float32),
            rng.uniform(-b2, b2, (10, 128)).astype(np.float32),
            rng.uniform(-b2, b2, 10).astype(np.float32)]


def _cycle(batches):
    state = [0]

    def next_batch():
        state[0] = (state[0] + 1) % len(batches)
        return batches[state[0]]
    return next_batch


def eager_step(batches, weights):
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    model.load_state_dict(dict(zip(["0.weight", "0.bias", "2.weight", "2.bias"], weights)))
    opt = optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    data = [(eager.tensor(x), eager.tensor(y)) for x, y in batches]
    next_batch = _cycle(data)

    def step():
        x, y = next_batch()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def numpy_step(batches, weights):
    """The same step written by hand in NumPy: what the arithmetic costs without a framework."""
    w1, b1, w2, b2 = (w.copy() for w in weights)
    params = [w1, b1, w2, b2]
    bufs = [None] * 4
    next_batch = _cycle(batches)

    def step():
        x, y = next_batch()
        n = len(y)
        h_pre = x @ w1.T + b1
        h = np.maximum(h_pre, 0)
        z = h @ w2.T + b2
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        loss = -np.log(p[np.arange(n), y]).mean()
        dz = p
        dz[np.arange(n), y] -= 1.0
        dz /= n
        dh = dz @ w2
        dh[h_pre <= 0] = 0
        grads = [dh.T @ x, dh.sum(0), dz.T @ h, dz.sum(0)]
        for i, (prm, g) in enumerate(zip(params, grads)):
            bufs[i] = g.copy() if bufs[i] is None else bufs[i] * MOMENTUM + g
            prm -= LR * bufs[i]
        return loss
    return step


def torch_step(torch, batches, weights):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.from_numpy(w))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]
    next_batch = _cycle(data)

    def step():
        x, y = next_batch()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def check_steps_agree(torch, batches, weights, steps=5):
    """The three steps are the same computation: their losses agree over a few steps."""
    runs = {"eager": eager_step(batches, weights), "numpy": numpy_step(batches, weights)}
    if torch is not None:
        runs["torch"] = torch_step(torch, batches, weights)
    losses = {k: [step().item() for _ in range(steps)] for k, step in runs.items()}
    ref = losses["numpy"]
    for k, v in losses.items():
        if not np.allclose(v, ref, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"MLP step of {k} disagrees with numpy: {v} vs {ref}")
    return losses


# -- running --------------------------------------------------------------------------------
def _threads(n, torch):
    """Limit BLAS (and torch) to n threads (0: leave the defaults); describe what is in force."""
    limiter = None
    if n:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(limits=n, user_api="blas")
        if torch is not None:
            torch.set_num_threads(n)
    from threadpoolctl import threadpool_info
    blas = ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()
                     if i["user_api"] == "blas") or "?"
    desc = f"numpy BLAS threads: {blas}"
    if torch is not None:
        desc += f"; torch threads: {torch.get_num_threads()}"
    return desc, limiter


def run(quick=False, threads=1):
    torch = _torch()
    thread_desc, _limiter = _threads(threads, torch)
    repeat = 4 if quick else 8
    n = 2_000 if quick else DISPATCH_LOOPS
    rows = []

    peers = dispatch_peers(n, torch)
    stats = bench_group({k: fn for k, (fn, _) in peers.items()}, repeat=repeat, target=0.0)
    for name, (med, lo) in stats.items():
        rows.append({"group": "dispatch (4 float32)", "peer": name, "unit": "us/op",
                     "median": med / n * 1e6, "min": lo / n * 1e6, "torch_peer": peers[name][1]})

    batches = _digits_batches(8)
    weights = _init_weights()
    check_steps_agree(torch, batches, weights)
    steps = {"eager MLP step": eager_step(batches, weights),
             "numpy hand-written MLP step": numpy_step(batches, weights)}
    if torch is not None:
        steps["torch MLP step"] = torch_step(torch, batches, weights)
    stats = bench_group(steps, repeat=repeat, target=0.02 if quick else 0.1)
    for name, (med, lo) in stats.items():
        rows.append({"group": f"MLP 64-128-10, batch {MLP_BATCH}, SGD", "peer": name,
                     "unit": "ms/step", "median": med * 1e3, "min": lo * 1e3,
                     "torch_peer": "torch MLP step" if name.startswith("eager") else None})

    by_name = {r["peer"]: r for r in rows}
    np_add = by_name["numpy `a + b`"]["median"]
    np_step = by_name["numpy hand-written MLP step"]["median"]
    for r in rows:
        t = by_name.get(r["torch_peer"] or "")
        r["x_torch"] = r["median"] / t["median"] if t else None
        base = np_add if r["unit"] == "us/op" else np_step
        r["x_numpy"] = r["median"] / base
    meta = {"malloc": MALLOC, "threads": thread_desc, "numpy": np.__version__,
            "torch": getattr(torch, "__version__", None), "quick": quick,
            "dispatch_loops": n, "repeat": repeat}
    return rows, meta


def target_verdict(rows):
    r = next(r for r in rows if r["peer"] == "eager `a + b` (no grad)")
    if r["x_torch"] is None:
        return "target (eager `a + b` <= 2x torch): torch not installed, not checked"
    ok = "met" if r["x_torch"] <= 2.0 else "MISSED"
    return (f"target (eager `a + b`, no grad, <= 2x torch eager): {ok} - "
            f"{r['median']:.3f} us vs {r['median'] / r['x_torch']:.3f} us = {r['x_torch']:.2f}x")


def print_rows(rows, meta):
    from rich.console import Console
    from rich.table import Table
    table = Table(title="dualgrad eager: dispatch overhead and MLP step (median of repeats)",
                  caption=f"malloc {meta['malloc']}; {meta['threads']}")
    for col, just in (("group", "left"), ("peer", "left"), ("median", "right"),
                      ("min", "right"), ("x numpy", "right"), ("x torch", "right")):
        table.add_column(col, justify=just)
    group = None
    for r in rows:
        if group is not None and r["group"] != group:
            table.add_section()
        table.add_row(r["group"] if r["group"] != group else "", r["peer"],
                      f"{r['median']:.3f} {r['unit']}", f"{r['min']:.3f}",
                      f"{r['x_numpy']:.2f}x",
                      "" if r["x_torch"] is None else f"{r['x_torch']:.2f}x")
        group = r["group"]
    console = Console(width=None if sys.stdout.isatty() else 132)
    console.print(table)
    console.print(target_verdict(rows))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 1
    rows, meta = run(quick="--quick" in argv, threads=threads)
    print_rows(rows, meta)
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
