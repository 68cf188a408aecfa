"""Interrupt save, restore and DataLoader iteration at every step boundary (tests/
fault_injection.py) with an exception, SIGINT and (for saves) a kill: the previous checkpoint
always loads whole, a later save leaves no temporary, a restore leaves the session's values
all old or all new, a DataLoader leaves no worker process and iterates again correctly.

compile(): a first call (trace, optimise, run) interrupted anywhere leaves eager state whole:
no tracer in any .grad, grad mode and the trace stack as before, every parameter, buffer and
momentum as before the call, or all as after a whole step; the next eager step runs.

Budget: every boundary of eager.save / graph.save / Saver.restore (a few hundred each, cheap);
the kills (a fork each) and the DataLoader with workers (two processes each) take CAP
boundaries spread evenly over the call (tests/fault_injection.boundaries); compile's first
call CAP_COMPILE of them.
"""
from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np
import pytest

from dualgrad import compiler, eager, graph
from dualgrad.eager import nn
from dualgrad.ops import core as ops_core
from dualgrad.eager.utils.data import DataLoader, TensorDataset
from dualgrad.ops import files

from .fault_injection import boundaries, count_boundaries, interrupt_at

pytestmark = pytest.mark.usefixtures("hang_guard")
CAP = 25
CAP_COMPILE = 40     # of the ~150k boundaries of a first compiled call (trace, optimise, run)


def _leftovers(folder, keep):
    return sorted(n for n in os.listdir(folder) if n not in keep)


@pytest.mark.parametrize("fault", [KeyboardInterrupt, OSError, "sigint", "kill"],
                         ids=["KeyboardInterrupt", "OSError", "SIGINT", "kill"])
def test_eager_save_interrupted_anywhere_loses_nothing(tmp_path, fault):
    path = tmp_path / "ckpt.pt"
    eager.save({"w": eager.ones(4), "epoch": 1}, path)
    new = {"w": eager.zeros(4), "epoch": 2, "opt": {0: {"step": eager.tensor(3.0)}}}
    n = count_boundaries(lambda: eager.save(new, tmp_path / "probe.pt"))
    os.unlink(tmp_path / "probe.pt")
    for k in boundaries(n, CAP if fault == "kill" else n):
        interrupt_at(k, lambda: eager.save(new, path), fault)
        back = eager.load(path)                     # whole: the old checkpoint or the new one
        assert back["epoch"] in (1, 2), k
        assert back["w"].tolist() == ([1.0] * 4 if back["epoch"] == 1 else [0.0] * 4), k
        eager.save({"w": eager.ones(4), "epoch": 1}, path)
        assert _leftovers(tmp_path, {"ckpt.pt"}) == [], k   # a later save: nothing left


def _model(value):
    g = graph.Graph()
    with g.as_default():
        v = graph.Variable(np.full(3, value, np.float32), name="v")
        u = graph.Variable(np.full(2, value, np.float32), name="u")
        init = graph.global_variables_initializer()
    return g, (v, u), init


@pytest.mark.parametrize("fault", [KeyboardInterrupt, "sigint"])
def test_saver_save_and_restore_interrupted_anywhere(tmp_path, fault):
    prefix = str(tmp_path / "ckpt")
    g, _, init = _model(1.0)
    with graph.Session(g) as s:
        s.run(init)
        graph.train.Saver().save(s, prefix)
    g2, (v2, u2), init2 = _model(2.0)
    with graph.Session(g2) as s:
        s.run(init2)
        n = count_boundaries(lambda: graph.train.Saver().save(s, str(tmp_path / "p")))
        for k in range(1, n + 1):
            interrupt_at(k, lambda: graph.train.Saver().save(s, prefix), fault)
            with graph.Session(graph.load(prefix)) as s2:
                v = s2.run("v:0")
            assert v.tolist() in ([1.0] * 3, [2.0] * 3), k
        n = count_boundaries(lambda: graph.train.Saver().restore(s, prefix))
        for k in range(1, n + 1):
            s.run(init2)
            interrupt_at(k, lambda: graph.train.Saver().restore(s, prefix), fault)
            got = s.run([v2, u2])
            assert len({float(a[0]) for a in got}) == 1, (k, got)   # all old or all restored


def _batches(loader):
    return [b[0].tolist() for b in loader]


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_interrupted_anywhere_leaves_no_worker(workers):
    ds = TensorDataset(eager.arange(12).float(), eager.arange(12))
    loader = DataLoader(ds, batch_size=4, num_workers=workers)
    want = _batches(loader)
    n = count_boundaries(lambda: _batches(loader))
    for k in boundaries(n, CAP if workers else n):
        interrupt_at(k, lambda: _batches(loader), KeyboardInterrupt)
        deadline = time.monotonic() + 5
        while multiprocessing.active_children() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert multiprocessing.active_children() == [], k
        assert _batches(loader) == want, k


def test_fault_helper_reaches_every_boundary(tmp_path):
    n = count_boundaries(lambda: eager.save({"w": eager.ones(2)}, tmp_path / "a.pt"))
    assert n > 20
    assert isinstance(interrupt_at(n, lambda: eager.save({"w": eager.ones(2)},
                                                          tmp_path / "b.pt")), KeyboardInterrupt)
    assert interrupt_at(n + 1, lambda: None) is None
    assert files.SUFFIX not in "".join(os.listdir(tmp_path))


def _trained_model():
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


def _values(model, opt):
    state = [t.detach().numpy().copy() for t in [*model.parameters(), *model.buffers()]]
    return state + [b.numpy().copy() for b in _momenta(opt)]


def _momenta(opt):
    return [s["momentum_buffer"] for s in opt.state.values() if "momentum_buffer" in s]


def _whole(got, before, after):
    """All of the state as before the call or all of it as after a whole step: a trace
    writes nothing (BatchNorm's batch counter was bumped while tracing, found here), and
    the compiled run applies its parameter and buffer writes together at its end."""
    return (all(np.array_equal(g, b) for g, b in zip(got, before)) or
            all(np.allclose(g, a, rtol=1e-6, atol=1e-7) for g, a in zip(got, after)))


@pytest.mark.parametrize("fault", [KeyboardInterrupt, "sigint"], ids=["exception", "SIGINT"])
def test_compile_interrupted_anywhere_leaves_eager_state_whole(fault):
    x = eager.randn(5, 3, generator=eager.Generator().manual_seed(1))
    model, opt, step = _trained_model()
    before = _values(model, opt)
    step(x)
    after = _values(model, opt)
    n = count_boundaries(lambda: compiler.compile(_trained_model()[2])(x))
    for k in boundaries(n, CAP_COMPILE):
        model, opt, step = _trained_model()
        interrupt_at(k, lambda: compiler.compile(step)(x), fault)
        assert ops_core.current_trace() is None and not ops_core.TRACING[0], k
        assert eager.is_grad_enabled(), k
        for p in model.parameters():
            assert p.grad is None or type(p.grad) is eager.Tensor, (k, type(p.grad))
        got = _values(model, opt)
        assert _whole(got[:len(before)], before, after), k
        opt.step()                                   # the next eager step runs
    model, opt, step = _trained_model()              # and nothing global was left behind
    compiled = compiler.compile(step)(x).item()
    model, opt, step = _trained_model()
    np.testing.assert_allclose(compiled, step(x).item(), rtol=1e-6)
