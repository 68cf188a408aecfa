"""graph.onnx.export and ExportedProgram.to_onnx, checked in onnxruntime."""
import numpy as np
import pytest

from dualgrad import compiler, graph, ops
from dualgrad.comparisons import exports
from tests.opinfo import cases, graph_args

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

# gradient-only primitives and the random one: no ONNX counterpart, an error naming them
NO_ONNX = {"fold", "slice_grad", "take_grad", "gather_grad", "concat_part", "sum_to_like",
           "rand_like", "sigmoid_grad", "tanh_grad", "softmax_cross_entropy_grad", "max_pool_grad",
           "atan2", "erfinv", "floordiv", "floormod", "log1p", "prod",
           "expm1", "lstm_cell_c", "lstm_cell_h", "lstm_cell_c_grad", "lstm_cell_h_grad",
           "lstm_seq", "lstm_seq_grad",   # eager's nn.LSTM only: traces and exports see the steps
           "layer_norm_last", "layer_norm_last_grad",
           "matmul_nt", "matmul_sum_nt", "erfc", "lgamma", "digamma", "trigamma", "polygamma",
           "diagonal",
           *ops.special_math.__all__,   # NOTE: scipy.special's functions: ONNX has none
           *ops.linalg_np.__all__,      # LAPACK's factorisations: none in standard ONNX
           *ops.draws.__all__,          # seeded gamma-family draws and their gradients: none
           "as_strided", "as_strided_within", "sliding_windows",
           # complex numbers (ops/complex_parts.py, ops/fft.py): the exporter writes no
           # complex tensors, so it refuses them by name
           "fft", "angle", "complex", "conj", "imag", "real", "view_as_complex", "view_as_real"}


def run_onnx(path, inputs):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: a for i, a in zip(s.get_inputs(), inputs)})


@pytest.mark.parametrize("case", cases("ok"), ids=lambda c: c.id)
def test_every_op_sample_writes_and_runs_in_onnxruntime(case, tmp_path):
    check_op_sample(case, tmp_path, 17)


def check_op_sample(case, tmp_path, opset):
    """The sample's graph written at `opset` (checked) runs in onnxruntime as in dualgrad,
    or the writer refuses an op without an ONNX counterpart by name."""
    arrays = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64
              else a for a in case.args()]
    g = graph.Graph()
    with g.as_default():
        args, feeds = graph_args(arrays)
        out = case.fn(*args, **case.sample.attrs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if any(not isinstance(o, graph.Tensor) for o in outs):
        pytest.skip("folded to a Python value")
    phs = list(feeds)
    try:
        graph.onnx.export(tmp_path / "op.onnx", inputs=phs, outputs=outs, opset=opset)
    except graph.onnx.OnnxError as e:
        assert any(f"{name} (node" in str(e) for name in NO_ONNX), e
        return
    with graph.Session(g, optimize=False) as s:
        want = s.run(outs, feeds)
    got = run_onnx(tmp_path / "op.onnx", [feeds[p] for p in phs])
    for w, o in zip(want, got):
        assert o.dtype == np.asarray(w).dtype and o.shape == np.shape(w)
        # NOTE: float32 sums: an error in proportion to the largest value, not to each one
        # (a convolution's element that cancels to 0.06 among values of 10 is 3e-6 apart)
        scale = float(np.max(np.abs(w), initial=1.0)) if np.asarray(w).dtype.kind == "f" else 1
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("name", exports.MODELS)
def test_eager_models_to_onnx_at_another_batch_size(name, tmp_path):
    fn, example = exports.eager_program(name)
    ep = compiler.export(fn, example)
    ep.to_onnx(tmp_path / "m.onnx")
    onnx.checker.check_model(str(tmp_path / "m.onnx"), full_check=True)
    ins = exports.test_inputs(name, 9)
    (got,) = run_onnx(tmp_path / "m.onnx", ins)
    np.testing.assert_allclose(got, ep(*ins), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", exports.GRAPH_MODELS)
def test_tf1_models_to_onnx_and_to_the_dualgrad_format(name, tmp_path):
    tr, phs, logits = exports.graph_program(name)
    ins = exports.graph_test_inputs(name, 9)
    want = tr.sess.run(logits, dict(zip(phs, ins)))
    graph.onnx.export(tmp_path / "m.onnx", inputs=phs, outputs=[logits], session=tr.sess)
    (got,) = run_onnx(tmp_path / "m.onnx", ins)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    compiler.ExportedProgram.from_graph(phs, logits, tr.sess).save(tmp_path / "prog")
    ep = compiler.load_exported(tmp_path / "prog")
    assert not any(n.type == "variable" for n in ep.graph.get_operations())
    np.testing.assert_allclose(ep(*ins), want, rtol=1e-5, atol=1e-5)


def test_variables_are_frozen_with_the_session_values(tmp_path):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 2), name="x")
        w = graph.Variable(np.ones((2, 3), np.float32), name="w")
        y = graph.matmul(x, w, name="y")
        step = graph.assign(w, w * 3.0)
        sess = graph.Session(g)
        sess.run(graph.global_variables_initializer())
        sess.run(step)
    graph.onnx.export(tmp_path / "m.onnx", inputs=[x], outputs=[y], session=sess)
    m = onnx.load(str(tmp_path / "m.onnx"))
    assert [i.name for i in m.graph.input] == ["x"] and [o.name for o in m.graph.output] == ["y"]
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    (got,) = run_onnx(tmp_path / "m.onnx", [np.ones((4, 2), np.float32)])
    np.testing.assert_array_equal(got, np.full((4, 3), 6.0))


def test_missing_session_or_input_is_an_error(tmp_path):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 2), name="x")
        b = graph.placeholder(graph.float32, (2,), name="b")
        w = graph.Variable(np.ones((2,), np.float32), name="w")
    with pytest.raises(ValueError, match="variable 'w' needs a session"):
        graph.onnx.export(tmp_path / "m.onnx", inputs=[x], outputs=[x * w])
    with pytest.raises(ValueError, match=r"placeholder 'b' \(built at .*test_onnx_export.py"):
        graph.onnx.export(tmp_path / "m.onnx", inputs=[x], outputs=[x + b])


def test_op_without_onnx_counterpart_names_it_and_the_line(tmp_path):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 2), name="x")
        y = graph.print(x, "x is")                     # the line the error names
    line = test_op_without_onnx_counterpart_names_it_and_the_line.__code__.co_firstlineno + 4
    with pytest.raises(graph.onnx.OnnxError, match=rf"print .*test_onnx_export.py:{line}"):
        graph.onnx.export(tmp_path / "m.onnx", inputs=[x], outputs=[y])
    assert not (tmp_path / "m.onnx").exists()


def test_eager_export_of_an_op_without_onnx_counterpart_names_the_users_line(tmp_path):
    def f(cols, img):
        return ops.fold(cols, img, kernel=(2, 2), stride=2)   # the user's line
    line = f.__code__.co_firstlineno + 1
    ep = compiler.export(f, (np.ones((1, 4, 4), np.float32), np.ones((1, 1, 4, 4), np.float32)))
    with pytest.raises(graph.onnx.OnnxError, match=rf"fold .*test_onnx_export.py:{line}"):
        ep.to_onnx(tmp_path / "f.onnx")


def test_unsupported_opset_is_an_error(tmp_path):
    ep = compiler.export(lambda x: x * 2.0, (np.ones((2, 2), np.float32),))
    for opset in (12, graph.onnx.to_onnx.NEWEST_OPSET + 1):
        with pytest.raises(graph.onnx.OnnxError, match=f"opset {opset}"):
            ep.to_onnx(tmp_path / "m.onnx", opset=opset)


def test_the_core_does_not_import_onnx():
    import subprocess
    import sys
    code = ("import sys\nfrom dualgrad import graph, compiler, eager\n"
            "import dualgrad.comparisons.exports\n"
            "assert 'onnx' not in sys.modules and 'onnxruntime' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
