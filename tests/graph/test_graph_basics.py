"""Graphs, names, dtypes, placeholders, constants, Variables and Session.run semantics."""
from __future__ import annotations

import collections
import pickle

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.graph.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError


def run(fetches, feeds=None, g=None):
    with graph.Session(g, optimize=False) as s:
        return s.run(fetches, feeds)


# -- graphs and names ------------------------------------------------------------------------
def test_default_graph_and_as_default():
    g = graph.Graph()
    assert graph.get_default_graph() is not g
    with g.as_default():
        assert graph.get_default_graph() is g
        c = graph.constant(1.0)
    assert c.graph is g and c.op.graph is g
    outer = graph.get_default_graph()
    graph.reset_default_graph()
    assert graph.get_default_graph() is not outer


def test_reset_default_graph_inside_as_default_is_refused():
    with graph.Graph().as_default():
        with pytest.raises(AssertionError, match="reset_default_graph"):
            graph.reset_default_graph()


def test_unique_names_and_name_scopes():
    x = graph.placeholder(graph.float32, (None, 4), name="x")
    w = np.ones((4, 4), np.float32)
    with graph.name_scope("dense"):
        a = graph.matmul(x, w)
        b = graph.matmul(a, w)
    with graph.name_scope("dense"):
        c = graph.matmul(x, w)
    assert (a.op.name, b.op.name, c.op.name) == ("dense/MatMul", "dense/MatMul_1",
                                                 "dense_1/MatMul")
    assert a.name == "dense/MatMul:0"
    y = graph.reduce_mean(a, axis=1, name="row_mean")
    assert y.op.name == "row_mean" and y.shape == (None,)
    g = graph.get_default_graph()
    assert g.get_tensor_by_name("row_mean:0") is y
    assert g.get_operation_by_name("dense/MatMul") is a.op
    with pytest.raises(NotFoundError, match="no node named 'nope'"):
        g.get_operation_by_name("nope")


def test_dtypes_accept_graph_numpy_and_strings():
    for dt in (graph.float64, np.float64, "float64", "double"):
        assert graph.placeholder(dt, (2,)).dtype == np.float64
    assert graph.as_dtype("float") == graph.float32
    assert graph.placeholder("int64", ()).dtype == graph.int64
    with pytest.raises(TypeError, match="not a dtype"):
        graph.placeholder("floatish", (2,))


def test_tensor_static_shape_dtype_and_op():
    x = graph.placeholder(graph.float32, (None, 3))
    y = (x * 2.0 + 1) @ np.ones((3, 5), np.float32)
    assert y.shape == (None, 5) and y.shape.as_list() == [None, 5]
    assert not y.shape.is_fully_defined()
    assert y.dtype == graph.float32 and y.op.type == "matmul"
    assert y.op.inputs[0].op.type == "add"
    assert (x[:, 1]).shape == (None,) and x.T.shape == (3, None)
    assert graph.gather(x, [0, 2], axis=1).shape == (None, 2)


def test_weak_python_scalars_keep_tensor_dtype():
    x = graph.placeholder(graph.float32, (2,))
    i = graph.placeholder(graph.int64, (2,))
    assert (x * 2.0).dtype == np.float32 and (2 - x).dtype == np.float32
    assert (i + 1).dtype == np.int64
    with pytest.raises(TypeError, match="expected int64, got 0.5"):   # TF1's rule
        i * 0.5
    assert run(x ** 2, {x: [3.0, -1.0]}).tolist() == [9.0, 1.0]


def test_logical_operators_on_bool_tensors():
    x = graph.placeholder(graph.float32, (3,))
    a, b = x > 0, x < 2
    got = run([a & b, a | b, ~a], {x: [-1.0, 1.0, 3.0]})
    assert [g.tolist() for g in got] == [[False, True, False], [True, True, True],
                                         [True, False, False]]
    with pytest.raises(TypeError, match="bool tensors"):
        x & a


# -- no Python truth for symbolic values ---------------------------------------------------------
def test_bool_of_symbolic_tensor_points_to_cond():
    x = graph.placeholder(graph.float32, ())
    with pytest.raises(TypeError, match=r"graph\.cond"):
        if x > 0:
            pass
    with pytest.raises(TypeError, match=r"graph\.equal"):
        if graph.equal(x, 1.0):
            pass
    with pytest.raises(TypeError, match="not iterable"):
        list(graph.placeholder(graph.float32, (3,)))
    with pytest.raises(TypeError, match="Session.run"):
        np.asarray(x)


def test_tensors_compare_as_objects_as_in_tf1_graph_mode():
    """TF1's graph mode: `==` is identity (a Python bool) and tensors hash by identity, so
    membership tests and dict keys work; graph.equal is the elementwise comparison."""
    x = graph.placeholder(graph.float32, (2,))
    c = graph.constant([1.0, 2.0])
    v = graph.Variable([0.0, 1.0], name="v")
    w = graph.Variable([0.0, 1.0], name="w")
    assert (x == x) is True and (x == c) is False and (x != c) is True
    assert x in [c, x] and c not in [x]
    assert v in graph.trainable_variables() and [t for t in graph.trainable_variables()
                                                  if t != v] == [w]
    assert {x: 1, c: 2}[c] == 2 and len({v, w, v}) == 2
    assert run(graph.equal(x, c), {x: [1.0, 0.0]}).tolist() == [True, False]
    assert run(graph.not_equal(x, c), {x: [1.0, 0.0]}).tolist() == [False, True]


# -- constants and placeholders ------------------------------------------------------------------
def test_constant_follows_tf_dtypes():
    assert graph.constant(1.5).dtype == np.float32
    assert graph.constant([1, 2]).dtype == np.int32
    assert graph.constant(np.arange(3)).dtype == np.arange(3).dtype
    assert run(graph.constant(2.0, shape=(2, 2))).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert graph.constant(1, dtype="float64").dtype == np.float64


def test_fetched_values_never_alias_graph_constants():
    arr = np.ones((2, 3), np.float32)
    c = graph.constant(arr)
    p = graph.placeholder(graph.float32, (2, 3))
    lifted = p * 0.0 + arr
    with graph.Session(optimize=False) as s:
        for fetch in (c, graph.reshape(c, [3, 2]), c[0]):
            out = s.run(fetch)
            out[...] = 5.0
        assert (s.run(c) == 1.0).all()
        assert s.run(lifted, {p: arr}).sum() == 6.0
    arr[...] = 7.0   # the user's array was copied into the graph
    assert (graph.Session(optimize=False).run(c) == 1.0).all()


# -- Session.run: fetch structures, subgraph, feeds ----------------------------------------------
def test_fetch_structures_come_back_in_the_same_shape():
    x = graph.placeholder(graph.float32, (2,), name="x")
    y, z = x + 1.0, x * 3.0
    Pair = collections.namedtuple("Pair", "a b")
    out = run({"y": y, "both": [y, (z,)], "p": Pair(y, z)}, {x: [1.0, 2.0]})
    assert out["y"].tolist() == [2.0, 3.0]
    assert out["both"][1][0].tolist() == [3.0, 6.0] and isinstance(out["both"][1], tuple)
    assert isinstance(out["p"], Pair) and out["p"].b.tolist() == [3.0, 6.0]
    assert run("add:0", {"x:0": [0.0, 1.0]}).tolist() == [1.0, 2.0]


def test_scalar_fetch_is_a_numpy_scalar():
    v = run(graph.reduce_sum(graph.constant([1.0, 2.0])))
    assert isinstance(v, np.float32) and v == 3.0


def test_only_the_needed_subgraph_runs(capsys):
    x = graph.placeholder(graph.float32, (), name="x")
    unused = graph.placeholder(graph.float32, (), name="unused")
    noisy = graph.print(unused * 2.0, "never: ")
    y = x + 1.0
    with graph.Session(optimize=False) as s:
        assert s.run(y, {x: 1.0}) == 2.0        # `unused` needs no feed, `noisy` never prints
        assert len(s._plans) == 1
        plan = next(iter(s._plans.values()))
        assert {st.node.type for st in plan.steps} == {"const", "add"}
    assert "never" not in capsys.readouterr().out
    _ = noisy


def test_plans_are_cached_per_fetches_and_feeds():
    x = graph.placeholder(graph.float32, (None,))
    y = x * 2.0
    with graph.Session(optimize=False) as s:
        for n in (1, 2, 3):
            s.run(y, {x: np.ones(n)})
        assert len(s._plans) == 1
        s.run([y, x], {x: np.ones(1)})
        assert len(s._plans) == 2


def test_feed_checks_name_the_placeholder():
    x = graph.placeholder(graph.float32, (None, 3), name="images")
    k = graph.placeholder(graph.int64, (None,), name="labels")
    y = graph.reduce_sum(x) + graph.cast(graph.reduce_sum(k), graph.float32)
    with graph.Session(optimize=False) as s:
        with pytest.raises(InvalidArgumentError, match=r"shape \(4, 2\).*'images'.*expects "
                                                       r"shape \(\?, 3\)"):
            s.run(y, {x: np.ones((4, 2)), k: [1]})
        with pytest.raises(InvalidArgumentError, match=r"float64 value to placeholder "
                                                       r"'labels'.*expects int64"):
            s.run(y, {x: np.ones((4, 3)), k: [1.5]})
        with pytest.raises(InvalidArgumentError, match=r"must feed a value for placeholder "
                                                       r"'labels'.*test_graph_basics.py:\d+"):
            s.run(y, {x: np.ones((4, 3))})
        assert s.run(y, {y: 3.0}) == 3.0   # as TF1: any tensor can be fed, placeholders unfed
        with pytest.raises(InvalidArgumentError, match="names an operation, not a tensor"):
            s.run(y, {y.op: 3.0})
        assert s.run(y, {x: np.ones((2, 3), np.float64), k: np.array([1, 2], np.int32)}) == 9.0


def test_other_graph_closed_session_and_bad_fetches():
    x = graph.placeholder(graph.float32, ())
    g2 = graph.Graph()
    with g2.as_default():
        other = graph.constant(1.0)
    s = graph.Session(optimize=False)
    with pytest.raises(ValueError, match="belongs to another graph"):
        s.run(other)
    with pytest.raises(TypeError, match="invalid type"):
        s.run([x + 1.0, 3])
    with pytest.raises(ValueError, match="different graphs"):
        x + other
    s.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        s.run(x, {x: 1.0})


def test_ops_on_another_graphs_tensors_build_there():
    g = graph.Graph()
    with g.as_default():
        c = graph.constant(2.0)
    d = c * 3.0             # default graph is another one: built in c's graph, as TF1 does
    assert d.graph is g
    assert run(d, g=g) == 6.0


# -- Variables -------------------------------------------------------------------------------------
def test_variables_persist_across_runs_and_sessions_are_separate():
    v = graph.Variable(np.zeros(2, np.float32), name="counter")
    inc = v.assign_add(np.ones(2, np.float32))
    init = graph.global_variables_initializer()
    with graph.Session(optimize=False) as s:
        s.run(init)
        for _ in range(3):
            s.run(inc)
        assert s.run(v).tolist() == [3.0, 3.0]
        got = s.run(v)
        got[0] = 99.0   # a fetched value is a copy, never the session's buffer
        assert s.run(v).tolist() == [3.0, 3.0]
    with graph.Session(optimize=False) as s2:
        with pytest.raises(FailedPreconditionError, match="uninitialized value 'counter'"):
            s2.run(v)


def test_variable_reads_see_the_value_at_the_start_of_the_run():
    v = graph.Variable(1.0, name="v")
    new = v.assign(v * 10.0)
    with graph.Session(optimize=False) as s:
        s.run(v.initializer)
        before, after = s.run([v + 0.0, new])
        assert (before, after) == (1.0, 10.0) and s.run(v) == 10.0


def test_variable_api():
    v = graph.Variable(lambda: graph.random_normal((3, 2), seed=1), name="w")
    frozen = graph.Variable([1, 2], trainable=False, name="steps")
    assert v.name == "w:0" and v.shape == (3, 2) and v.dtype == np.float32
    tv = graph.trainable_variables()
    assert len(tv) == 1 and tv[0] is v
    assert len(graph.global_variables()) == 2 and frozen.dtype == np.int32
    with pytest.raises(graph.ShapeError, match=r"cannot assign a value of shape \(2,\)"):
        v.assign(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        frozen.assign(graph.constant([1.5, 2.0]))
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        v.load(np.ones((3, 2)), s)
        assert s.run(graph.reduce_sum(v)) == 6.0
        assert v.eval(session=s).shape == (3, 2)


def test_default_session_eval_and_interactive_session():
    x = graph.constant([1.0, 2.0])
    with graph.Session(optimize=False):
        assert (x * 2.0).eval().tolist() == [2.0, 4.0]
    s = graph.InteractiveSession(optimize=False)
    try:
        assert graph.get_default_session() is s and x.eval()[1] == 2.0
    finally:
        s.close()
    assert graph.get_default_session() is None


# -- pickling is refused everywhere ------------------------------------------------------------------
def test_graph_objects_cannot_be_pickled():
    x = graph.placeholder(graph.float32, ())
    v = graph.Variable(1.0)
    for obj in (x, x.op, v, graph.get_default_graph(), graph.Session(optimize=False)):
        with pytest.raises(TypeError, match="pickle"):
            pickle.dumps(obj)


# -- misc op functions -------------------------------------------------------------------------------
def test_tf_named_functions():
    x = graph.placeholder(graph.float32, (2, 3))
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    outs = run({
        "t": graph.transpose(x), "c": graph.concat([x, x], axis=0), "s": graph.stack([x, x], 1),
        "e": graph.expand_dims(x, 0), "sq": graph.squeeze(graph.expand_dims(x, 2), [2]),
        "am": graph.argmax(x, axis=1), "mx": graph.reduce_max(x, axis=0),
        "mn": graph.reduce_min(x), "w": graph.where(x > 0, x, graph.zeros_like(x)),
        "oh": graph.one_hot(graph.constant([0, 2]), 3), "p": graph.pad(x, [[1, 0], [0, 1]]),
        "mm": graph.matmul(x, x, transpose_b=True), "cl": graph.clip_by_value(x, -1.0, 1.0),
        "sp": graph.split(x, 3, axis=1)[1], "lse": graph.reduce_logsumexp(x, axis=1),
        "r": graph.reshape(x, [-1]), "sqr": graph.square(x), "ones": graph.ones((2,), "int64"),
    }, {x: xv})
    np.testing.assert_array_equal(outs["t"], xv.T)
    np.testing.assert_array_equal(outs["s"], np.stack([xv, xv], 1))
    np.testing.assert_array_equal(outs["am"], xv.argmax(1))
    np.testing.assert_array_equal(outs["oh"], np.eye(3, dtype=np.float32)[[0, 2]])
    np.testing.assert_array_equal(outs["mm"], xv @ xv.T)
    np.testing.assert_array_equal(outs["p"], np.pad(xv, [[1, 0], [0, 1]]))
    np.testing.assert_allclose(outs["lse"], np.log(np.exp(xv).sum(1)), rtol=1e-6)
    np.testing.assert_array_equal(outs["sp"], xv[:, 1:2])
    assert outs["mn"] == xv.min() and outs["ones"].dtype == np.int64


def test_random_ops_draw_at_run_time():
    r = graph.random_normal((1000,), mean=2.0, stddev=0.5, seed=3)
    u = graph.random_uniform((1000,), -1.0, 1.0)
    with graph.Session(optimize=False) as s:
        a, b = s.run(r), s.run(r)
        assert not np.array_equal(a, b) and abs(a.mean() - 2.0) < 0.1
        ua = s.run(u)
        assert ua.min() >= -1.0 and ua.max() < 1.0 and ua.dtype == np.float32
    with graph.Session(optimize=False) as s:
        np.testing.assert_array_equal(s.run(r), a)   # an op seed restarts with each session


def test_automatic_names_cost_constant_time():
    class Counting(set):
        probes = 0

        def __contains__(self, item):
            Counting.probes += 1
            return super().__contains__(item)
    g = graph.Graph()
    g._names = Counting()
    with g.as_default():
        x = graph.constant(1.0)
        for _ in range(3000):
            x = x + 1.0
    names = [n.name for n in g.get_operations()]
    assert len(set(names)) == len(names) and "add_2999" in names
    assert Counting.probes < 10 * len(names)   # quadratic probing made ~9 million
