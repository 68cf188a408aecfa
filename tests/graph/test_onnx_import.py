"""graph.onnx.load: ONNX files written by other exporters run as dualgrad graphs."""
import warnings

import numpy as np
import pytest

from dualgrad import compiler, graph
from dualgrad.comparisons import exports

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(0)


def ort_run(path_or_model, feeds):
    src = path_or_model if isinstance(path_or_model, str) else \
        path_or_model.SerializeToString()
    s = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def check(path_or_model, feeds, rtol=1e-5, atol=1e-5):
    og = graph.onnx.load(path_or_model)
    got = og.run(feeds)
    want = ort_run(str(path_or_model) if not hasattr(path_or_model, "graph") else
                   path_or_model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return og


def randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


# -- files from PyTorch's TorchScript-based exporter -------------------------------------------
torch = None
try:
    import torch
except ImportError:
    pass
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def torch_models():
    tnn = torch.nn

    class Attention(tnn.Module):
        def __init__(self, d=16, heads=4):
            super().__init__()
            self.heads, self.ln = heads, tnn.LayerNorm(d)
            self.qkv, self.out = tnn.Linear(d, 3 * d), tnn.Linear(d, d)

        def forward(self, x):
            n, t, d = x.shape
            q, k, v = self.qkv(self.ln(x)).reshape(n, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
            return x + self.out((att @ v).transpose(1, 2).reshape(n, t, d))

    class CNN(tnn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = tnn.Conv2d(1, 4, 3, padding=1), tnn.Conv2d(4, 8, 3, 2, 1)
            self.fc = tnn.Linear(32, 10)

        def forward(self, x):
            h = tnn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
            h = tnn.functional.avg_pool2d(torch.relu(self.c2(h)), 1)
            return self.fc(h.flatten(1))

    class Shapes(tnn.Module):
        def forward(self, x):
            a = torch.cat([x[:, 1:3], x[:, :2] * 2], dim=1)
            b = a[:, torch.tensor([0, 2])].transpose(0, 1).reshape(-1, 2)
            return b, tnn.functional.gelu(a[:, ::2], approximate="tanh")

    return {
        "mlp": (tnn.Sequential(tnn.Linear(6, 8), tnn.ReLU(), tnn.Linear(8, 3)), (6,)),
        "gelu_layernorm_softmax": (tnn.Sequential(tnn.Linear(6, 8), tnn.GELU(),
                                                  tnn.LayerNorm(8), tnn.Softmax(-1)), (6,)),
        "cnn": (CNN(), (1, 8, 8)),
        "attention": (Attention(), (5, 16)),
        "shapes": (Shapes(), (6,)),
    }


@needs_torch
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
@pytest.mark.parametrize("name", ["mlp", "gelu_layernorm_softmax", "cnn", "attention", "shapes"])
def test_torchscript_exported_models(name, dynamic, tmp_path):
    model, shape = torch_models()[name]
    model.eval()
    path = str(tmp_path / f"{name}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, *shape),), path, dynamo=False,
                          opset_version=17, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}} if dynamic else None)
    x = randn(7 if dynamic else 2, *shape)
    og = check(path, {"x": x})
    with torch.inference_mode():
        out = model(torch.from_numpy(x))
    first = out[0] if isinstance(out, tuple) else out
    np.testing.assert_allclose(og.run({"x": x})[0], first.numpy(), rtol=1e-4, atol=1e-5)


# -- files built with onnx.helper -------------------------------------------------------------
def model_of(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "t", inputs, outputs,
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(m)
    return m


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def test_gemm_with_transposes_alpha_and_beta():
    m = model_of([helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1,
                                   alpha=0.5, beta=2.0)],
                 [vi("a", [3, 4])], [vi("y", [4, 5])],
                 [("b", randn(5, 3)), ("c", randn(5))])
    check(m, {"a": randn(3, 4)})


@pytest.mark.parametrize("form", ["erf", "tanh"])
def test_gelu_as_exporters_decompose_it(form):
    c = [("half", np.float32(0.5)), ("one", np.float32(1.0)), ("r2", np.float32(2 ** 0.5)),
         ("k", np.float32(0.044715)), ("three", np.float32(3.0)),
         ("s", np.float32((2 / np.pi) ** 0.5))]
    if form == "erf":
        nodes = [helper.make_node("Div", ["x", "r2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                 helper.make_node("Add", ["e", "one"], ["p"]),
                 helper.make_node("Mul", ["x", "p"], ["q"]),
                 helper.make_node("Mul", ["q", "half"], ["y"])]
    else:
        nodes = [helper.make_node("Pow", ["x", "three"], ["x3"]),
                 helper.make_node("Mul", ["x3", "k"], ["kx3"]),
                 helper.make_node("Add", ["x", "kx3"], ["in"]),
                 helper.make_node("Mul", ["in", "s"], ["ins"]),
                 helper.make_node("Tanh", ["ins"], ["t"]),
                 helper.make_node("Add", ["t", "one"], ["p"]),
                 helper.make_node("Mul", ["x", "p"], ["q"]),
                 helper.make_node("Mul", ["q", "half"], ["y"])]
    m = model_of(nodes, [vi("x", ["n", 8])], [vi("y", ["n", 8])], c)
    check(m, {"x": randn(5, 8)})


def test_layernorm_softmax_reshape_transpose_concat_slice_gather():
    nodes = [
        helper.make_node("LayerNormalization", ["x", "w", "b"], ["ln"], axis=-1, epsilon=1e-3),
        helper.make_node("Softmax", ["ln"], ["sm"], axis=1),
        helper.make_node("Reshape", ["sm", "shape"], ["r"]),           # (n, 2, 4), 0 = copy
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),    # (n, 4, 2)
        helper.make_node("Slice", ["t", "st", "en", "ax", "sp"], ["s"]),  # (n, 2, 2)
        helper.make_node("Gather", ["t", "idx"], ["gat"], axis=1),      # (n, 2, 2)
        helper.make_node("Concat", ["s", "gat"], ["y"], axis=-1),
    ]
    m = model_of(nodes, [vi("x", ["n", 8])], [vi("y", ["n", 2, 4])],
                 [("w", randn(8)), ("b", randn(8)), ("shape", np.array([0, 2, 4], np.int64)),
                  ("st", np.array([3, 0], np.int64)), ("en", np.array([-9, 2], np.int64)),
                  ("ax", np.array([1, 2], np.int64)), ("sp", np.array([-2, 1], np.int64)),
                  ("idx", np.array([0, -1], np.int64))])
    check(m, {"x": randn(6, 8)})


def test_pools_batchnorm_and_asymmetric_conv_pads():
    nodes = [helper.make_node("Conv", ["x", "w", "cb"], ["c"], kernel_shape=[3, 3],
                              pads=[1, 0, 1, 2], strides=[1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bn"],
                              epsilon=1e-3),
             helper.make_node("MaxPool", ["bn"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["mp"], ["ap"], kernel_shape=[2, 2]),
             helper.make_node("GlobalAveragePool", ["mp"], ["gp"]),
             helper.make_node("Flatten", ["ap"], ["y"], axis=1)]
    m = model_of(nodes, [vi("x", ["n", 2, 8, 8])], [vi("y", ["n", 12]), vi("gp", ["n", 3, 1, 1])],
                 [("w", randn(3, 2, 3, 3)), ("cb", randn(3)), ("g", randn(3)),
                  ("be", randn(3)), ("mu", randn(3)), ("var", np.abs(randn(3)) + 0.5)])
    check(m, {"x": randn(4, 2, 8, 8)})


def test_attention_block_built_by_hand():
    d, h = 8, 2
    nodes = [
        helper.make_node("MatMul", ["x", "wqkv"], ["qkv"]),                 # (n, t, 3d)
        helper.make_node("Split", ["qkv", "sizes"], ["q", "k", "v"], axis=2),
        *[helper.make_node("Reshape", [a, "heads"], [a + "h"]) for a in "qkv"],   # (n,t,h,dh)
        helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["sc"]),
        helper.make_node("Mul", ["sc", "scale"], ["scs"]),
        helper.make_node("Softmax", ["scs"], ["att"], axis=-1),
        helper.make_node("MatMul", ["att", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "back"], ["y"]),
    ]
    m = model_of(nodes, [vi("x", ["n", 5, d])], [vi("y", ["n", 5, d])],
                 [("wqkv", randn(d, 3 * d)), ("sizes", np.array([d] * 3, np.int64)),
                  ("heads", np.array([0, 0, h, d // h], np.int64)),
                  ("scale", np.float32((d // h) ** -0.5)),
                  ("back", np.array([0, 0, d], np.int64))])
    check(m, {"x": randn(3, 5, d)})


def test_imported_graph_goes_through_the_optimiser():
    m = model_of([helper.make_node("Mul", ["x", "two"], ["a"]), helper.make_node("Tanh", ["a"], ["b"]),
                  helper.make_node("Add", ["b", "one"], ["y"])],
                 [vi("x", ["n", 4])], [vi("y", ["n", 4])],
                 [("two", np.float32(2.0)), ("one", np.float32(1.0))])
    og = check(m, {"x": randn(3, 4)})
    fuse = {p.name: p for p in og.session.last_report.passes}["fuse"]
    assert fuse.details["groups"] == 1 and fuse.details["sizes"] == [3]


def test_unsupported_op_names_it():
    m = model_of([helper.make_node("Det", ["x"], ["y"], name="my_det")],
                 [vi("x", [3, 3])], [vi("y", [])])
    with pytest.raises(graph.onnx.OnnxError, match=r"Det \(opset 17, node 'my_det'.*not supported"):
        graph.onnx.load(m)


def test_unsupported_attribute_names_it():
    m = model_of([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1, 1])],
                 [vi("x", [1, 2, 3, 3, 3])], [vi("y", [1, 2, 3, 3, 3])],
                 [("w", randn(2, 2, 1, 1, 1))])
    with pytest.raises(graph.onnx.OnnxError, match=r"Conv .*3-d windows are not supported"):
        graph.onnx.load(m)


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_our_own_files_load_back(name, tmp_path):
    fn, example = exports.eager_program(name)
    ep = compiler.export(fn, example)
    ep.to_onnx(tmp_path / "m.onnx")
    og = graph.onnx.load(tmp_path / "m.onnx")
    ins = exports.test_inputs(name, 6)
    got = og.run(dict(zip(og.inputs, ins)))[0]
    np.testing.assert_allclose(got, ep(*ins), rtol=1e-5, atol=1e-5)
