"""The execution-plan interface the optimiser targets, and Session's one late import of it."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.graph.errors import InvalidArgumentError
from dualgrad.graph.plan import Plan, Step, build_plan, node_kernel, plan_frees


def _small():
    x = graph.placeholder(graph.float32, (None, 2), name="x")
    v = graph.Variable(np.ones(2, np.float32), name="v")
    y = graph.tanh(x * v + 1.0, name="y")
    return x, v, y


def test_build_plan_is_a_topological_list_of_steps_over_slots():
    x, v, y = _small()
    plan = build_plan([y, v.initializer], [x])
    assert isinstance(plan, Plan) and all(isinstance(s, Step) for s in plan.steps)
    assert [s.node.type for s in plan.steps] == ["const", "variable", "assign", "mul", "const",
                                                 "add", "tanh"]
    assert plan.feed_slots == [(x, 0)]
    written = {0}
    for s in plan.steps:
        assert set(s.inputs) <= written          # every input is written before it is read
        written |= set(s.outputs)
    assert plan.fetch_slots[1] is None           # a fetched node without outputs
    by_type = {s.node.type: s for s in plan.steps}
    assert by_type["variable"].stateful and by_type["assign"].stateful
    assert not by_type["tanh"].stateful and by_type["mul"].free   # dead slots are released
    assert plan.num_slots == 1 + sum(len(s.outputs) for s in plan.steps)


def test_lower_gives_each_nodes_kernel():
    x, v, y = _small()
    kernel, stateful = node_kernel(y.op)
    assert not stateful and kernel(np.zeros(2)).tolist() == [0.0, 0.0]
    kernel, stateful = node_kernel(graph.reduce_sum(x, axis=1).op)
    assert kernel(np.ones((2, 3))).tolist() == [3.0, 3.0]


def _fake_compiler(monkeypatch, optimize):
    mod = types.ModuleType("dualgrad.compiler")
    if optimize is not None:
        mod.optimize = optimize
    monkeypatch.setitem(sys.modules, "dualgrad.compiler", mod)


def test_session_uses_the_optimizers_plan_once_per_feed_signature(monkeypatch):
    x, v, y = _small()
    calls = []

    def optimize(g, fetches, feed_specs):
        calls.append((g, list(fetches), dict(feed_specs)))
        plan = build_plan(fetches, list(feed_specs))
        for step in plan.steps:
            if step.node.type == "tanh":
                step.kernel = lambda a: np.full_like(a, 42.0)   # a "fused" replacement kernel
        return plan, "report"

    _fake_compiler(monkeypatch, optimize)
    with graph.Session() as s:
        s.run(v.initializer)
        for n in (3, 3, 5):
            assert (s.run(y, {x: np.zeros((n, 2))}) == 42.0).all()
        assert s.last_report == "report"
    shapes = [tuple(c[2][x].shape) for c in calls if len(c[1]) == 1 and c[1][0] is y]
    assert shapes == [(3, 2), (5, 2)] and calls[0][0] is graph.get_default_graph()
    with graph.Session(optimize=False) as s:
        s.run(v.initializer)
        assert s.run(y, {x: np.zeros((1, 2))})[0, 0] == np.float32(np.tanh(1.0))


def test_session_without_an_optimizer_runs_the_graph_as_built(monkeypatch):
    _fake_compiler(monkeypatch, None)        # compiler/ present, but no optimize
    x, v, y = _small()
    with graph.Session() as s:
        s.run(v.initializer)
        assert s.run(y, {x: np.zeros((1, 2))})[0, 0] == np.float32(np.tanh(1.0))


def test_errors_from_a_rewritten_step_name_its_node(monkeypatch):
    x, v, y = _small()

    class Synthetic:          # what a fused step may carry instead of a graph node
        name, type, op, attrs, grad_of = "fused/tanh_add_mul", "fused", None, {}, None
        loc = ("model.py", 7)

    def optimize(g, fetches, feed_specs):
        plan = build_plan(fetches, list(feed_specs))
        for s in plan.steps:
            if s.node.type == "tanh":
                s.node = Synthetic()
                s.kernel = lambda a: 1 / 0
        return plan, None

    _fake_compiler(monkeypatch, optimize)
    with graph.Session() as s:
        s.run(v.initializer)
        with pytest.raises(InvalidArgumentError, match=r"fused/tanh_add_mul' \(op fused\) "
                                                       r"defined at model.py:7") as ei:
            s.run(y, {x: np.zeros((1, 2))})
    assert isinstance(ei.value.__cause__, ZeroDivisionError)


def test_an_output_no_step_reads_is_freed_by_its_own_step():
    steps = [Step(None, None, (), (0, 1)), Step(None, None, (0,), (2,)),
             Step(None, None, (2,), (3,))]
    plan_frees(steps, keep={3})
    assert [s.free for s in steps] == [(1,), (0,), (2,)]
