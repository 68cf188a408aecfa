"""Tensor's surface comes from eager/surface.py's table: every row names a function that
exists, Tensor carries exactly what the table gives (its core's own definitions aside), and a
later row wins over an earlier one."""
import inspect

import pytest

from dualgrad import eager
from dualgrad.eager import core, surface


def test_every_row_resolves():
    for kind, source, *names in surface.SURFACE:
        if kind == surface.SELF_FIRST:
            missing = [n for n in names[0] if not callable(getattr(source, n, None))]
            assert not missing, f"{source.__name__}: {missing}"


def test_tensor_has_exactly_the_table_beyond_its_core():
    table = surface.table()
    for name, attr in table.items():
        got = inspect.getattr_static(eager.Tensor, name)
        if name in core.CORE_NAMES:
            continue
        assert inspect.unwrap(got) is inspect.unwrap(attr), name   # NOTE: aliases.py wraps
    # NOTE: what the core defines itself is not overridden by any row
    assert "__add__" in core.CORE_NAMES and "sum" not in core.CORE_NAMES


def test_a_later_row_wins():
    table = surface.table()
    # the comparison's in-place form (written back in self's dtype) wins over a body's
    assert "in self's dtype" in table["lt_"].__doc__
    x = eager.tensor([1.0, 3.0])
    x.lt_(2.0)
    assert x.dtype == eager.float32 and x.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("call", [
    lambda x: x.addcmul(x, x, value=2), lambda x: x // 2, lambda x: 7 // x, lambda x: x % 2,
    lambda x: (x > 0) & (x < 3), lambda x: ~(x > 0), lambda x: x.polygamma(1),
    lambda x: x.median(), lambda x: x.movedim(0, 0), lambda x: x.clone().sin_(),
    lambda x: x.sort().values, lambda x: x.to(eager.float64), lambda x: x[1:]])
def test_methods_of_every_kind_compute_what_their_function_does(call):
    x = eager.tensor([1.5, 2.5, 4.0])
    assert call(x) is not None
