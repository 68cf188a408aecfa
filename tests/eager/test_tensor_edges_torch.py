"""Edges of everyday tensor calls, each against torch: formatting a 0-d tensor, item() of
several elements, unique with nans, reductions without an identity over nothing, and the
comparison methods given a foreign operand. Each was a difference found by running the
same calls on both libraries."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402
from dualgrad.ops import ShapeError  # noqa: E402


@pytest.mark.parametrize("spec", [".2f", ".3e", "", "10.4f", "g"])
def test_a_0d_tensor_formats_as_its_number(spec):
    for value in (1.23456, -0.5, 3):
        assert format(eager.tensor(value), spec) == format(torch.tensor(value), spec)
    with pytest.raises(TypeError):
        format(eager.ones(2), ".2f")
    assert format(eager.ones(2), "") == str(eager.ones(2))


def test_item_of_several_elements_raises_torchs_runtime_error():
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(2, 3).item()
    with pytest.raises(RuntimeError) as ours:
        eager.ones(2, 3).item()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("kw", [{}, {"return_counts": True}, {"return_inverse": True},
                                {"return_inverse": True, "return_counts": True}])
def test_unique_keeps_every_nan_apart(kw):
    values = [2.0, math.nan, 1.0, math.nan, 2.0]
    ours, theirs = eager.unique(eager.tensor(values), **kw), torch.unique(torch.tensor(values),
                                                                         **kw)
    ours, theirs = (ours if isinstance(ours, tuple) else (ours,)), \
        (theirs if isinstance(theirs, tuple) else (theirs,))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("call", ["max()", "min()", "amax()", "argmax()", "argmin()",
                                  "max(0)", "min(0)", "amax(0)", "argmax(0)", "amin(0)"])
def test_reductions_without_identity_refuse_an_empty_dim(call):
    with pytest.raises((RuntimeError, IndexError)):
        eval(f"torch.zeros(0, 3).{call}")
    with pytest.raises(ShapeError, match="reduction dim"):
        eval(f"eager.zeros(0, 3).{call}")
    # over the non-empty dim: an empty result, in both
    if "(0)" in call:
        other = call.replace("(0)", "(1)")
        a, b = eval(f"eager.zeros(0, 3).{other}"), eval(f"torch.zeros(0, 3).{other}")
        a, b = (a[0], b[0]) if isinstance(b, tuple) else (a, b)
        assert tuple(a.shape) == tuple(b.shape)


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("other", [None, "a", [1.0, 2.0]], ids=["None", "str", "list"])
def test_comparison_methods_refuse_a_foreign_operand(name, other):
    with pytest.raises(TypeError):
        getattr(torch.ones(2), name)(other)
    with pytest.raises(TypeError, match=f"{name}\\(\\) received an invalid combination"):
        getattr(eager.ones(2), name)(other)
    assert getattr(eager.ones(2), name)(1.0).tolist() == getattr(torch.ones(2), name)(1.0).tolist()


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "sin", "cos"])
def test_an_unsupported_out_argument_is_torchs_kind_of_error(name):
    """dualgrad does not take `out=`: a TypeError naming it, not NumPy's ufunc message."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        getattr(eager, name)(eager.ones(2), out=eager.ones(2))
    np.testing.assert_allclose(getattr(eager, name)(input=eager.ones(2)).numpy(),
                               getattr(torch, name)(input=torch.ones(2)).numpy(), rtol=1e-6)
