"""The eager tape: accumulation, reuse, retain_graph, grad mode, indexing, repr, errors."""
import inspect
import os

import numpy as np
import pytest

from dualgrad import eager
from dualgrad import ops


def _t(values, requires_grad=True):
    return eager.tensor(np.asarray(values, dtype=np.float32), requires_grad=requires_grad)


# -- accumulation and reuse -------------------------------------------------------------------
def test_gradients_accumulate_over_two_backward_calls():
    x = _t([1.0, -2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, -1.0, 9.0])


def test_a_tensor_used_several_times_sums_its_gradients():
    x = _t([0.5, -1.0, 2.0])
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy() + 1)


def test_diamond_graph():
    x = _t([1.0, 2.0])
    a, b = x.exp(), x * 2.0
    (a * b).sum().backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xn) * 2 * xn + np.exp(xn) * 2, rtol=1e-6)


def test_leaf_grad_is_a_writable_array_of_its_own():
    # sum's gradient is a read-only broadcast view, and add hands the same array to both sides
    x, y = _t([1.0, 2.0, 3.0]), _t([4.0, 5.0, 6.0])
    (x + y).sum().backward()
    assert x.grad.numpy().flags.writeable and y.grad.numpy().flags.writeable
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    x.grad.numpy()[...] = 0.0
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0, 1.0])
    g = _t([1.0, 1.0, 1.0], requires_grad=False)
    x.grad = None
    x.backward(g)
    assert not np.shares_memory(x.grad.numpy(), g.numpy())


# -- retain_graph ---------------------------------------------------------------------------
def test_retain_graph_allows_a_second_backward():
    x = _t([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_second_backward_without_retain_graph_is_a_clear_error():
    x = _t([1.0, 2.0])
    y = (x.exp() * 2.0).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"backward through the graph a second time") as info:
        y.backward()
    assert "retain_graph=True" in str(info.value)


def _backward_peak(retain_graph):
    """The peak of NumPy memory during the backward of a 40-op chain on 1 MB arrays, in MB,
    with no Python reference to any intermediate."""
    import tracemalloc
    x = eager.tensor(np.ones(1 << 18, np.float32), requires_grad=True)
    y = x
    for _ in range(40):
        y = y * 1.01
    loss = y.sum()
    del y
    tracemalloc.start()
    try:
        loss.backward(retain_graph=retain_graph)
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def test_backward_lets_go_of_each_inner_gradient_and_entry_as_it_goes():
    # as torch's engine: an inner value's gradient goes once its rule has run, and without
    # retain_graph so do the entry's saved values; before, 40 gradients (and 40 outputs) of
    # 1 MB each were alive at the end of the walk
    assert _backward_peak(retain_graph=False) < 8
    assert _backward_peak(retain_graph=True) < 8     # gradients go, the retained graph stays


# -- grad mode, detach ------------------------------------------------------------------------
def test_no_grad_records_nothing():
    x = _t([1.0, 2.0])
    with eager.no_grad():
        y = x * 2.0 + 1.0
        assert not eager.is_grad_enabled()
    assert eager.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_detach_cuts_the_tape_and_shares_values():
    x = _t([1.0, 2.0])
    d = (x * 3.0).detach()
    assert not d.requires_grad and d.grad_fn is None
    np.testing.assert_allclose(d.numpy(), [3.0, 6.0])
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 6.0])   # d is a constant


# -- backward's argument ----------------------------------------------------------------------
def test_backward_with_gradient_on_a_non_scalar():
    x = _t([1.0, 2.0, 3.0])
    y = x * x
    y.backward(_t([1.0, 0.5, -1.0], requires_grad=False))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, -6.0])


def test_backward_of_a_non_scalar_without_gradient_is_an_error():
    y = _t([1.0, 2.0]) * 2.0
    with pytest.raises(RuntimeError, match=r"only for scalar outputs.*\(2,\)"):
        y.backward()


# -- no implicit truthiness, repr ------------------------------------------------------------
def test_bool_of_a_non_scalar_raises():
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(_t([1.0, 2.0]) > 0)
    assert bool(_t([3.0]) > 0)
    assert not bool(eager.tensor(0.0))


def test_repr_shows_values_and_grad_fn():
    x = _t([1.5, -2.0])
    y = x * 2.0
    assert repr(y) == "tensor([ 3., -4.], grad_fn=<MulBackward0>)"
    assert "requires_grad=True" in repr(x)
    assert "grad_fn" not in repr(x.detach()) and "requires_grad" not in repr(x.detach())


def test_print_in_the_middle_of_a_forward_pass(capsys):
    x = _t([[1.0, 2.0], [3.0, 4.0]])
    h = (x * 2.0).tanh()
    print(h)
    print(h.sum())
    h.sum().backward()
    out = capsys.readouterr().out
    assert "tensor([[0.9640, 0.9993]," in out and "grad_fn=<TanhBackward0>" in out and "grad_fn=<SumBackward0>" in out
    assert "0.964" in out          # tanh(2)
    assert x.grad is not None


# -- pow ------------------------------------------------------------------------------------
def test_small_integer_power_on_negatives_is_a_product_and_keeps_float32():
    xn = np.array([-2.0, -0.5, 0.0, 1.5, -3.0], dtype=np.float32)
    x = eager.tensor(xn, requires_grad=True)
    y = x ** 3
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.detach().numpy(), (x * x * x).detach().numpy())
    assert not np.isnan(y.detach().numpy()).any()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * xn * xn, rtol=1e-6)
    assert (x ** 2).dtype == np.float32 and (x ** 2.0).dtype == np.float32
    np.testing.assert_array_equal((x ** 2.0).detach().numpy(), xn * xn)


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        eager.tensor([1, 2, 3], requires_grad=True)
    i = eager.tensor([1, 2, 3])
    assert i.dtype == np.int64
    y = i * _t([1.0, 1.0, 1.0])                 # an int input gets no gradient
    y.sum().backward()
    assert i.grad is None


# -- indexing ---------------------------------------------------------------------------------
_X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0
_INDEXES = [
    (1,), (-1,), (slice(None), -2), (slice(0, 2), slice(None, None, 2)),
    (None,), (slice(None), None, 1), (Ellipsis, 1), (Ellipsis, slice(1, 3)), (1, Ellipsis, None),
    (slice(1, None, 2),), (0, slice(1, None), -1),  # a negative step raises, as torch's
    (np.array([1, 0, 1]),), ([0, 0],), (slice(None), [2, 0]), (Ellipsis, [3, 1, 1]),
    (slice(None), np.array([[0, 1], [2, 2]])),
]


@pytest.mark.parametrize("index", _INDEXES, ids=repr)
def test_indexing_forward_and_backward_against_numpy(index):
    x = eager.tensor(_X, requires_grad=True)
    y = x[index if len(index) > 1 else index[0]]
    expected = _X[index]
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    w = np.random.default_rng(0).uniform(0.5, 1.5, expected.shape).astype(np.float32)
    (y * w).sum().backward()
    g = np.zeros_like(_X)
    np.add.at(g, index, w)
    np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-6)


def test_indexing_with_an_integer_tensor_is_take():
    x = eager.tensor(_X, requires_grad=True)
    idx = eager.tensor([2, 0, 2])
    y = x[:, idx]
    assert y.grad_fn.name() == "TakeBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), _X[:, [2, 0, 2]])
    y.sum().backward()
    expected = np.zeros_like(_X)
    expected[:, 0] = 1.0
    expected[:, 2] = 2.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    y1 = x[..., eager.tensor([3, 3])]
    np.testing.assert_array_equal(y1.detach().numpy(), _X[..., [3, 3]])


def test_indexing_with_scalar_tensors_and_numpy_ints():
    x = eager.tensor(_X)
    np.testing.assert_array_equal(x[np.int64(1), -1].numpy(), _X[1, -1])
    np.testing.assert_array_equal(x[eager.tensor(1)].numpy(), _X[1])


def test_boolean_mask_and_several_index_arrays_index_as_numpy():
    x = eager.tensor(_X)
    np.testing.assert_array_equal(x[x > 1.0].numpy(), _X[_X > 1.0])
    rows, cols = np.array([0, 1, 1]), np.array([2, 0, 1])
    np.testing.assert_array_equal(x[eager.tensor(rows), eager.tensor(cols)].numpy(),
                                  _X[rows, cols])


def test_boolean_mask_indexing_is_refused_with_advice_where_it_is_staged():
    with pytest.raises(IndexError, match="where"):
        ops.getitem(np.asarray(_X), _X > 1.0)


# -- shape errors -----------------------------------------------------------------------------
def _assert_is_ours(err, op, shapes, line):
    msg = str(err)
    assert msg.startswith(f"{op}: "), msg
    for s in shapes:
        assert s in msg, msg
    assert f"{os.path.basename(__file__)}:{line}" in msg, msg
    assert err.location == (__file__, line)
    assert "operands could not be broadcast" not in msg and "gufunc" not in msg
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


def test_shape_error_names_op_shapes_and_the_callers_line():
    a, b = eager.ones(2, 3, requires_grad=True), eager.ones(4, 5)
    with pytest.raises(ops.ShapeError) as info:
        line = inspect.currentframe().f_lineno + 1
        a + b
    _assert_is_ours(info.value, "add", ["(2, 3)", "(4, 5)"], line)
    assert "dimension -1 is 3 vs 5" in str(info.value)


def test_matmul_shape_error_from_a_function_and_a_method():
    x, w = eager.randn(32, 64), eager.randn(128, 10)
    with pytest.raises(ops.ShapeError) as info:
        line = inspect.currentframe().f_lineno + 1
        eager.matmul(x, w)
    _assert_is_ours(info.value, "matmul", ["(32, 64)", "(128, 10)"], line)
    assert "inner dimensions 64 != 128" in str(info.value)
    with pytest.raises(ops.ShapeError) as info:
        line = inspect.currentframe().f_lineno + 1
        x.reshape(5, -1)
    _assert_is_ours(info.value, "reshape", ["(32, 64)"], line)


def test_shape_error_inside_a_users_helper_points_at_the_helper_line():
    def helper(u, v):
        return u * v                    # the failing call is here, not in the test body

    with pytest.raises(ops.ShapeError) as info:
        helper(eager.ones(3), eager.ones(4))
    line = helper.__code__.co_firstlineno + 1
    _assert_is_ours(info.value, "mul", ["(3,)", "(4,)"], line)


def test_shape_error_from_a_layer_names_the_callers_line():
    layer = eager.nn.Linear(3, 4)
    with pytest.raises(ops.ShapeError) as info:
        line = inspect.currentframe().f_lineno + 1
        layer(eager.ones(2, 5))
    _assert_is_ours(info.value, "linear", ["(2, 5)", "(4, 3)"], line)


def test_shape_error_raised_by_the_shape_rule_is_a_value_error():
    with pytest.raises(ValueError):
        eager.cat([eager.ones(2, 3), eager.ones(2, 4)])


@pytest.mark.parametrize("compiled", (False, True))
def test_an_inputs_gradient_keeps_its_dtype_in_a_mixed_dtype_op(compiled):
    """torch's engine hands each input its gradient in its own dtype: a float32 weight times a
    float64 input has a float32 gradient (eager, and a compiled call scaled by a float64 g)."""
    from dualgrad import compiler
    x = eager.tensor(np.arange(3.0), requires_grad=True)
    w = eager.tensor(np.full(3, 0.5, np.float32), requires_grad=True)
    f = (lambda x, w: (x * w).sum() / eager.sum(w))
    out = (compiler.compile(f) if compiled else f)(x, w)
    (out * eager.tensor(2.0, dtype=eager.float64)).backward()
    assert (x.grad.dtype, w.grad.dtype) == (np.float64, np.float32)
    xs, total = np.arange(3.0), 1.5        # d/dw 2 (x . w) / sum(w) = 2 (x sum(w) - x . w) / sum(w)^2
    np.testing.assert_allclose(np.asarray(w.grad), 2 * (xs * total - xs @ np.full(3, 0.5)) /
                               total ** 2, rtol=1e-6)
