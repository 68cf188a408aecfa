"""Where errors surface: build time at the user's line; run time naming node, op, input shapes
and the line that built the node (and, for gradient nodes, the forward op and its line)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.graph.errors import InvalidArgumentError, ShapeMismatchError
from dualgrad.ops import ShapeError

HERE = os.path.basename(__file__)


def here(ahead=1):
    """file:line of the caller's line `ahead` lines down (the line that builds the node)."""
    return f"{HERE}:{sys._getframe(1).f_lineno + ahead}"


def test_known_dims_mismatch_raises_at_build_time_at_the_users_line():
    x = graph.placeholder(graph.float32, (32, 64))
    w = graph.Variable(np.zeros((128, 10), np.float32))
    where = here(2)
    with pytest.raises(ShapeError) as ei:
        graph.matmul(x, w)
    msg = str(ei.value)
    assert "matmul: cannot multiply (32, 64) by (128, 10): inner dimensions 64 != 128" in msg
    assert where in msg and ei.value.location[1] == int(where.split(":")[1])


def test_composite_and_layer_errors_name_the_users_line():
    x = graph.placeholder(graph.float32, (None, 8, 8, 3))
    w = graph.Variable(np.zeros((3, 3, 2, 4), np.float32))
    where = here(3)
    with pytest.raises(ShapeError, match=r"input \(\?, 8, 8, 3\) \(NHWC\) has 3 channels but "
                                         r"filter \(3, 3, 2, 4\) .* expects 2") as ei:
        graph.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    assert where in str(ei.value)
    h = graph.placeholder(graph.float32, (None, 5))
    where = here(2)
    with pytest.raises(ShapeError, match=r"inner dimensions 3 != 7") as ei:
        graph.nn.dense(h, 3) @ np.ones((7, 2), np.float32)
    assert where in str(ei.value)


def test_none_dim_mismatch_raises_at_run_time_naming_the_creation_line():
    x = graph.placeholder(graph.float32, (None, 10), name="logits")
    bias = graph.placeholder(graph.float32, (None, 10), name="per_example_bias")
    where = here()
    y = graph.add(x, bias, name="biased")
    loss = graph.reduce_mean(y)
    with graph.Session(optimize=False) as s:
        assert s.run(loss, {x: np.ones((4, 10)), bias: np.ones((4, 10))}) == 2.0
        with pytest.raises(InvalidArgumentError) as ei:
            s.run(loss, {x: np.ones((32, 10)), bias: np.ones((16, 10))})
    e = ei.value
    msg = str(e)
    assert isinstance(e, ShapeError) and isinstance(e, ValueError)
    assert "add: cannot broadcast (32, 10), (16, 10)" in msg
    assert "'biased' (op add)" in msg and "defined at " in msg and where in msg
    assert "with input shapes (32, 10), (16, 10)" in msg
    assert isinstance(e.__cause__, ValueError) and e.node is y.op
    assert e.input_shapes == [(32, 10), (16, 10)]


def test_kernel_failure_at_run_time_is_an_invalid_argument_error():
    table = graph.Variable(np.zeros((5, 3), np.float32), name="table")
    ids = graph.placeholder(graph.int64, (None,), name="ids")
    where = here()
    rows = graph.nn.embedding_lookup(table, ids)
    with graph.Session(optimize=False) as s:
        s.run(table.initializer)
        with pytest.raises(InvalidArgumentError) as ei:
            s.run(rows, {ids: [0, 7]})
    msg = str(ei.value)
    assert "index 7 is out of range" in msg and "(op take, part of embedding)" in msg
    assert where in msg
    assert not isinstance(ei.value, ShapeError) and isinstance(ei.value.__cause__, IndexError)


def test_error_in_a_gradient_node_names_the_forward_op_and_its_line():
    x = graph.placeholder(graph.float32, (None,), name="x")
    fwd_line = here()
    y = graph.multiply(x, 3.0, name="scaled")
    g_in = graph.placeholder(graph.float32, (None,), name="upstream")
    grad_line = here()
    (dx,) = graph.gradients(y, [x], grad_ys=[g_in])
    with graph.Session(optimize=False) as s:
        assert s.run(dx, {x: [1.0, 2.0], g_in: [1.0, 1.0]}).tolist() == [3.0, 3.0]
        with pytest.raises(ShapeMismatchError) as ei:
            s.run(dx, {x: [1.0, 2.0], g_in: [1.0, 1.0, 1.0]})
    msg = str(ei.value)
    assert "gradients/scaled_grad/" in msg and grad_line in msg
    assert "it computes the gradient of node 'scaled' (op mul)" in msg and fwd_line in msg
    assert ei.value.node.grad_of is y.op


def test_shape_error_while_building_a_gradient_names_the_forward_op():
    x = graph.placeholder(graph.float32, (3,))
    y = x * 2.0
    with pytest.raises(ShapeError, match=r"the gradient of 'mul' \(op mul\)"):
        graph.gradients(y, [x], grad_ys=[graph.constant(np.ones(4, np.float32))])


def test_errors_inside_a_cond_branch_name_the_line_inside_the_branch():
    x = graph.placeholder(graph.float32, (None,), name="x")
    other = graph.placeholder(graph.float32, (None,), name="other")
    lines = {}

    def true_fn():
        lines["t"] = here()
        return x + other

    y = graph.cond(graph.reduce_sum(x) > 0, true_fn, lambda: x)
    with graph.Session(optimize=False) as s:
        assert s.run(y, {x: [-1.0, -2.0], other: [1.0]}).tolist() == [-1.0, -2.0]
        with pytest.raises(ShapeMismatchError) as ei:
            s.run(y, {x: [1.0, 2.0], other: [1.0, 2.0, 3.0]})
    assert lines["t"] in str(ei.value) and "cond/then/add" in str(ei.value)


def test_cond_branch_shape_error_surfaces_at_build_time():
    x = graph.placeholder(graph.float32, (3,))
    where = here(2)
    with pytest.raises(ShapeError, match="cannot broadcast") as ei:
        graph.cond(x[0] > 0, lambda: x + np.ones(4, np.float32), lambda: x)
    assert where in str(ei.value) and "cond/then/add" in str(ei.value)


def test_while_loop_invariant_violations():
    i = graph.constant(0)
    v = graph.constant(np.ones(2, np.float32))
    with pytest.raises(ShapeError, match=r"changes loop variable 1 from shape \(2,\) to "
                                         r"\(4,\)"):
        graph.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, graph.concat([v, v], 0)),
                         [i, v])
    grow = graph.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, graph.concat([v, v], 0)),
                            [i, v], shape_invariants=[(), (None,)])
    with graph.Session(optimize=False) as s:
        assert s.run(grow)[1].shape == (8,)
    with pytest.raises(ShapeError, match="scalar bool"):
        graph.while_loop(lambda i: i, lambda i: i + 1, [i])


def test_reflect_pad_of_an_unknown_dim_says_so():
    with graph.Graph().as_default():
        x = graph.placeholder(graph.float32, (None, 3))
        with pytest.raises(NotImplementedError, match="dim 0 of the input is unknown"):
            graph.pad(x, [[1, 1], [0, 0]], mode="REFLECT")
