"""The benchmark workloads and, for each, how every column builds its step.

A workload is a name and a `make(column)` that returns a zero-argument callable doing one
step (a training step on a fixed batch, or one call of a micro-benchmark), or raises
`Skip` with a one-line reason when that column cannot run here (an outside library
missing). Columns:

    eager       dualgrad eager engine
    graph       dualgrad graph, Session(optimize=False)
    graph_opt   dualgrad graph, Session(optimize=True) (the optimiser)
    compiled    eager code through compiler.compile
    jax         jax.jit of the same workload (outside reference)
    torch       PyTorch eager (outside reference; timed in a process of its own, one thread)
    torch_compile  PyTorch with the model under torch.compile (only with --torch-compile)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

COLUMNS = ("eager", "graph", "graph_opt", "compiled", "jax", "torch", "torch_compile")
DEFAULT_COLUMNS = COLUMNS[:-1]
HEADERS = {"eager": "eager", "graph": "graph (optimize=False)",
           "graph_opt": "graph (optimize=True)", "compiled": "compiled eager",
           "jax": "jax.jit", "torch": "PyTorch eager", "torch_compile": "torch.compile"}
MODEL_NAMES = ("mlp", "cnn", "rnn", "transformer")
MICRO_NAMES = ("gelu", "layernorm", "dispatch")
GELU_C = math.sqrt(2.0 / math.pi)


class Skip(Exception):
    """This column cannot run here; the message says why (one line)."""


@dataclass
class Workload:
    name: str
    kind: str                      # "model" or "micro"
    description: str
    size: str
    make: Callable                 # (column) -> zero-arg step callable
    unit_div: int = 1              # the step does this many units (dispatch: ops per call)
    unit: str = "step"
    extra: dict = field(default_factory=dict)   # filled by make: e.g. the graph_opt session
    notes: dict = field(default_factory=dict)   # column -> a note shown beside its figure

    def optimizer_report(self):
        sess = self.extra.get("graph_opt_session")
        return None if sess is None else getattr(sess, "last_report", None)


# -- availability --------------------------------------------------------------------------------
def _need_jax():
    try:
        import jax  # noqa: F401
    except ImportError:
        raise Skip("jax is not installed (pip install jax)") from None


def _need_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Skip("PyTorch is not installed (pip install torch)") from None


def _not_here(col):
    if col == "torch_compile":
        return "torch.compile is timed on the model workloads only"
    return f"unknown column {col}"


# -- model workloads -----------------------------------------------------------------------------
BATCH = {"mlp": 128, "cnn": 64, "rnn": 32, "transformer": 64}
DESCRIPTION = {
    "mlp": "MLP 64-128-10 training step (SGD+momentum)",
    "cnn": "CNN conv-pool-conv-dense training step (SGD+momentum)",
    "rnn": "LSTM-64 over 8 rows, training step (SGD+momentum)",
    "transformer": "encoder block d=32, 4 heads, training step (Adam)",
}


def model_batch(name):
    """One fixed batch of the model's task (for the RNN: one whose rows are all 8 long)."""
    from dualgrad.comparisons.models.common import TASKS
    task = TASKS[name](batch_size=BATCH[name])
    if name == "rnn":
        full = np.flatnonzero(task.train[1] == 8)[:BATCH[name]]
        return tuple(a[full] for a in task.train)
    return task.batches(0)[0]


def model_workload(name) -> Workload:
    from dualgrad.comparisons.models import load
    batch = model_batch(name)
    w = Workload(name, "model", DESCRIPTION[name], f"batch {len(batch[-1])}", None)

    def make(col):
        weights = load(name, "eager").initial_weights(0)
        if col in ("eager", "compiled"):
            t = load(name, "eager").build(weights=weights, compiled=col == "compiled")
            return lambda: t.step(*batch)
        if col in ("graph", "graph_opt"):
            t = load(name, "graph").build(weights=weights, optimize=col == "graph_opt")
            if col == "graph_opt":
                w.extra["graph_opt_session"] = t.sess
            return lambda: t.step(*batch)
        if col == "jax":
            _need_jax()
            from dualgrad.comparisons.refs import jax_models
            step, state = jax_models.make_step(name, weights)
            box = [state]

            def run():
                box[0], loss = step(box[0], *batch)
                return loss.block_until_ready()
            return run
        if col in ("torch", "torch_compile"):
            _need_torch()
            from dualgrad.comparisons.refs import torch_models
            return torch_models.make_step(name, weights, batch, compiled=col == "torch_compile")
        raise Skip(_not_here(col))
    w.make = make
    return w


# -- micro-benchmarks ----------------------------------------------------------------------------
def _eager_gelu(x):
    from dualgrad import eager
    return 0.5 * x * (1.0 + eager.tanh(GELU_C * (x + 0.044715 * (x * x * x))))


def gelu_workload(quick=False) -> Workload:
    n = 2 ** 18 if quick else 2 ** 22
    x_np = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    w = Workload("gelu", "micro", "GELU (tanh form) chain, float32, op by op in eager",
                 f"2^{int(math.log2(n))} elements", None)

    def make(col):
        if col in ("eager", "compiled"):
            from dualgrad import eager
            x = eager.from_numpy(x_np)
            if col == "compiled":
                from dualgrad.comparisons.models.common import compile_fn
                f = compile_fn(_eager_gelu)
                return lambda: f(x)
            return lambda: _eager_gelu(x)
        if col in ("graph", "graph_opt"):
            from dualgrad import graph
            g = graph.Graph()
            with g.as_default():
                xp = graph.placeholder(graph.float32, (n,), name="x")
                y = 0.5 * xp * (1.0 + graph.tanh(GELU_C * (xp + 0.044715 * (xp * xp * xp))))
            sess = graph.Session(graph=g, optimize=col == "graph_opt")
            if col == "graph_opt":
                w.extra["graph_opt_session"] = sess
            return lambda: sess.run(y, {xp: x_np})
        if col == "jax":
            _need_jax()
            import jax.numpy as jnp
            from dualgrad.comparisons.refs import jax_models
            f, xj = jax_models.gelu_fn(), jnp.asarray(x_np)
            return lambda: f(xj).block_until_ready()
        if col == "torch":
            _need_torch()
            from dualgrad.comparisons.refs import torch_models
            return torch_models.gelu_step(x_np)
        raise Skip(_not_here(col))
    w.make = make
    return w


def layernorm_workload(quick=False) -> Workload:
    rows, d = (512, 256) if quick else (4096, 1024)
    rng = np.random.default_rng(0)
    x_np, r_np = (rng.standard_normal((rows, d)).astype(np.float32) for _ in range(2))
    g_np = (1.0 + 0.1 * rng.standard_normal(d)).astype(np.float32)
    b_np = (0.1 * rng.standard_normal(d)).astype(np.float32)
    w = Workload("layernorm", "micro", "LayerNorm over the last axis + residual add",
                 f"({rows}, {d})", None)

    def make(col):
        if col in ("eager", "compiled"):
            from dualgrad import eager
            from dualgrad.eager.nn import functional as F
            x, r, gm, bt = (eager.from_numpy(a) for a in (x_np, r_np, g_np, b_np))

            def f(x, r):
                return F.layer_norm(x, (d,), gm, bt) + r
            if col == "compiled":
                from dualgrad.comparisons.models.common import compile_fn
                f = compile_fn(f)
            return lambda: f(x, r)
        if col in ("graph", "graph_opt"):
            from dualgrad import graph
            g = graph.Graph()
            with g.as_default():
                xp = graph.placeholder(graph.float32, (rows, d), name="x")
                rp = graph.placeholder(graph.float32, (rows, d), name="residual")
                y = graph.nn.layer_norm(xp, graph.constant(g_np), graph.constant(b_np)) + rp
            sess = graph.Session(graph=g, optimize=col == "graph_opt")
            if col == "graph_opt":
                w.extra["graph_opt_session"] = sess
            return lambda: sess.run(y, {xp: x_np, rp: r_np})
        if col == "jax":
            _need_jax()
            import jax.numpy as jnp
            from dualgrad.comparisons.refs import jax_models
            f = jax_models.layernorm_residual_fn()
            args = [jnp.asarray(a) for a in (x_np, r_np, g_np, b_np)]
            return lambda: f(*args).block_until_ready()
        if col == "torch":
            _need_torch()
            from dualgrad.comparisons.refs import torch_models
            return torch_models.layernorm_step(x_np, r_np, g_np, b_np)
        raise Skip(_not_here(col))
    w.make = make
    return w


def dispatch_workload(quick=False) -> Workload:
    """`c = c + b` on 4-element arrays, k times: the cost of one op call, per op."""
    k = 200 if quick else 1000
    a_np = np.ones(4, np.float32)
    w = Workload("dispatch", "micro", f"per-op dispatch: a chain of {k} adds on 4 floats",
                 "4 elements", None, unit_div=k, unit="op",
                 notes={"jax": "op by op, not jitted", "graph": "one Session.run of the chain",
                        "graph_opt": "one Session.run of the chain"})

    def chain(a, b):
        c = a
        for _ in range(k):
            c = c + b
        return c

    def make(col):
        if col in ("eager", "compiled"):
            from dualgrad import eager
            a, b = eager.from_numpy(a_np.copy()), eager.from_numpy(a_np.copy())
            f = chain
            if col == "compiled":
                from dualgrad.comparisons.models.common import compile_fn
                f = compile_fn(chain)
            return lambda: f(a, b)
        if col in ("graph", "graph_opt"):
            from dualgrad import graph
            g = graph.Graph()
            with g.as_default():
                ap = graph.placeholder(graph.float32, (4,), name="a")
                bp = graph.placeholder(graph.float32, (4,), name="b")
                y = chain(ap, bp)
            sess = graph.Session(graph=g, optimize=col == "graph_opt")
            if col == "graph_opt":
                w.extra["graph_opt_session"] = sess
            return lambda: sess.run(y, {ap: a_np, bp: a_np})
        if col == "jax":
            _need_jax()
            import jax.numpy as jnp
            a, b = jnp.asarray(a_np), jnp.asarray(a_np)
            # NOTE: op by op, not jitted: this row measures dispatch, jit would fold it away
            return lambda: chain(a, b).block_until_ready()
        if col == "torch":
            _need_torch()
            import torch
            a, b = torch.from_numpy(a_np.copy()), torch.from_numpy(a_np.copy())
            return lambda: chain(a, b)
        raise Skip(_not_here(col))
    w.make = make
    return w


def workloads(names, quick=False) -> list[Workload]:
    micro = {"gelu": gelu_workload, "layernorm": layernorm_workload,
             "dispatch": dispatch_workload}
    out = []
    for n in names:
        out.append(model_workload(n) if n in MODEL_NAMES else micro[n](quick))
    return out
