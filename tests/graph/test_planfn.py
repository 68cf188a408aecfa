"""A plan run more than once runs as straight-line code generated for it (graph/planfn.py):
the same values as stepping through it, the same error at the same node on any run, freed
values released, scalars handed back as arrays."""
import inspect

import numpy as np
import pytest

from dualgrad import graph


def _mlp_step():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 4), name="x")
        w = graph.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="w")
        loss = graph.reduce_sum(graph.tanh(graph.matmul(x, w)) ** 2)
        (gw,) = graph.gradients(loss, [w])
        train = graph.assign_sub(w, 0.1 * gw)
        init = graph.global_variables_initializer()
    return g, x, loss, train, init


@pytest.mark.parametrize("optimize", [False, True])
def test_generated_runs_give_what_the_interpreter_gives(optimize):
    g, x, loss, train, init = _mlp_step()
    feed = {x: np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)}
    losses = {}
    for mode in ("interpret", "generated"):
        with graph.Session(g, optimize=optimize) as s:
            s.run(init)
            out = []
            for _ in range(4):
                if mode == "interpret":
                    for p in s._plans.values():
                        p._runs = -100          # NOTE: keep every plan interpreted
                out.append(s.run([loss, train], feed)[0])
            losses[mode] = out
            if mode == "generated":
                assert any(p._fn is not None for p in s._plans.values())
    np.testing.assert_array_equal(losses["interpret"], losses["generated"])
    assert all(isinstance(v, np.floating) for v in losses["generated"])   # scalar fetches
    assert losses["generated"][3] < losses["generated"][0]


def test_an_error_on_a_later_run_names_the_node_and_line():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(graph.float32, (None, 3))
        b = graph.placeholder(graph.float32, (None, None))
        y = graph.matmul(x, b, transpose_b=True) * 2.0  # the line the error must name
    line = inspect.currentframe().f_lineno - 1
    ok = {x: np.ones((4, 3), np.float32), b: np.ones((4, 3), np.float32)}
    with graph.Session(g, optimize=False) as s:
        for _ in range(3):
            s.run(y, ok)
        (plan,) = s._plans.values()
        assert plan._fn is not None
        with pytest.raises(Exception) as info:
            s.run(y, {x: np.ones((4, 3), np.float32), b: np.ones((5, 2), np.float32)})
    assert f"test_planfn.py:{line}" in str(info.value)
    assert "in node 'MatMul'" in str(info.value) and "(4, 3), (2, 5)" in str(info.value)
    with graph.Session(g, optimize=False) as s, pytest.raises(Exception) as first:
        s.run(y, {x: np.ones((4, 3), np.float32), b: np.ones((5, 2), np.float32)})
    assert str(first.value) == str(info.value) and type(first.value) is type(info.value)


def test_freed_values_are_released_during_the_run():
    import weakref
    from dualgrad.graph.plan import Plan, Step, plan_frees
    refs, alive = [], []

    def make(a):
        out = a + 1.0
        refs.append(weakref.ref(out))
        return out

    def check(a):
        alive.append(refs[-1]() is not None)   # the first temporary, freed by now?
        return a

    steps = [Step(None, make, (0,), (1,)), Step(None, lambda a: a * 2.0, (1,), (2,)),
             Step(None, check, (2,), (3,))]
    plan_frees(steps, {3})
    plan = Plan(steps, [("x", 0)], [3], 4)
    for _ in range(3):
        out = plan.run(None, {"x": np.zeros(1000)})
    assert plan._fn is not None
    assert alive == [False, False, False]
    np.testing.assert_array_equal(out[0], np.full(1000, 2.0))


def test_generated_variable_reads_are_lookups_and_still_name_an_uninitialised_variable():
    g, x, loss, train, init = _mlp_step()
    feed = {x: np.ones((2, 4), np.float32)}
    with graph.Session(g) as s:
        for _ in range(3):                      # the plan is generated from its second run
            with pytest.raises(graph.errors.FailedPreconditionError, match="uninitialized value 'w'"):
                s.run(loss, feed)
        assert any(p._fn is not None and "V.get(" in p._fn.source for p in s._plans.values())
        s.run(init)
        first = [s.run([loss, train], feed)[0] for _ in range(3)]
    with graph.Session(g, optimize=False) as s:
        s.run(init)
        for p in s._plans.values():
            p._runs = -100
        want = [s.run([loss, train], feed)[0] for _ in range(3)]
    np.testing.assert_allclose(first, want, rtol=1e-5)
