"""Error messages a user meets in eager mode: the op, the shapes, the call, the line."""
import inspect

import pytest

from dualgrad import eager
import dualgrad.eager.nn.functional as F
from dualgrad import ops


def _next_line():
    return inspect.currentframe().f_back.f_lineno + 1


def test_error_inside_a_composite_names_the_composite_and_the_line():
    x = eager.randn(3, 4)
    with pytest.raises(ops.ShapeError) as info:
        line = _next_line()
        F.softmax(x, dim=3)
    msg = str(info.value)
    assert msg.startswith("max: axis 3 is out of range for 2-d input of (3, 4)")
    assert f"in softmax, at tests/eager/test_errors.py:{line}" in msg


def test_transpose_with_an_out_of_range_dim_is_a_clear_index_error():
    with pytest.raises(IndexError) as info:
        line = _next_line()
        eager.randn(3, 4).transpose(0, 2)
    assert "transpose: axis 2 is out of range for 2-d input of (3, 4)" in str(info.value)
    assert f"test_errors.py:{line}" in str(info.value)


def test_stack_of_different_shapes_names_stack():
    with pytest.raises(ops.ShapeError, match=r"stack: all tensors must have the same shape, "
                                             r"got \(2, 3\), \(3, 3\)"):
        eager.stack([eager.randn(2, 3), eager.randn(3, 3)])
