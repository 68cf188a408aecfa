"""compiler.export: eager code to an ExportedProgram, saved and loaded without the model."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dualgrad import compiler, eager, graph
from dualgrad.comparisons import exports
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F
from dualgrad.graph.errors import GraphFileError


def _eager(fn, *arrays):
    with eager.no_grad():
        return fn(*[eager.from_numpy(a) for a in arrays]).numpy()


@pytest.mark.parametrize("name", exports.MODELS)
def test_models_export_with_a_dynamic_batch(name):
    fn, example = exports.eager_program(name)
    ep = compiler.export(fn, example)
    assert all(p.shape[0] is None for p in ep.inputs)
    ins = exports.test_inputs(name, 9)                  # another batch size than 4
    np.testing.assert_allclose(ep(*ins), _eager(fn, *ins), rtol=1e-5, atol=1e-5)


def test_masked_rnn_matches_the_eager_model_over_its_lengths():
    fn, _ = exports.eager_program("rnn")
    x, lengths, mask = (a[:12] for a in exports._task("rnn").test_inputs())
    ep = compiler.export(fn, (x[:3], mask[:3]))
    model = fn.__closure__[0].cell_contents
    with eager.no_grad():
        ref = model(eager.from_numpy(x), lengths).numpy()
    np.testing.assert_allclose(ep(x, mask), ref, rtol=1e-5, atol=1e-5)


def test_fixed_batch_refuses_another_batch():
    fn, example = exports.eager_program("mlp")
    ep = compiler.export(fn, example, dynamic_batch=False)
    assert ep.inputs[0].shape == (4, 64)
    ep(*example)
    with pytest.raises(Exception, match=r"\(4, 64\)"):
        ep(exports.test_inputs("mlp", 5)[0])


def test_eager_tensors_in_eager_tensors_out_and_structure_kept():
    lin = nn.Linear(3, 2)

    def two(x):
        y = lin(x)
        return {"y": y, "both": (y, F.relu(y))}
    ep = compiler.export(two, (np.ones((2, 3), np.float32),))
    out = ep(eager.ones(5, 3))
    assert isinstance(out["y"], eager.Tensor) and out["y"].shape == (5, 2)
    np.testing.assert_array_equal(out["both"][1].numpy(), np.maximum(out["y"].numpy(), 0))
    assert isinstance(ep(np.ones((1, 3), np.float32))["y"], np.ndarray)


def test_export_is_inference_and_restores_training_mode():
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.BatchNorm1d(8))
    model.train()
    x = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    ep = compiler.export(model, (x,))
    assert model.training and all(m.training for m in model.modules())
    model.eval()
    np.testing.assert_allclose(ep(x), _eager(model, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ep(x), ep(x))          # no dropout


def test_parameters_are_frozen_at_export():
    lin = nn.Linear(2, 2)
    ep = compiler.export(lin, (np.ones((1, 2), np.float32),))
    before = ep(np.ones((1, 2), np.float32))
    lin.weight.data[...] = 0.0
    np.testing.assert_array_equal(ep(np.ones((1, 2), np.float32)), before)


def test_graph_break_is_an_error_naming_the_line():
    def f(x):
        if x.sum() > 0:                                   # the line export must name
            return x
        return -x
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(compiler.ExportError, match=rf"test_export.py:{line}.*control flow"):
        compiler.export(f, (np.ones((2, 2), np.float32),))


def test_value_computed_from_the_batch_size_is_an_error_naming_the_line():
    def f(x):
        return x / x.shape[0]                             # batch-dependent Python number
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(compiler.ExportError, match=rf"test_export.py:{line}.*batch size"):
        compiler.export(f, (np.ones((2, 3), np.float32),))
    ep = compiler.export(f, (np.ones((2, 3), np.float32),), dynamic_batch=False)
    np.testing.assert_allclose(ep(np.ones((2, 3), np.float32)), 0.5)


def test_batch_sized_constant_rows_follow_the_batch():
    def f(x):                                             # nn.LSTMCell's zero state
        return x + eager.from_numpy(np.full((x.shape[0], 3), 2.0, np.float32))
    ep = compiler.export(f, (np.ones((2, 3), np.float32),))
    np.testing.assert_array_equal(ep(np.zeros((7, 3), np.float32)), np.full((7, 3), 2.0))


def test_reshape_by_batch_becomes_dynamic():
    def f(x):
        n, t, d = x.shape
        return x.reshape(n * t, d).sum(1).reshape(n, t)
    ep = compiler.export(f, (np.ones((3, 4, 2), np.float32),))
    x = np.arange(5 * 4 * 2, dtype=np.float32).reshape(5, 4, 2)
    np.testing.assert_array_equal(ep(x), x.sum(2))


@pytest.mark.parametrize("name", ["transformer", "cnn"])
def test_saved_program_runs_in_a_process_without_the_model_code(tmp_path, name):
    fn, example = exports.eager_program(name)
    ep = compiler.export(fn, example)
    ep.save(tmp_path / "prog")
    assert sorted(os.listdir(tmp_path)) == ["prog.json", "prog.safetensors"]
    ins = exports.test_inputs(name, 7)
    for i, a in enumerate(ins):
        np.save(tmp_path / f"in{i}.npy", a)
    script = (
        "import sys, numpy as np\n"
        "from dualgrad import compiler\n"
        f"ep = compiler.load_exported({str(tmp_path / 'prog')!r})\n"
        f"ins = [np.load({str(tmp_path)!r} + f'/in{{i}}.npy') for i in range({len(ins)})]\n"
        f"np.save({str(tmp_path / 'out.npy')!r}, ep(*ins))\n"
        "assert not any(m.startswith('dualgrad.comparisons') for m in sys.modules)\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), _eager(fn, *ins),
                               rtol=1e-5, atol=1e-5)


def test_load_exported_rejects_a_plain_graph_file(tmp_path):
    g = graph.Graph()
    with g.as_default():
        graph.placeholder(graph.float32, (None,), name="x")
    graph.save(tmp_path / "g", graph=g)
    with pytest.raises(GraphFileError, match="not an exported program"):
        compiler.load_exported(tmp_path / "g")
    ep = compiler.export(lambda x: x * 2.0, (np.ones(2, np.float32),))
    ep.save(tmp_path / "p")
    doc = json.loads((tmp_path / "p.json").read_text())
    doc["exported"]["tree"] = {"out": 5}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(GraphFileError, match="out of range"):
        compiler.load_exported(tmp_path / "p")
