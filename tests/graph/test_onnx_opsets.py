"""graph.onnx.load reads each operator with the meaning of the opset the model declares, and
shape-like inputs fed at run time: each model checked against onnxruntime."""
import numpy as np
import pytest

from dualgrad import graph

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(0)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def one_node(op, inputs, opset, n_out=1, inits=(), **attrs):
    """A model of one node; inputs are (name, onnx type, shape) or initializers (name, array)."""
    outs = [f"y{k}" for k in range(n_out)]
    g = helper.make_graph(
        [helper.make_node(op, [i[0] for i in inputs] + [n for n, _ in inits], outs, **attrs)],
        "t", [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(o, F, None) for o in outs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=min(8, helper.find_min_ir_version_for(
                                 [helper.make_opsetid("", opset)]) + 1))


def agree(m, feeds, og=None):
    og = og or graph.onnx.load(m)
    got = og.run(feeds)
    want = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert np.shape(g) == w.shape and np.asarray(g).dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return got


X3 = ("x", F, [2, 3, 4])


def x3():
    return {"x": RNG.normal(size=(2, 3, 4)).astype(np.float32)}


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_family_flattens_before_13(op, opset):
    m = one_node(op, [X3], opset, axis=1)
    got = agree(m, x3())
    # NOTE: the two meanings differ on this input: at 11 the softmax runs over 3 * 4 values
    if op == "Softmax":
        assert np.isclose(got[0].sum(), 2.0 if opset == 11 else 8.0, atol=1e-4)


@pytest.mark.parametrize("op, opset, attrs, inits", [
    ("Squeeze", 11, {"axes": [1]}, []), ("Squeeze", 13, {}, [("axes", np.array([1]))]),
    ("Unsqueeze", 11, {"axes": [0, 3]}, []),
    ("Unsqueeze", 13, {}, [("axes", np.array([0, 3]))]),
    ("ReduceSum", 11, {"axes": [1], "keepdims": 0}, []),
    ("ReduceSum", 13, {"keepdims": 0}, [("axes", np.array([1]))]),
    ("ReduceMean", 13, {"axes": [0, 2]}, []),
    ("ReduceMean", 18, {}, [("axes", np.array([0, 2]))]),
    ("ReduceMax", 13, {"axes": [-1], "keepdims": 0}, []),
    ("ReduceMax", 18, {"keepdims": 0}, [("axes", np.array([-1]))]),
    ("ReduceL2", 18, {"noop_with_empty_axes": 1}, []),
    ("Clip", 6, {"min": -0.5, "max": 0.3}, []),
    ("Clip", 11, {}, [("lo", np.float32(-0.5)), ("hi", np.float32(0.3))]),
    ("Pad", 10, {"pads": [0, 1, 0, 0, 2, 1], "value": 1.5}, []),
    ("Pad", 11, {"mode": "reflect"}, [("pads", np.array([0, 1, 0, 0, 1, 2]))]),
    ("Pad", 18, {"mode": "edge"}, [("pads", np.array([1, 2])), ("", None),
                                   ("axes", np.array([2]))]),
    ("Slice", 9, {"starts": [1, 0], "ends": [3, -1], "axes": [1, 2]}, []),
    ("Slice", 10, {}, [("s", np.array([3, 0])), ("e", np.array([0, 4])),
                       ("a", np.array([1, 2])), ("st", np.array([-1, 2]))]),
    ("Dropout", 7, {"ratio": 0.3}, []),
    ("Dropout", 12, {}, [("ratio", np.float32(0.3))]),
    ("Flatten", 11, {"axis": -1}, []),
    ("CumSum", 14, {"exclusive": 1, "reverse": 1}, [("axis", np.array(1))]),
    ("ArgMax", 13, {"axis": 1, "select_last_index": 1}, []),
])
def test_operator_read_with_its_versions_meaning(op, opset, attrs, inits):
    inits = [(n, a) for n, a in inits if n]
    skip = [("", None)] if op == "Pad" and opset == 18 else []
    x = ("x", F, [2, 1, 4]) if op == "Squeeze" else X3
    m = one_node(op, [x], opset, inits=inits, **attrs)
    if skip:    # NOTE: Pad-18's third input (the constant value) left out by an empty name
        m.graph.node[0].input.insert(2, "")
    if op == "ArgMax":
        m.graph.output[0].type.tensor_type.elem_type = I64
    agree(m, {"x": np.round(RNG.normal(size=x[2]), 1).astype(np.float32)})


@pytest.mark.parametrize("opset, attrs, inits", [
    (11, {"axis": 2, "split": [1, 3]}, []),
    (13, {"axis": 2}, [("split", np.array([1, 3]))]),
    (18, {"axis": 2, "num_outputs": 2}, []),
])
def test_split_by_version(opset, attrs, inits):
    agree(one_node("Split", [X3], opset, n_out=2, inits=inits, **attrs), x3())


@pytest.mark.parametrize("opset", [9, 11])
def test_topk_k_attribute_then_input(opset):
    if opset == 9:
        m = one_node("TopK", [X3], opset, n_out=2, k=2, axis=1)
    else:
        m = one_node("TopK", [X3], opset, n_out=2, inits=[("k", np.array([2]))], axis=1,
                     largest=0)
    m.graph.output[1].type.tensor_type.elem_type = I64
    agree(m, x3())


def test_an_unsupported_version_is_refused_by_name():
    g = helper.make_graph([helper.make_node("Reshape", ["x"], ["y"], shape=[4])], "t",
                          [helper.make_tensor_value_info("x", F, [2, 2])],
                          [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 4)], ir_version=3)
    with pytest.raises(graph.onnx.OnnxError, match=r"Reshape \(opset 4, node .*version 1 of "
                                                   r"Reshape is not supported; dualgrad reads "
                                                   r"its versions \[5, 14\]"):
        graph.onnx.load(m)


# -- shape-like values fed at run time ----------------------------------------------------------
VALUE_CASES = [
    ("Reshape", [X3, ("shape", I64, [2])], [{"shape": np.array([4, -1])},
                                             {"shape": np.array([0, 12])}], {}),
    ("Slice", [X3, ("s", I64, [1]), ("e", I64, [1])],
     [{"s": np.array([1]), "e": np.array([3])}, {"s": np.array([0]), "e": np.array([-1])}], {}),
    ("Expand", [("x", F, [3, 1]), ("shape", I64, [2])],
     [{"shape": np.array([3, 4])}, {"shape": np.array([1, 5])}], {}),
    ("Tile", [X3, ("reps", I64, [3])], [{"reps": np.array([1, 2, 1])},
                                        {"reps": np.array([2, 1, 3])}], {}),
    ("ConstantOfShape", [("shape", I64, [2])], [{"shape": np.array([2, 3])},
                                                {"shape": np.array([4, 1])}], {}),
    ("Split", [X3, ("split", I64, [2])], [{"split": np.array([1, 3])},
                                          {"split": np.array([2, 2])}], {"axis": 2}),
    ("TopK", [X3, ("k", I64, [1])], [{"k": np.array([1])}, {"k": np.array([3])}], {"axis": 2}),
    ("Pad", [X3, ("pads", I64, [6])], [{"pads": np.array([0, 1, 0, 0, 0, 2])},
                                       {"pads": np.array([1, 0, 0, 0, 0, 0])}], {}),
    ("Range", [("a", F, []), ("b", F, []), ("c", F, [])],
     [{"a": np.array(0, np.float32), "b": np.array(5, np.float32),
       "c": np.array(1.5, np.float32)},
      {"a": np.array(3, np.float32), "b": np.array(-1, np.float32),
       "c": np.array(-1, np.float32)}], {}),
]


@pytest.mark.parametrize("op, inputs, values, attrs", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_shape_like_inputs_fed_at_run_time(op, inputs, values, attrs):
    n_out = 2 if op in ("Split", "TopK") else 1
    m = one_node(op, inputs, 18, n_out=n_out, **attrs)
    if op == "TopK":
        m.graph.output[1].type.tensor_type.elem_type = I64
    og = graph.onnx.load(m)
    assert og.value_inputs and set(og.value_inputs) <= {i[0] for i in inputs}
    for v in values:          # the same loaded model, read again for each value fed
        feeds = dict(v)
        if inputs[0][0] == "x":
            feeds["x"] = RNG.normal(size=inputs[0][2]).astype(np.float32)
        agree(m, feeds, og)


@pytest.mark.parametrize("opset, attrs, scales, sizes", [
    (13, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"}, [1, 1, 2, 2], None),
    (13, {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}, [1, 1, 1.5, 2],
     None),
    (18, {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None,
     [1, 2, 7, 3]),
    (18, {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"},
     [1, 1, 0.5, 1.5], None),
])
def test_resize_as_exporters_write_it(opset, attrs, scales, sizes):
    inits = [("roi", np.zeros(0, np.float32)),
             ("scales", np.asarray(scales or [], np.float32))]
    if sizes is not None:
        inits.append(("sizes", np.asarray(sizes, np.int64)))
    m = one_node("Resize", [("x", F, [1, 2, 4, 6])], opset, inits=inits, **attrs)
    agree(m, {"x": RNG.normal(size=(1, 2, 4, 6)).astype(np.float32)})
