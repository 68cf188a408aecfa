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


def test_run_onnx_saves_outputs_named_like_savez_arguments(tmp_path):
    from onnx import TensorProto, helper
    names = ["file", "allow_pickle", "args", "kwds", "a/b"]
    nodes = [helper.make_node("Mul", ["x", "x"], ["file"]),
             helper.make_node("Neg", ["x"], ["allow_pickle"]),
             helper.make_node("Abs", ["x"], ["args"]),
             helper.make_node("Identity", ["x"], ["kwds"]),
             helper.make_node("Exp", ["x"], ["a/b"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ["x"] + names]
    m = helper.make_model(helper.make_graph(nodes, "t", vi[:1], vi[1:]),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run-onnx", str(tmp_path / "m.onnx"), "--input", f"x={tmp_path / 'x.npy'}",
                 "--save", str(tmp_path / "out.npz")]) == 0
    saved = np.load(tmp_path / "out.npz", allow_pickle=False)
    assert sorted(saved.files) == sorted(names)
    want = {"file": x * x, "allow_pickle": -x, "args": abs(x), "kwds": x, "a/b": np.exp(x)}
    for k, v in want.items():
        np.testing.assert_allclose(saved[k], v, rtol=1e-6)


@pytest.mark.parametrize("model", ["cnn", "rnn", "transformer"])
def test_export_at_opset_13_passes_the_checker(model, tmp_path):
    import onnx
    out = tmp_path / "m.onnx"
    assert main(["export", model, "--format", "onnx", "--opset", "13", "--out", str(out)]) == 0
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    assert [o.version for o in m.opset_import if o.domain == ""] == [13]
