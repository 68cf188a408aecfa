"""Algebraic simplification never changes a value: each binary op with a constant operand on
either side (0, 1, -1, 0.5, 2 and a zero tensor), chained twice, and the gradients that meet
a zero upstream, over inputs holding inf, -inf, nan and -0.0, in every float dtype and in
integers; the optimised graph gives what the unoptimised one gives (nan where it is nan),
and compile() what eager gives. Before, x * 0 and 0 @ w became zeros whatever x and w held
(nan in eager and the unoptimised graph when they held an inf or a nan)."""
import itertools

import numpy as np
import pytest

from dualgrad import compiler, eager, graph

SPECIAL = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1.5, -2.0, 3.0, 0.5]
DTYPES = ["float16", "float32", "float64", "int32", "int64"]
CONSTS = [0, 1, -1, 0.5, 2]
RTOL = {"float16": 1e-3, "float32": 3e-7, "float64": 1e-15, "int32": 0, "int64": 0}
OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b,
    "maximum": lambda a, b: graph.maximum(a, b), "minimum": lambda a, b: graph.minimum(a, b),
    "matmul": lambda a, b: graph.matmul(a, b),
}


def _input(dtype):
    if np.dtype(dtype).kind == "f":
        return np.array(SPECIAL, dtype).reshape(3, 3)
    return np.arange(-3, 6).reshape(3, 3).astype(dtype)


def _const(value, dtype):
    if np.dtype(dtype).kind != "f" and (value != int(value)):
        value = int(value * 2)
    return graph.constant(np.full((3, 3), value, dtype))


def _optimised_and_not(g, fetches, feeds):
    out = []
    for optimize in (False, True):
        with graph.Session(g, optimize=optimize) as s:
            out.append(s.run(fetches, feeds))
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_a_constant_operand_never_changes_a_value(op, dtype):
    g = graph.Graph()
    fetches = []
    with g.as_default():
        x = graph.placeholder(dtype, (3, 3))
        for value, left in itertools.product(CONSTS, (True, False)):
            if op == "pow" and np.dtype(dtype).kind != "f" and (value < 0 or not left):
                continue                  # integers to a negative power raise; 2 ** x grows
            c = _const(value, dtype)
            once = OPS[op](c, x) if left else OPS[op](x, c)
            fetches.append(once)
            if once.dtype == x.dtype:     # NOTE: TF1's `/` of integers is a float64
                fetches.append(OPS[op](once, c) if left else OPS[op](c, once))
    want, got = _optimised_and_not(g, fetches, {x: _input(dtype)})
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype, (k, a.dtype, b.dtype)
        # NOTE: within rounding (x ** 0.5 may be computed as sqrt, correctly rounded where
        # NumPy's float32 power is 1 ulp off); inf and nan exactly where they are
        np.testing.assert_allclose(a, b, rtol=RTOL[dtype], atol=0, err_msg=f"fetch {k}")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_zero_gradient_meets_inf_and_nan_as_unoptimised(dtype):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(dtype, (3, 3))
        w = graph.placeholder(dtype, (3, 3))
        zero = graph.constant(np.zeros((3, 3), dtype))
        outs = [graph.sigmoid(x), graph.tanh(x), graph.matmul(x, w), graph.matmul(zero, w)]
        loss = graph.add_n([graph.reduce_sum(o * zero) for o in outs])
        fetches = graph.gradients(loss, [x, w])
    want, got = _optimised_and_not(g, fetches, {x: _input(dtype), w: _input(dtype).T})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert np.isnan(want[0]).any()


@pytest.mark.parametrize("fn", [
    lambda x: x * 0.0, lambda x: 0 * x + 1, lambda x: eager.zeros(3, 3) @ x,
    lambda x: (x * 0).sum(0), lambda x: x.t() @ eager.zeros(3, 3),
], ids=["x*0.0", "0*x+1", "zeros@x", "sum(x*0)", "x.t()@zeros"])
def test_compile_gives_eager_values_with_inf_and_nan(fn):
    x = eager.tensor(_input("float32"))
    want = fn(x).numpy()
    got = compiler.compile(fn)(x).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert np.isnan(want).any()
