"""eager.utils.tensorboard.SummaryWriter writes event files TensorBoard reads back: scalars,
add_scalars' runs, histograms, and a compiled model's graph."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import compiler, eager
from dualgrad.eager import nn
from tests.tensorboard_check import displayable, read

SummaryWriter = pytest.importorskip("dualgrad.eager.utils.tensorboard").SummaryWriter


def test_scalars_and_histograms_read_back(tmp_path):
    w = eager.randn(1000)
    with SummaryWriter(tmp_path) as writer:
        for step in range(5):
            writer.add_scalar("loss", eager.tensor(1.0 / (step + 1)), step)
            writer.add_scalar("lr", np.float32(0.1), step)
        writer.add_histogram("w", w, 4)
    acc = read(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("loss")] == \
        [(s, round(1.0 / (s + 1), 6)) for s in range(5)]
    (h,) = acc.Histograms("w")
    hv, a = h.histogram_value, w.numpy().astype(np.float64)
    assert h.step == 4 and hv.num == 1000 and sum(hv.bucket) == 1000
    assert hv.min == pytest.approx(a.min()) and hv.max == pytest.approx(a.max())
    assert hv.sum == pytest.approx(a.sum(), rel=1e-6)
    assert hv.sum_squares == pytest.approx((a ** 2).sum(), rel=1e-6)
    assert list(hv.bucket_limit) == sorted(hv.bucket_limit)


def test_histogram_bins_as_numpy_takes_them(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("h", np.array([0.0, 1.0, 1.0, 2.0, 3.0]), 0, bins=3)
    hv = read(tmp_path).Histograms("h")[0].histogram_value
    assert list(hv.bucket) == [1, 2, 2] and list(hv.bucket_limit) == [1.0, 2.0, 3.0]


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("loss", {"eager": step, "graph": 2 * step}, step)
    for key, k in (("eager", 1), ("graph", 2)):
        acc = read(tmp_path / f"loss_{key}")
        assert [e.value for e in acc.Scalars("loss")] == [k * s for s in range(3)]


def test_add_graph_of_a_compiled_model_is_displayable(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    fast = compiler.compile(model)
    fast(eager.randn(5, 4))
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(fast)
    names = displayable(read(tmp_path).Graph())
    assert {"x", "0.weight", "2.bias"} <= names and "Relu" in names   # TF's node name


def test_add_graph_traces_a_plain_module_on_its_input(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3))
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, eager.randn(2, 4))
    g = read(tmp_path).Graph()
    displayable(g)
    shapes = {n.name: [d.size for d in n.attr["_output_shapes"].list.shape[0].dim]
              for n in g.node}
    assert shapes["x"] == [2, 4] and shapes["0.weight"] == [3, 4]


def test_clear_errors(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match="add_graph: the eager engine records no graph"):
            writer.add_graph(nn.Linear(2, 2))
        with pytest.raises(ValueError, match="expected a scalar, got shape \\(3,\\)"):
            writer.add_scalar("x", eager.randn(3))
        with pytest.raises(ValueError, match="NaN"):
            writer.add_histogram("h", np.array([1.0, np.nan]))


def test_default_log_dir_is_runs_date_host(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    writer.close()
    assert writer.get_logdir().startswith("runs/") and writer.get_logdir().endswith("_lr0.1")
    assert any((tmp_path / writer.get_logdir()).glob("events.out.tfevents.*"))


@pytest.mark.parametrize("module", ["dualgrad.eager.utils.tensorboard", "dualgrad.ops.summary"])
def test_docstring_examples_run(module):
    import doctest
    import importlib
    assert doctest.testmod(importlib.import_module(module)).failed == 0
