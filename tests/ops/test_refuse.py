"""Inputs that would be misread are refused with the op's own error."""
from __future__ import annotations

import re

import numpy as np
import pytest

from dualgrad import eager, graph, ops
import dualgrad.eager.nn.functional as F

W = np.arange(12.0, dtype=np.float32).reshape(4, 3)


@pytest.mark.parametrize("idx,match", [(np.array([-1, 0]), "negative indices are not allowed"),
                                       (np.array([True, False]),
                                        "must be integers|scalar types: Long, Int")])
def test_embedding_refuses_negative_and_bool_indices(idx, match):
    with pytest.raises(Exception, match=match):
        F.embedding(eager.tensor(idx), eager.tensor(W))
    with pytest.raises(Exception, match=match):
        g = graph.Graph()
        with g.as_default():
            ids = graph.placeholder(idx.dtype, idx.shape)
            y = graph.nn.embedding_lookup(graph.constant(W), ids)
        with graph.Session(g) as s:
            s.run(y, {ids: idx})


def test_indexing_with_negative_index_still_wraps():
    assert eager.tensor(W)[np.array([-1])].numpy().tolist() == [[9.0, 10.0, 11.0]]


def test_one_hot_refuses_non_integers():
    with pytest.raises(ops.ShapeError, match="one_hot: indices must be integers, got float64"):
        ops.one_hot(np.array([1.5]), 3)


@pytest.mark.parametrize("dtype,value,match", [
    (graph.int32, np.array([2 ** 40], np.int64), "not representable in int32"),
    (graph.float32, np.array([1e40]), "not representable in float32"),
])
def test_feed_not_representable_is_refused(dtype, value, match):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(dtype, (1,))
        y = x * 1
    with graph.Session(g) as s:
        with pytest.raises(graph.errors.InvalidArgumentError, match=match):
            s.run(y, {x: value})
        assert s.run(y, {x: value * 0 + 3}).tolist() == [3]
        if dtype == graph.float32:
            assert s.run(y, {x: np.array([np.inf])}).tolist() == [np.inf]


def test_graph_load_checks_every_variable_against_the_graph(tmp_path):
    from safetensors.numpy import load_file, save_file
    g = graph.Graph()
    with g.as_default():
        v = graph.Variable(np.ones((2, 3), np.float32), name="v")
        init = graph.global_variables_initializer()
    with graph.Session(g) as s:
        s.run(init)
        graph.save(str(tmp_path / "m"), s)
    arrays = load_file(str(tmp_path / "m.safetensors"))
    arrays["var:v"] = np.ones((1, 3), np.float32)
    save_file(arrays, str(tmp_path / "m.safetensors"), metadata={"format": "dualgrad.graph"})
    with pytest.raises(graph.errors.GraphFileError, match=r"variable 'v' is \(2, 3\) float32 "
                       r"in the graph but \(1, 3\) float32"):
        graph.load(str(tmp_path / "m"))


def _saved_graph(tmp_path):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 2), name="x")
        v = graph.Variable(np.ones(2, np.float32), name="v")
        graph.reduce_sum(x * v, axis=1, name="y")
        init = graph.global_variables_initializer()
    s = graph.Session(g)
    s.run(init)
    graph.save(str(tmp_path / "m"), s)
    return s


@pytest.mark.parametrize("depth", [900, 100_000])
def test_graph_load_refuses_deeply_nested_attributes(tmp_path, depth):
    import json
    _saved_graph(tmp_path)
    path = tmp_path / "m.json"
    doc = json.loads(path.read_text())
    node = next(n for n in doc["graph"]["nodes"] if n["op"] == "sum")
    text = json.dumps(doc).replace(json.dumps(node["attrs"]),
                                   '{"axis": ' + "[" * depth + "1" + "]" * depth + "}", 1)
    path.write_text(text)
    with pytest.raises(graph.errors.GraphFileError, match=rf"{re.escape(str(path))}.*nested"):
        graph.load(str(tmp_path / "m"))


def _float8_file(path):
    """A safetensors file holding var:v as float8_e4m3 (written by hand: NumPy has none)."""
    import json
    import struct
    header = json.dumps({"var:v": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})
    header += " " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + b"\x38\x38")


def test_float8_weights_are_refused_by_name(tmp_path):
    s = _saved_graph(tmp_path)
    _float8_file(tmp_path / "m.safetensors")
    file = re.escape(str(tmp_path / "m.safetensors"))
    want = rf"{file}.*'var:v' \(float8_e4m3\).*NumPy cannot hold"
    with pytest.raises(graph.errors.GraphFileError, match=want):
        graph.load(str(tmp_path / "m"))
    with pytest.raises(graph.errors.GraphFileError, match=want):
        graph.restore(s, str(tmp_path / "m"))
    with pytest.raises(ValueError, match=rf"eager.load: {want}"):
        eager.load(str(tmp_path / "m.safetensors"))
