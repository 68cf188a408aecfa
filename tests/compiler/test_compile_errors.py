"""compiler.compile's error path: a user's shape bug met while tracing reads as eager's error.

The shape-error observatory (tests/comparisons/test_shapes.py) runs the catalogue's compiled
scripts; these are the small cases behind what it found.
"""
from __future__ import annotations

import traceback
import warnings

import numpy as np
import pytest

from dualgrad import compiler
from dualgrad import eager
from dualgrad import ops


def _line(marker):
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return i
    raise AssertionError(marker)


def test_a_shape_error_met_while_tracing_shows_no_compiler_internals():
    w = eager.ones(5, 2)

    @compiler.compile
    def f(x):
        return x @ w  # bug
    with pytest.raises(ops.ShapeError) as info:
        f(eager.ones(3, 4))
    # NOTE: the eager run that raises it used to run inside `except _Failed`, so the user saw
    # the internal exception and its compiler frames above their own error
    text = "".join(traceback.format_exception(info.value))
    assert "_Failed" not in text and "During handling" not in text
    assert f"test_compile_errors.py:{_line('bug')}" in str(info.value)


def test_a_call_that_raised_is_traced_again_once_the_bug_is_fixed():
    state = {"w": eager.ones(5, 2)}

    @compiler.compile
    def f(x):
        return x @ state["w"]
    with pytest.raises(ops.ShapeError):
        f(eager.ones(3, 4))
    state["w"] = eager.ones(4, 2)                # fixed, as one would in a notebook
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(eager.ones(3, 4))
    assert out.shape == (3, 2) and f.traces == 2 and f.graph is not None   # compiled, not eager


def test_an_error_on_a_retrace_says_the_signature_changed():
    @compiler.compile
    def f(x):
        return x.view(32, -1).sum()

    f(eager.randn(32, 4))
    with pytest.raises(ops.ShapeError) as info:
        f(eager.randn(12, 4))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "new input signature and was traced again (trace 2)" in notes
    assert "float32[12, 4]" in notes and "float32[32, 4]" in notes


def test_batchnorm_compiles_in_training_updating_its_running_statistics_and_in_eval():
    from dualgrad.eager import nn
    eager.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU())
    twin = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU())
    twin.load_state_dict(m.state_dict())
    x = eager.randn(4, 1, 5, 5)
    cm = compiler.compile(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # NOTE: no graph break: the update is traced
        for k in (1.0, 2.0):
            got = cm(x * k)
            np.testing.assert_allclose(got.detach().numpy(), twin(x * k).detach().numpy(),
                                       rtol=1e-5)
            np.testing.assert_allclose(m[1].running_var.numpy(),
                                       twin[1].running_var.numpy(), rtol=1e-6)
    np.testing.assert_allclose(m[1].running_mean.numpy(), twin[1].running_mean.numpy(),
                               rtol=1e-6, atol=1e-7)
    m.eval()
    twin.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = cm(x)
    np.testing.assert_allclose(got.detach().numpy(), twin(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_double_backward_through_a_compiled_call_raises_instead_of_a_constant_gradient():
    from dualgrad.eager import nn
    critic = nn.Sequential(nn.Linear(1, 4), nn.Tanh(), nn.Linear(4, 1))
    mid = eager.tensor([[0.5], [1.5]], requires_grad=True)
    out = compiler.compile(critic)(mid)
    with pytest.raises(RuntimeError, match="double backward through a compiled call"):
        eager.autograd.grad(out, mid, grad_outputs=eager.ones_like(out), create_graph=True)
    out = compiler.compile(critic)(mid)     # a first-order gradient still works
    g = eager.autograd.grad(out, mid, grad_outputs=eager.ones_like(out))[0]
    ref = eager.autograd.grad(critic(mid).sum(), mid)[0]
    np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-5)
