"""Untrusted ONNX files: small files asking for huge values, and malformed graphs.

A model of a few hundred bytes can ask for a constant of terabytes (ConstantOfShape, Expand,
Range, Tile with huge dims, an initializer whose dims do not match its data): loading it
must neither allocate it nor crash, but raise an OnnxError naming the node, the shape and
the limit (the limit bounds the sum of all values computed while reading). The memory
measured is tracemalloc's peak over the load (NumPy reports its
buffers to it), held under 64 MiB. Malformed graphs get an OnnxError naming the node and
the input or attribute at fault.
"""
import tracemalloc

import numpy as np
import pytest

from dualgrad import graph

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OnnxError = graph.onnx.OnnxError
PEAK = 64 << 20
HUGE = [1 << 20, 1 << 20]          # 4 TiB of float32


def model(nodes, inputs=(), outputs=("y",), inits=(), opset=17, out_type=TensorProto.FLOAT):
    ins = [i if not isinstance(i, tuple) else helper.make_tensor_value_info(*i) for i in inputs]
    outs = [helper.make_tensor_value_info(o, out_type, None) for o in outputs]
    g = helper.make_graph(nodes, "t", ins, outs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def load_small(m, match):
    """load(m) raises OnnxError matching `match`, allocating less than PEAK on the way."""
    assert len(m.SerializeToString()) < 400
    tracemalloc.start()
    try:
        with pytest.raises(OnnxError, match=match):
            graph.onnx.load(m)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK, f"load allocated {peak} bytes"


def test_constant_of_shape_with_huge_dims():
    m = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="big")],
              inits=[ints("s", HUGE)])
    load_small(m, r"ConstantOfShape \(opset 17, node 'big'.*shape \[1048576, 1048576\] "
                  r"float32 .*over the limit of 268435456 bytes")


def test_expand_to_huge_dims():
    m = model([helper.make_node("Expand", ["one", "s"], ["y"], name="wide")],
              inits=[numpy_helper.from_array(np.ones(1, np.float32), "one"), ints("s", HUGE)])
    load_small(m, r"Expand \(opset 17, node 'wide'.*\[1048576, 1048576\].*limit")


def test_range_with_a_huge_limit():
    m = model([helper.make_node("Range", ["a", "b", "c"], ["y"], name="r")],
              inits=[ints("a", 0), ints("b", 1 << 40), ints("c", 1)], out_type=TensorProto.INT64)
    load_small(m, r"Range \(opset 17, node 'r'.*\[1099511627776\] int64.*limit")


def test_tile_with_huge_repeats():
    m = model([helper.make_node("Tile", ["one", "s"], ["y"], name="t")],
              inits=[numpy_helper.from_array(np.ones((1, 1), np.float32), "one"),
                     ints("s", HUGE)])
    load_small(m, r"Tile \(opset 17, node 't'.*limit")


def test_a_chain_of_concats_doubling_a_constant():
    nodes = [helper.make_node("Concat", [f"c{k}", f"c{k}"], [f"c{k + 1}"], name=f"cat{k}",
                              axis=0) for k in range(40)]
    nodes.append(helper.make_node("Identity", ["c40"], ["y"]))
    m = model(nodes, inits=[numpy_helper.from_array(np.ones(1, np.float32), "c0")])
    m.ir_version = 8
    tracemalloc.start()
    try:
        with pytest.raises(OnnxError, match=r"Concat \(opset 17, node 'cat2\d'.*computed "
                                            r"before it.*over the limit of 16777216"):
            graph.onnx.load(m, max_constant_bytes=16 << 20)
        assert tracemalloc.get_traced_memory()[1] < 2 * (16 << 20)
    finally:
        tracemalloc.stop()


def test_initializer_claiming_more_data_than_it_holds():
    t = TensorProto(name="w", dims=HUGE, data_type=TensorProto.FLOAT, raw_data=b"\0" * 16)
    m = model([helper.make_node("Relu", ["w"], ["y"], name="act")], inits=[t])
    load_small(m, r"Relu \(opset 17, node 'act'.*initializer 'w' cannot be read")
    t = TensorProto(name="w", dims=[100], data_type=TensorProto.FLOAT, raw_data=b"\0" * 16)
    m = model([helper.make_node("Relu", ["w"], ["y"], name="act")], inits=[t])
    load_small(m, r"Relu \(opset 17, node 'act'.*initializer 'w' cannot be read")


def test_the_limit_is_a_parameter():
    m = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="c")],
              inits=[ints("s", [64, 64])])
    with pytest.raises(OnnxError, match="over the limit of 1000 bytes"):
        graph.onnx.load(m, max_constant_bytes=1000)
    (y,) = graph.onnx.load(m).run({})
    assert y.shape == (64, 64)


def test_a_huge_shape_fed_at_run_time_is_refused_at_run_time():
    m = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="c")],
              inputs=[("s", TensorProto.INT64, [2])])
    og = graph.onnx.load(m)
    assert og.value_inputs == ("s",)
    assert og.run({"s": np.array([2, 3])})[0].shape == (2, 3)
    tracemalloc.start()
    try:
        with pytest.raises(OnnxError, match=r"ConstantOfShape .*limit"):
            og.run({"s": np.array(HUGE)})
        assert tracemalloc.get_traced_memory()[1] < PEAK
    finally:
        tracemalloc.stop()


def test_run_onnx_on_a_small_huge_model_says_so_in_one_line(tmp_path, capsys):
    from dualgrad.comparisons.cli import main
    m = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="big")],
              inits=[ints("s", HUGE)])
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    assert main(["run-onnx", str(tmp_path / "m.onnx")]) == 1
    err = capsys.readouterr().err
    assert "OnnxError" in err and "node 'big'" in err and "limit" in err


# -- malformed graphs ---------------------------------------------------------------------------
X = ("x", TensorProto.FLOAT, [2, 3])


@pytest.mark.parametrize("nodes, inputs, outputs, match", [
    ([helper.make_node("Relu", ["nowhere"], ["y"], name="n1")], [X], ["y"],
     r"Relu \(opset 17, node 'n1'.*input 'nowhere' is not produced by any node"),
    ([helper.make_node("Relu", ["b"], ["a"], name="n1"),
      helper.make_node("Relu", ["a"], ["b"], name="n2")], [X], ["b"],
     r"node 'n1'.*input 'b' is produced by node 'n2', which does not come before it"),
    ([helper.make_node("Relu", ["x"], ["z"], name="n1")], [X], ["y"],
     r"graph output 'y' is not produced"),
    ([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Add", ["nowhere", "y"], [])],
     [X], ["y"], r"Add \(opset 17, node '\(no name, no output\)'.*'nowhere' is not produced"),
    ([helper.make_node("Relu", ["x"], ["y"], name="n1"),
      helper.make_node("Relu", ["x"], ["y"], name="n2")], [X], ["y"],
     r"node 'n2'.*output 'y' is already defined"),
    ([helper.make_node("Flatten", ["x"], ["y"], name="f", axis=1.5)], [X], ["y"],
     r"Flatten \(opset 17, node 'f'.*attribute 'axis' is FLOAT where ONNX wants INT"),
    ([helper.make_node("Transpose", ["x"], ["y"], name="t", perm="01")], [X], ["y"],
     r"node 't'.*attribute 'perm' is STRING where ONNX wants INTS"),
    ([helper.make_node("Concat", ["x", "x"], ["y"], name="c")], [X], ["y"],
     r"Concat \(opset 17, node 'c'.*required attribute 'axis' is missing"),
    ([helper.make_node("Add", ["x"], ["y"], name="a")], [X], ["y"],
     r"node 'a'.*1 inputs; version 14 takes 2 to 2"),
    ([helper.make_node("Relu", ["x"], ["y"], name="r", alpha=1.0)], [X], ["y"],
     r"node 'r'.*attribute 'alpha' is not an attribute of version 14"),
    ([helper.make_node("Slice", ["x", "s", "e"], ["y"], name="sl")],
     [("x", TensorProto.FLOAT, []), ("s", TensorProto.INT64, [1]),
      ("e", TensorProto.INT64, [1])], ["y"], None),
])
def test_malformed_graph_is_an_error_naming_the_node(nodes, inputs, outputs, match):
    m = model(nodes, inputs, outputs)
    if match is None:     # Slice of a 0-d input: refused when its bounds are known, at run
        og = graph.onnx.load(m)
        with pytest.raises(OnnxError, match=r"Slice \(opset 17, node 'sl'.*Slice of a 0-d"):
            og.run({"x": np.float32(1), "s": np.array([0]), "e": np.array([1])})
        return
    with pytest.raises(OnnxError, match=match):
        graph.onnx.load(m)


def test_string_and_unsupported_dtype_initializers_are_refused_by_name():
    s = numpy_helper.from_array(np.array(["a", "b"], object), "names")
    m = model([helper.make_node("Identity", ["names"], ["y"], name="i")], inits=[s],
              out_type=TensorProto.STRING)
    with pytest.raises(OnnxError, match=r"Identity \(opset 17, node 'i'.*initializer 'names' "
                                        r"has dtype string, which dualgrad does not have"):
        graph.onnx.load(m)
    u = model([helper.make_node("Relu", ["x"], ["y"], name="r")],
              inputs=[("x", TensorProto.UINT16, [2])], out_type=TensorProto.UINT16)
    with pytest.raises(OnnxError, match=r"Relu \(opset 17, node 'r'.*graph input 'x' has "
                                        r"dtype uint16"):
        graph.onnx.load(u)


def test_sequence_input_is_refused_by_name():
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    m = model([helper.make_node("SequenceLength", ["s"], ["y"], name="n")], inputs=[seq],
              out_type=TensorProto.INT64)
    with pytest.raises(OnnxError, match=r"SequenceLength .*node 'n'"):
        graph.onnx.load(m)


def test_a_file_that_is_not_onnx_is_an_error(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"\xff\x00garbage" * 10)
    with pytest.raises(OnnxError, match="not a readable ONNX model"):
        graph.onnx.load(tmp_path / "m.onnx")


# -- the node cases, damaged --------------------------------------------------------------------
def _damage(model, kind, rng):
    """A copy of model with one node damaged: a dangling input, an attribute of the wrong
    type or length, a missing input, or an initializer whose dims no longer fit its data."""
    from onnx import AttributeProto
    m = type(model)()
    m.CopyFrom(model)
    n = m.graph.node[rng.integers(len(m.graph.node))]
    if kind == "dangling" and n.input:
        n.input[rng.integers(len(n.input))] = "dangling"
    elif kind == "attribute" and n.attribute:
        a = n.attribute[rng.integers(len(n.attribute))]
        if a.type == AttributeProto.INT:
            a.type, a.f = AttributeProto.FLOAT, 1.5
        elif a.type == AttributeProto.INTS:
            a.ints.append(-99)
        elif a.type == AttributeProto.FLOAT:
            a.f = float("nan")
    elif kind == "input" and len(n.input) > 1:
        del n.input[-1]
    elif kind == "initializer" and m.graph.initializer:
        m.graph.initializer[0].dims.append(3)
    return m


@pytest.mark.parametrize("kind", ["dangling", "attribute", "input", "initializer"])
def test_damaged_node_cases_are_refused_or_run(kind):
    """Every 4th onnx node case (by name), damaged one way: load and run raise nothing but
    OnnxError (about 470 models per kind, a few seconds)."""
    from . import onnx_node_cases as nc
    rng = np.random.default_rng(0)
    other = []
    for case in sorted(nc.cases(), key=lambda c: c.name)[::4]:
        m = _damage(case.model, kind, rng)
        try:
            og = graph.onnx.load(m, optimize=False)
            with np.errstate(all="ignore"):
                og.run(nc.feeds(case, case.data_sets[0][0]))
        except OnnxError:
            pass
        except Exception as e:                  # noqa: BLE001 -- what the test looks for
            other.append(f"{case.name}: {type(e).__name__}: {e}"[:200])
    assert not other, "\n".join(other[:10])
