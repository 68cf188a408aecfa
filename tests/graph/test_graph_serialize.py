"""Save -> load -> run gives the same results; pickles and malformed files are refused;
DOT export and the text summary."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.graph.errors import GraphFileError


def _model():
    """A graph exercising attrs of every kind: slices, Ellipsis, None, tuples, -inf, dtypes,
    weak scalars, Variables, gradients, an optimizer, cond and while_loop."""
    x = graph.placeholder(graph.float32, (None, 1, 6, 6), name="x")
    y = graph.placeholder(graph.int64, (None,), name="y")
    k = graph.Variable(np.random.default_rng(0).standard_normal((3, 3, 1, 2)).astype(np.float32),
                       name="conv/kernel")
    h = graph.nn.relu(graph.nn.conv2d(x, k, 1, padding="SAME", data_format="NCHW"))
    h = graph.nn.max_pool2d(graph.pad(h, [[0, 0], [0, 0], [1, 1], [1, 1]],
                                      constant_values=-np.inf), 2, data_format="NCHW")
    h = graph.reshape(h[..., None, :, ::1], [-1, 32])
    logits = graph.nn.dense(h, 3, name="out")
    logits = graph.cond(graph.reduce_sum(logits) > 0, lambda: logits * 2.0, lambda: logits)
    loss = graph.reduce_mean(graph.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=logits), name="loss")
    _, looped = graph.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5 + 1.0),
                                 [graph.constant(0), loss])
    train = graph.train.AdamOptimizer(0.01).minimize(loss + looped * 0.0)
    return x, y, loss, looped, train


def _feeds(x, y):
    rng = np.random.default_rng(1)
    return {x: rng.standard_normal((4, 1, 6, 6)).astype(np.float32), y: np.array([0, 1, 2, 1])}


def test_save_load_run_equals(tmp_path):
    x, y, loss, looped, train = _model()
    g = graph.get_default_graph()
    feeds = _feeds(x, y)
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        s.run(train, feeds)
        s.run(train, feeds)
        path = graph.save(tmp_path / "model", s)
        want = s.run([loss, looped], feeds)
        s.run(train, feeds)
        want_next = s.run(loss, feeds)
    assert path.endswith("model.json") and (tmp_path / "model.safetensors").exists()
    g2 = graph.load(tmp_path / "model")
    assert [n.name for n in g2.get_operations()] == [n.name for n in g.get_operations()]
    assert [v.name for v in g2.trainable_variables()] == [v.name for v in g.trainable_variables()]
    named = {k.name: v for k, v in feeds.items()}
    with graph.Session(g2, optimize=False) as s2:
        got = s2.run(["loss:0", looped.name], named)
        s2.run(train.name, named)
        got_next = s2.run("loss:0", named)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_next, want_next)


def test_restore_into_a_session(tmp_path):
    w = graph.Variable(np.arange(3, dtype=np.float32), name="w")
    with graph.Session(optimize=False) as s:
        s.run(w.initializer)
        s.run(w.assign(w * 2.0))
        graph.train.Saver().save(s, tmp_path / "ckpt")
    with graph.Session(optimize=False) as s:
        graph.train.Saver().restore(s, tmp_path / "ckpt")
        assert s.run(w).tolist() == [0.0, 2.0, 4.0]


def test_pickle_files_are_refused_without_unpickling(tmp_path):
    bad = tmp_path / "evil.json"
    bad.write_bytes(pickle.dumps({"format": "dualgrad.graph"}))
    with pytest.raises(GraphFileError, match="pickle"):
        graph.load(bad)
    (tmp_path / "text.json").write_text("not json at all")
    with pytest.raises(GraphFileError, match="not JSON"):
        graph.load(tmp_path / "text")


def _saved(tmp_path):
    x = graph.placeholder(graph.float32, (None, 2), name="x")
    graph.reduce_sum(graph.nn.relu(x) * 2.0, name="y")
    graph.save(tmp_path / "g", graph=graph.get_default_graph())
    return json.loads((tmp_path / "g.json").read_text())


@pytest.mark.parametrize("corrupt,match", [
    (lambda d: d.update(format="something.else"), "not a dualgrad graph file"),
    (lambda d: d.update(version=99), "format version 99"),
    (lambda d: d["graph"]["nodes"][1].update(op="frobnicate"), "op 'frobnicate'"),
    (lambda d: d["graph"]["nodes"][1].update(inputs=["nowhere:0"]), "'nowhere:0'"),
    (lambda d: d["graph"]["nodes"][1].pop("attrs"), "missing field 'attrs'"),
    (lambda d: d["graph"]["nodes"][1]["outputs"][0].update(shape=[None, 3]),
     "does not match the shape rule"),
    (lambda d: d["graph"]["nodes"][2]["attrs"].update(value={"__pickle__": "x"}),
     "unknown encoded value tag"),
    (lambda d: d["graph"]["nodes"].reverse(), "not defined before use"),
])
def test_malformed_files_are_clear_errors(tmp_path, corrupt, match):
    doc = _saved(tmp_path)
    corrupt(doc)
    (tmp_path / "g.json").write_text(json.dumps(doc))
    with pytest.raises(GraphFileError, match=match):
        graph.load(tmp_path / "g")


def test_missing_weights_array_is_a_clear_error(tmp_path):
    _saved(tmp_path)
    (tmp_path / "g.safetensors").unlink()
    with pytest.raises(GraphFileError, match="missing from the weights file"):
        graph.load(tmp_path / "g")


def test_dot_export_and_summary():
    x = graph.placeholder(graph.float32, (None, 3), name="x")
    w = graph.Variable(np.ones((3, 2), np.float32), name="w")
    y = graph.nn.relu(graph.matmul(x, w), name="act")
    graph.gradients(graph.reduce_sum(y), [w])
    dot = graph.to_dot()
    assert dot.startswith('digraph "graph" {') and dot.rstrip().endswith("}")
    assert '"act" [label="act\\nrelu\\n(?, 2) float32"' in dot
    assert '"x" -> "MatMul" [label="(?, 3)"]' in dot
    text = graph.describe(width=300)
    assert "act" in text and "relu" in text and "(?, 2) float32" in text
    assert "grad of act" in text and "test_graph_serialize.py" in text


def test_string_constants_round_trip(tmp_path):
    """TF's string tensors (bytes items, any byte values) are saved in the JSON, as
    safetensors has no strings, and load back equal."""
    want = np.array([[b"ab", b"\x00\xff"], [b"x", b""]], dtype=object)
    g = graph.Graph()
    with g.as_default():
        y = graph.identity(graph.constant(want, dtype=graph.string))
    path = graph.save(str(tmp_path / "strings"), graph=g)
    g2 = graph.load(path)
    with graph.Session(graph=g2) as s:
        got = s.run(g2.get_tensor_by_name(y.name))
    assert got.dtype == object and got.tolist() == want.tolist()
