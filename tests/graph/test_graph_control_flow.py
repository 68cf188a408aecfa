"""cond, while_loop (values and gradients), print, group and control dependencies."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.ops import ShapeError


def run(fetches, feeds=None):
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        return s.run(fetches, feeds)


def fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# -- cond ----------------------------------------------------------------------------------------
def test_cond_takes_one_branch_at_run_time(capsys):
    x = graph.placeholder(graph.float32, (), name="x")
    y = graph.cond(x > 0, lambda: graph.print(x * 3.0, "then: "),
                   lambda: graph.print(-x, "else: "))
    assert y.shape == () and y.op.type == "cond"
    assert run(y, {x: 2.0}) == 6.0
    assert capsys.readouterr().out == "then: 6.0\n"
    assert run(y, {x: -2.0}) == 2.0
    assert capsys.readouterr().out == "else: 2.0\n"


def test_cond_structures_and_relaxed_shapes():
    x = graph.placeholder(graph.float32, (None,))
    a, (b,) = graph.cond(graph.reduce_sum(x) > 0,
                         lambda: (x[:2], (x * 2.0,)),
                         lambda: (x[:3], (x * 0.0,)))
    assert a.shape == (None,) and b.shape == (None,)
    out = run([a, b], {x: [1.0, 2.0, 3.0]})
    assert out[0].tolist() == [1.0, 2.0] and out[1].tolist() == [2.0, 4.0, 6.0]
    assert run(graph.cond(True, lambda: x, lambda: -x), {x: [1.0]}).tolist() == [1.0]


def test_cond_build_time_checks():
    x = graph.placeholder(graph.float32, (3,))
    with pytest.raises(ShapeError, match="pred must be a scalar bool"):
        graph.cond(x > 0, lambda: x, lambda: x)
    with pytest.raises(ShapeError, match="output 0 differs between branches"):
        graph.cond(x[0] > 0, lambda: x, lambda: graph.cast(x, "float64"))
    with pytest.raises(ShapeError, match="returns 2 tensors but false_fn returns 1"):
        graph.cond(x[0] > 0, lambda: (x, x), lambda: x)


def test_gradient_through_cond():
    x = graph.placeholder(graph.float64, (3,), name="x")
    w = graph.Variable(np.array([0.5, -1.0, 2.0]), name="w")
    y = graph.cond(graph.reduce_sum(x) > 0, lambda: graph.tanh(x * w), lambda: x * x)
    loss = graph.reduce_sum(y * np.array([1.0, 2.0, 3.0]))
    gx, gw = graph.gradients(loss, [x, w])
    wv, c = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    for xv in (np.array([0.3, 0.2, 0.1]), np.array([-0.3, 0.2, -0.1])):
        got = run([gx, gw], {x: xv})

        def f(xx, ww=wv):
            return np.sum((np.tanh(xx * ww) if xx.sum() > 0 else xx * xx) * c)
        np.testing.assert_allclose(got[0], fd(f, xv), rtol=1e-6)
        np.testing.assert_allclose(got[1], fd(lambda ww: f(xv, ww), wv), atol=1e-9)


def test_gradient_through_nested_cond_and_second_order():
    x = graph.placeholder(graph.float64, (), name="x")
    y = graph.cond(x > 0,
                   lambda: graph.cond(x > 1, lambda: x ** 3, lambda: x * x),
                   lambda: -x)
    (dy,) = graph.gradients(y, [x])
    (d2y,) = graph.gradients(dy, [x])
    for xv, want in ((2.0, (8.0, 12.0, 12.0)), (0.5, (0.25, 1.0, 2.0)), (-1.0, (1.0, -1.0, 0.0))):
        got = run([y, dy, d2y], {x: xv})
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cond_with_assign_only_runs_the_taken_branch():
    v = graph.Variable(0.0, name="v")
    flag = graph.placeholder(graph.bool, ())
    out = graph.cond(flag, lambda: v.assign_add(1.0), lambda: v + 0.0)
    with graph.Session(optimize=False) as s:
        s.run(v.initializer)
        s.run(out, {flag: True})
        s.run(out, {flag: False})
        s.run(out, {flag: True})
        assert s.run(v) == 2.0


# -- while_loop ---------------------------------------------------------------------------------
def test_while_loop_values_and_maximum_iterations():
    i = graph.constant(0)
    acc = graph.constant(1.0)
    n = graph.placeholder(graph.int32, (), name="n")
    i_out, acc_out = graph.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 2.0),
                                      [i, acc])
    assert run([i_out, acc_out], {n: 5}) == [5, 32.0]
    capped = graph.while_loop(lambda i: i < 100, lambda i: i + 1, [i], maximum_iterations=7)
    assert run(capped) == 7


def test_while_loop_captures_outer_tensors_and_variables():
    x = graph.placeholder(graph.float32, (2,))
    v = graph.Variable(np.array([1.0, 1.0], np.float32))
    _, out = graph.while_loop(lambda k, s: k < 3, lambda k, s: (k + 1, s + x * v),
                              (graph.constant(0), graph.zeros((2,))))
    assert run(out, {x: [1.0, 2.0]}).tolist() == [3.0, 6.0]


def test_while_loop_gradient_matches_finite_differences():
    x = graph.placeholder(graph.float64, (3,), name="x")
    w = graph.placeholder(graph.float64, (3,), name="w")
    _, a = graph.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, graph.tanh(a * w) + x),
                            [graph.constant(0), x])
    gx, gw = graph.gradients(graph.reduce_sum(a * a), [x, w])
    xv, wv = np.array([0.1, -0.3, 0.5]), np.array([0.7, 1.2, -0.4])

    def f(xx, ww):
        a = xx
        for _ in range(4):
            a = np.tanh(a * ww) + xx
        return np.sum(a * a)
    got = run([gx, gw], {x: xv, w: wv})
    np.testing.assert_allclose(got[0], fd(lambda v: f(v, wv), xv), rtol=1e-6)
    np.testing.assert_allclose(got[1], fd(lambda v: f(xv, v), wv), rtol=1e-6)


def test_while_loop_runtime_invariant_check():
    v = graph.placeholder(graph.float32, (None,))
    grow = graph.while_loop(lambda k, v: k < 2,
                            lambda k, v: (k + 1, graph.concat([v, v], 0)),
                            [graph.constant(0), v], shape_invariants=[(), (None,)])
    assert run(grow, {v: [1.0]})[1].shape == (4,)


# -- print, group, control dependencies ---------------------------------------------------------
def test_print_passes_through_and_has_identity_gradient(capsys):
    x = graph.placeholder(graph.float32, (2,))
    p = graph.print(x * 2.0, message="x2 = ")
    (g,) = graph.gradients(graph.reduce_sum(p * 3.0), [x])
    out = run([p, g], {x: [1.0, 2.0]})
    assert out[0].tolist() == [2.0, 4.0] and out[1].tolist() == [6.0, 6.0]
    assert capsys.readouterr().out == "x2 = [2. 4.]\n"


def test_group_and_control_dependencies_order_side_effects():
    a = graph.Variable(0.0, name="a")
    b = graph.Variable(0.0, name="b")
    set_a = a.assign(5.0)
    with graph.control_dependencies([set_a]):
        set_b = b.assign(graph.identity(7.0 * graph.constant(1.0)))
    both = graph.group(set_b, name="both")
    with graph.Session(optimize=False) as s:
        s.run(graph.global_variables_initializer())
        assert s.run(both) is None
        assert s.run([a, b]) == [5.0, 7.0]
    assert set_a.op in set_b.op.control_inputs
