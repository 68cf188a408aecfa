"""Generated from the op registry: every op and composite, every sample, in the graph engine.

Forward: the graph's result equals the op's kernel run directly (and eager's, once eager/
is importable). Gradients: `gradients()` of sum(out * w) equals a float64 central finite
difference (and eager's backward(), once available). Error samples raise ShapeError at
build time, with the op's message and this file's line.
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

from dualgrad import graph
from dualgrad.ops import ShapeError

from dualgrad import ops
from tests.opinfo import graph_args, numeric_grad, params

HERE = os.path.basename(__file__)


def _is_op(c):
    return c.name in ops.REGISTRY


OK_OPS = params("ok", _is_op)
ERR_OPS = params("error", _is_op)
GRAD_OPS = params("ok", lambda c: _is_op(c) and c.differentiable)
OK_COMP = params("ok", lambda c: not _is_op(c))
GRAD_COMP = params("ok", lambda c: not _is_op(c) and c.differentiable)
ERR_COMP = params("error", lambda c: not _is_op(c))


def _build(fn, args, attrs):
    return fn(*args, **attrs)


def _run(out, feeds):
    with graph.Session(optimize=False) as s:
        return s.run(out, feeds)


def _check_static(t, value):
    """The value fits the static spec the shape rule gave at build time."""
    assert value.dtype == t.dtype, f"{t.name}: kernel gave {value.dtype}, rule said {t.dtype}"
    assert len(value.shape) == len(t.shape)
    assert all(d is None or d == v for d, v in zip(t.shape, value.shape)), (t.shape, value.shape)


# -- forward ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", OK_OPS)
def test_op_forward_matches_kernel(case):
    op, sample, arrays = ops.REGISTRY[case.name], case.sample, case.args(np.float32)
    args, feeds = graph_args(arrays)
    out = op.fn(*args, **sample.attrs)
    got = np.asarray(_run(out, feeds))
    want = np.asarray(op.kernel(*arrays, **sample.attrs))
    np.testing.assert_array_equal(got, want)
    _check_static(out, got)


@pytest.mark.parametrize("case", OK_OPS)
def test_op_forward_with_unknown_dims(case):
    """Same op with every dim None at build time: it builds (or refuses with ShapeError,
    never another exception) and then gives the kernel's result."""
    op, sample, arrays = ops.REGISTRY[case.name], case.sample, case.args(np.float32)
    args, feeds = graph_args(arrays, unknown_dims=True)
    try:
        out = op.fn(*args, **sample.attrs)
    except ShapeError:
        return
    got = np.asarray(_run(out, feeds))
    np.testing.assert_array_equal(got, np.asarray(op.kernel(*arrays, **sample.attrs)))
    _check_static(out, got)


@pytest.mark.parametrize("case", OK_COMP)
def test_composite_forward_matches_numpy(case):
    sample, arrays = case.sample, case.args(np.float32)
    args, feeds = graph_args(arrays)
    out = _build(case.fn, args, sample.attrs)
    got = np.asarray(_run(out, feeds))
    want = np.asarray(case.fn(*arrays, **sample.attrs))   # the same composite, on NumPy
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    _check_static(out, got)


# -- gradients -------------------------------------------------------------------------------
def _check_grads(case):
    fn, attrs = case.fn, case.sample.attrs
    arrays = case.args(np.float64, seed=1)
    idx = case.random_inputs(arrays)
    args, feeds = graph_args(arrays)
    out = _build(fn, args, attrs)
    if out.dtype.kind != "f" or not idx:
        pytest.skip("no float output or no float input to differentiate")
    w = np.random.default_rng(2).standard_normal(
        np.shape(fn(*arrays, **attrs))).astype(np.float64)
    loss = graph.reduce_sum(out * w)
    grads = graph.gradients(loss, [args[i] for i in idx])
    got = _run([g if g is not None else graph.zeros_like(args[i]) for g, i in zip(grads, idx)],
               feeds)

    def f(*arrs):
        return float(np.sum(np.asarray(fn(*arrs, **attrs)) * w))
    for i, g in zip(idx, got):
        np.testing.assert_allclose(g, numeric_grad(f, arrays, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"gradient of input {i}")
    return arrays, idx, got


@pytest.mark.parametrize("case", GRAD_OPS + GRAD_COMP)
def test_gradient_matches_finite_difference(case):
    _check_grads(case)


# -- error samples ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", ERR_OPS + ERR_COMP)
def test_error_sample_raises_at_build_time(case):
    sample = case.sample
    args, _ = graph_args(case.args(np.float32))
    line = sys._getframe().f_lineno + 2
    with pytest.raises(ShapeError) as ei:
        case.fn(*args, **sample.attrs)
    msg = str(ei.value)
    assert re.search(sample.match, msg), msg
    assert f"{HERE}:{line}" in msg, msg



# -- against eager ------------------------------------------------------------------------------


def _eager_tensors(eager, arrays, idx, requires_grad):
    return [eager.tensor(a, requires_grad=requires_grad and i in idx)
            if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]


@pytest.mark.parametrize("case", OK_OPS + OK_COMP)
def test_forward_matches_eager(case):
    from dualgrad import eager
    fn, sample = case.fn, case.sample
    arrays = case.args(np.float32)
    args, feeds = graph_args(arrays)
    got = np.asarray(_run(_build(fn, args, sample.attrs), feeds))
    want = fn(*_eager_tensors(eager, arrays, (), False), **sample.attrs)
    np.testing.assert_allclose(got, np.asarray(want.data), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", GRAD_OPS + GRAD_COMP)
def test_gradient_matches_eager_backward(case):
    from dualgrad import eager
    fn, sample = case.fn, case.sample
    arrays, idx, got = _check_grads(case)
    ts = _eager_tensors(eager, arrays, idx, True)
    out = fn(*ts, **sample.attrs)
    w = np.random.default_rng(2).standard_normal(out.shape).astype(np.float64)
    (out * eager.tensor(w)).sum().backward()
    for i, g in zip(idx, got):
        want = ts[i].grad
        want = np.zeros_like(arrays[i]) if want is None else np.asarray(want.data)
        np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-9)

