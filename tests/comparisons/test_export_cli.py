"""`dualgrad export` and `dualgrad run-onnx`."""
import numpy as np
import pytest

from dualgrad import compiler
from dualgrad.comparisons import exports
from dualgrad.comparisons.cli import main

pytest.importorskip("onnxruntime")


def test_export_onnx_then_run_onnx(tmp_path, capsys):
    out = tmp_path / "mlp.onnx"
    assert main(["export", "mlp", "--format", "onnx", "--out", str(out)]) == 0
    (x,) = exports.test_inputs("mlp", 5)
    np.save(tmp_path / "x.npy", x)
    assert main(["run-onnx", str(out), "--input", f"x={tmp_path / 'x.npy'}",
                 "--save", str(tmp_path / "y.npz")]) == 0
    assert "output_0: shape (5, 10) float32" in capsys.readouterr().out
    fn, example = exports.eager_program("mlp")
    np.testing.assert_allclose(np.load(tmp_path / "y.npz")["output_0"],
                               compiler.export(fn, example)(x), rtol=1e-5, atol=1e-6)


def test_export_dualgrad_format_from_the_tf1_graph(tmp_path):
    assert main(["export", "rnn", "--from", "graph", "--out", str(tmp_path / "rnn")]) == 0
    ep = compiler.load_exported(tmp_path / "rnn")
    x, mask = exports.test_inputs("rnn", 3)
    tr, phs, logits = exports.graph_program("rnn")
    np.testing.assert_allclose(ep(x, mask), tr.sess.run(logits, {phs[0]: x, phs[1]: mask}),
                               rtol=1e-5, atol=1e-6)


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["export", "rnn_fixed", "--from", "graph", "--out", str(tmp_path / "r")]) == 2
    assert "has no TF1 version" in capsys.readouterr().err
    out = tmp_path / "t.onnx"
    assert main(["export", "transformer", "--format", "onnx", "--out", str(out)]) == 0
    np.save(tmp_path / "x.npy", exports.test_inputs("transformer", 2)[0])
    assert main(["run-onnx", str(out), "--input", f"x={tmp_path / 'x.npy'}"]) == 2
    err = capsys.readouterr().err
    assert "missing ['mask']" in err and err.count("\n") == 1
    assert main(["run-onnx", str(out), "--input", "x"]) == 2
