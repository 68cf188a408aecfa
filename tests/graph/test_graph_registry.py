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

from .graph_test_samples import arrays_for, composite_cases, float_inputs, graph_args, numeric_grad, \
    op_cases

HERE = os.path.basename(__file__)

OK_OPS = [pytest.param(op, s, id=f"{name}-{i}") for name, op, i, s in op_cases() if not s.match]
ERR_OPS = [pytest.param(op, s, id=f"{name}-{i}") for name, op, i, s in op_cases() if s.match]
GRAD_OPS = [pytest.param(op, s, id=f"{name}-{i}") for name, op, i, s in op_cases()
            if not s.match and s.grad and op.vjp is not None]
OK_COMP = [pytest.param(c, s, id=f"{name}-{i}") for name, c, i, s in composite_cases()
           if not s.match]
ERR_COMP = [pytest.param(c, s, id=f"{name}-{i}") for name, c, i, s in composite_cases()
            if s.match]


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
@pytest.mark.parametrize("op,sample", OK_OPS)
def test_op_forward_matches_kernel(op, sample):
    arrays = arrays_for(sample, np.float32)
    args, feeds = graph_args(arrays)
    out = op.fn(*args, **sample.attrs)
    got = np.asarray(_run(out, feeds))
    want = np.asarray(op.kernel(*arrays, **sample.attrs))
    np.testing.assert_array_equal(got, want)
    _check_static(out, got)


@pytest.mark.parametrize("op,sample", OK_OPS)
def test_op_forward_with_unknown_dims(op, sample):
    """Same op with every dim None at build time: it builds (or refuses with ShapeError,
    never another exception) and then gives the kernel's result."""
    arrays = arrays_for(sample, np.float32)
    args, feeds = graph_args(arrays, unknown_dims=True)
    try:
        out = op.fn(*args, **sample.attrs)
    except ShapeError:
        return
    got = np.asarray(_run(out, feeds))
    np.testing.assert_array_equal(got, np.asarray(op.kernel(*arrays, **sample.attrs)))
    _check_static(out, got)


@pytest.mark.parametrize("comp,sample", OK_COMP)
def test_composite_forward_matches_numpy(comp, sample):
    arrays = arrays_for(sample, np.float32)
    args, feeds = graph_args(arrays)
    out = _build(comp.fn, args, sample.attrs)
    got = np.asarray(_run(out, feeds))
    want = np.asarray(comp.fn(*arrays, **sample.attrs))   # the same composite, on NumPy
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    _check_static(out, got)


# -- gradients -------------------------------------------------------------------------------
def _check_grads(fn, sample, attrs):
    arrays = arrays_for(sample, np.float64, seed=1)
    idx = float_inputs(sample, arrays)
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

    def f(arrs):
        return float(np.sum(np.asarray(fn(*arrs, **attrs)) * w))
    for i, g in zip(idx, got):
        np.testing.assert_allclose(g, numeric_grad(f, arrays, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"gradient of input {i}")
    return arrays, idx, got


@pytest.mark.parametrize("op,sample", GRAD_OPS)
def test_op_gradient_matches_finite_difference(op, sample):
    _check_grads(op.fn, sample, sample.attrs)


@pytest.mark.parametrize("comp,sample", [p for p in OK_COMP if p.values[1].grad])
def test_composite_gradient_matches_finite_difference(comp, sample):
    _check_grads(comp.fn, sample, sample.attrs)


# -- error samples ---------------------------------------------------------------------------
def _check_build_error(fn, sample):
    arrays = arrays_for(sample, np.float32)
    args, _ = graph_args(arrays)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(ShapeError) as ei:
        fn(*args, **sample.attrs)
    msg = str(ei.value)
    assert re.search(sample.match, msg), msg
    assert f"{HERE}:{line}" in msg, msg


@pytest.mark.parametrize("op,sample", ERR_OPS)
def test_op_error_sample_raises_at_build_time(op, sample):
    _check_build_error(op.fn, sample)


@pytest.mark.parametrize("comp,sample", ERR_COMP)
def test_composite_error_sample_raises_at_build_time(comp, sample):
    _check_build_error(comp.fn, sample)


# -- against eager ------------------------------------------------------------------------------


def _eager_tensors(eager, arrays, idx, requires_grad):
    return [eager.tensor(a, requires_grad=requires_grad and i in idx)
            if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]


@pytest.mark.parametrize("op,sample", OK_OPS + OK_COMP)
def test_forward_matches_eager(op, sample):
    from dualgrad import eager
    fn = op.fn
    arrays = arrays_for(sample, np.float32)
    args, feeds = graph_args(arrays)
    got = np.asarray(_run(_build(fn, args, sample.attrs), feeds))
    want = fn(*_eager_tensors(eager, arrays, (), False), **sample.attrs)
    np.testing.assert_allclose(got, np.asarray(want.data), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,sample", GRAD_OPS + [p for p in OK_COMP if p.values[1].grad])
def test_gradient_matches_eager_backward(op, sample):
    from dualgrad import eager
    fn = op.fn
    arrays, idx, got = _check_grads(fn, sample, sample.attrs)
    ts = _eager_tensors(eager, arrays, idx, True)
    out = fn(*ts, **sample.attrs)
    w = np.random.default_rng(2).standard_normal(out.shape).astype(np.float64)
    (out * eager.tensor(w)).sum().backward()
    for i, g in zip(idx, got):
        want = ts[i].grad
        want = np.zeros_like(arrays[i]) if want is None else np.asarray(want.data)
        np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-9)

