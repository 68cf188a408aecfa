"""Generated from the op registry: every op and composite sample through `compiler.compile`.

The sample's function is traced into a graph, optimised and replayed; its value and the
gradients of sum(out * w) with respect to every random input equal eager's, so compile joins
the engines' generated matrix (eager, graph, optimised graph, compiled).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager, ops
from tests.opinfo import params

RTOL, ATOL = 2e-5, 2e-5   # float32; fused tanh/erf are rational approximations


def _deterministic(case):
    op = ops.REGISTRY.get(case.name)
    return op is None or not op.stateful


def _tensors(args, grad_at=()):
    return [eager.tensor(a, requires_grad=i in grad_at) if isinstance(a, np.ndarray) else a
            for i, a in enumerate(args)]


def _compiled(case):
    attrs = case.sample.attrs

    def fn(*xs):
        return case.fn(*xs, **attrs)
    return compiler.compile(fn)


@pytest.mark.parametrize("case", params("ok", _deterministic))
def test_compiled_forward_equals_eager(case):
    args = case.args(np.float32)
    want = case.fn(*_tensors(args), **case.sample.attrs)
    if want.dtype.kind == "c":   # NOTE: compile() refuses complex values (docs/pytorch-compat.md)
        with pytest.raises(UserWarning, match="compile\\(\\) does not trace complex"):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                _compiled(case)(*_tensors(args))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a graph break would fall back silently
        got = _compiled(case)(*_tensors(args))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", params("ok", lambda c: _deterministic(c) and c.differentiable))
def test_compiled_gradients_equal_eager(case):
    args = case.args(np.float32, seed=1)
    idx = case.random_inputs(args)
    out = case.fn(*_tensors(args), **case.sample.attrs)
    if out.dtype.kind != "f" or not idx:
        pytest.skip("no float output or no float input to differentiate")
    w = eager.tensor(np.random.default_rng(2).uniform(0.5, 1.5, out.shape).astype(np.float32))
    grads = []
    for run in (lambda *xs: case.fn(*xs, **case.sample.attrs), _compiled(case)):
        ts = _tensors(args, idx)
        (run(*ts) * w).sum().backward()
        grads.append([np.zeros_like(args[i]) if ts[i].grad is None else ts[i].grad.numpy()
                      for i in idx])
    for i, want, got in zip(idx, *grads):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                                   err_msg=f"gradient of input {i}")
