"""graph.summary: TF1's summary ops, merge_all and FileWriter, read back with TensorBoard's
own event reader; the graph written by FileWriter(graph=...) is one TensorBoard can show."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph
from tests.tensorboard_check import displayable, read


@pytest.fixture(autouse=True)
def fresh_graph():
    graph.reset_default_graph()
    yield
    graph.reset_default_graph()


def _model():
    x = graph.placeholder(graph.float32, (None, 3), name="x")
    w = graph.Variable(np.ones((3, 2), np.float32), name="w")
    loss = graph.reduce_mean(graph.square(graph.matmul(x, w)), name="loss")
    train_op = graph.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, w, loss, train_op


@pytest.mark.parametrize("optimize", [False, True])
def test_merge_all_and_file_writer_read_back(tmp_path, optimize):
    x, w, loss, train_op = _model()
    graph.summary.scalar("loss", loss)
    graph.summary.histogram("w", w)
    merged = graph.summary.merge_all()
    writer = graph.summary.FileWriter(tmp_path, graph=graph.get_default_graph())
    losses = []
    with graph.Session(optimize=optimize) as sess:
        sess.run(graph.global_variables_initializer())
        for step in range(3):
            summary, value, _ = sess.run([merged, loss, train_op], {x: np.ones((4, 3))})
            assert isinstance(summary, bytes)
            writer.add_summary(summary, global_step=step)
            losses.append(value)
    writer.close()
    acc = read(tmp_path)
    assert [e.step for e in acc.Scalars("loss")] == [0, 1, 2]
    assert [e.value for e in acc.Scalars("loss")] == pytest.approx(losses)
    assert [h.histogram_value.num for h in acc.Histograms("w")] == [6, 6, 6]
    names = displayable(acc.Graph())
    assert {"x", "w", "loss"} <= names


def test_scalar_names_and_collections():
    x = graph.placeholder(graph.float32, (), name="x")
    s = graph.summary.scalar("lr", x, family="train")
    assert s.dtype == np.dtype(object) and s.shape == ()
    assert graph.get_collection(graph.GraphKeys.SUMMARIES) == [s]
    other = graph.summary.scalar("extra", x, collections=["mine"])
    assert graph.get_collection("mine") == [other]
    with graph.Session() as sess:
        from tensorboard.compat.proto.summary_pb2 import Summary
        (v,) = Summary.FromString(sess.run(s, {x: 0.5})).value
    assert (v.tag, v.simple_value) == ("train/lr", 0.5)


def test_merge_all_without_summaries_is_none_and_errors_are_clear(tmp_path):
    assert graph.summary.merge_all() is None
    x = graph.placeholder(graph.float32, (2,), name="x")
    s = graph.summary.scalar("x", x)
    with graph.Session() as sess:
        with pytest.raises(graph.errors.InvalidArgumentError, match="expected a scalar"):
            sess.run(s, {x: np.ones(2)})
    with pytest.raises(TypeError, match="expected a graph.Graph"):
        graph.summary.FileWriter(tmp_path, graph="not a graph")


def test_docstring_example_runs():
    import doctest
    assert doctest.testmod(graph.summary).failed == 0


def test_file_writer_graph_def_is_what_tensorboard_reads(tmp_path):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 2), name="x")
        graph.nn.relu(x * 2.0, name="y")
    gd = g.as_graph_def()
    writer = graph.summary.FileWriter(tmp_path, graph_def=gd)
    writer.close()
    written = read(tmp_path).Graph()
    assert [(n.name, n.op) for n in written.node] == [(n.name, n.op) for n in gd.node]
