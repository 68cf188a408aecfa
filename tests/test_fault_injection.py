"""Interrupt save, restore and DataLoader iteration at every step boundary (tests/
fault_injection.py) with an exception, SIGINT and (for saves) a kill: the previous checkpoint
always loads whole, a later save leaves no temporary, a restore leaves the session's values
all old or all new, a DataLoader leaves no worker process and iterates again correctly.

Budget: every boundary of eager.save / graph.save / Saver.restore (a few hundred each, cheap);
the kills (a fork each) and the DataLoader with workers (two processes each) take CAP
boundaries spread evenly over the call (tests/fault_injection.boundaries).
"""
from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np
import pytest

from dualgrad import eager, graph
from dualgrad.eager.utils.data import DataLoader, TensorDataset
from dualgrad.ops import files

from .fault_injection import boundaries, count_boundaries, interrupt_at

pytestmark = pytest.mark.usefixtures("hang_guard")
CAP = 25


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
