"""The op_db harness's accuracy rule (tests/eager/opdb_accuracy.py) can fail as well as pass:
values that differ from torch's pass only when they are at least as close as torch's to a
higher-precision reference (torch's float64 result, or mpmath's), and never excuse a dtype.
"""
from __future__ import annotations

import warnings

import pytest
from scipy import special as scipy_special

torch = pytest.importorskip("torch")            # the oracle (dev extra)
pytest.importorskip("expecttest")               # op_db's import needs it

from torch.testing._internal.opinfo.core import SampleInput  # noqa: E402

from dualgrad import eager  # noqa: E402

from . import opdb_accuracy as A  # noqa: E402
from . import opdb_harness as H  # noqa: E402

F32 = (torch.float32, 1.3e-6, 1e-5)


def judged(ours, theirs, reference, dtype=F32):
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    return A.at_least_as_accurate(t(ours), t(theirs), t(reference), *dtype)


def test_closer_to_the_reference_than_torch_passes_and_farther_fails():
    assert judged([1.0, 2.0], [1.1, 2.0], [1.01, 2.0])
    assert not judged([1.1, 2.0], [1.0, 2.0], [1.01, 2.0])
    assert not judged([0.9, 2.0], [1.1, 2.0], [1.01, 2.0])      # farther, on the other side


def test_every_element_is_judged_on_its_own():
    # NOTE: closer on the whole (mean error 0.025 against torch's 0.045), farther at the second
    assert not judged([1.0, 2.05], [1.09, 2.0], [1.0, 2.0])


def test_where_torch_is_not_finite_ours_must_be_within_tolerance_of_the_reference():
    assert judged([2.0], [float("nan")], [2.0])
    assert not judged([2.1], [float("nan")], [2.0])
    assert not judged([2.0], [float("inf")], [float("nan")])   # the reference says nothing


def test_a_reference_that_is_not_finite_where_torchs_is_counts_for_nothing():
    assert not judged([float("nan")], [1.0], [float("nan")])
    assert not judged([float("inf")], [1.0], [float("inf")])


def test_an_overflow_passes_only_as_the_reference_rounded():
    f16 = (torch.float16, 1e-3, 1e-3)
    assert judged([float("inf")], [60000.0], [1e6], f16)      # 1e6 rounds to inf in float16
    assert not judged([float("-inf")], [60000.0], [1e6], f16)
    assert not judged([float("inf")], [60000.0], [60100.0], f16)


def _sample(eid, dtype, index):
    op = H.entries()[eid]
    return op, H.samples(op, dtype, index + 1)[index]


def _run(op, fn, s):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return H.check_sample(op, fn, s, grads=False, aliasing=False)


def _plain_compare(op, fn, s):
    """The comparison with torch alone, without the rule."""
    leaves = []
    args = H.to_eager((s.input,) + tuple(s.args), leaves)
    return H.compare(fn(*args, **H.to_eager(dict(s.kwargs), leaves)), op.op(
        s.input, *s.args, **s.kwargs))


def _pushed_away(op, s, eid):
    """A result twice as far from the precise reference as torch's, on torch's side."""
    theirs = op.op(s.input, *s.args, **s.kwargs).detach()
    precise = A.precise_result(op, s, eid)
    worse = (theirs.double() + 2 * (theirs.double() - precise)).to(theirs.dtype).numpy()
    return lambda *a, **k: eager.tensor(worse, dtype=eager.float32 if theirs.dtype ==
                                        torch.float32 else eager.float64)


@pytest.mark.parametrize("eid,dtype,index", [
    ("linalg.tensorsolve", torch.float32, 2),       # torch's float32 solve, condition 572
    ("special.bessel_j0", torch.float64, 0),        # mpmath's reference
])
def test_op_db_samples_where_torch_is_less_accurate(eid, dtype, index):
    op, s = _sample(eid, dtype, index)
    fn = H.resolved()[eid]
    assert any(A.VALUES_DIFFER in d for d in _plain_compare(op, fn, s))
    assert _run(op, fn, s) == []
    assert any(A.VALUES_DIFFER in d for d in _run(op, _pushed_away(op, s, eid), s))


def test_a_dtype_difference_is_not_excused_by_closer_values():
    op, s = _sample("linalg.tensorsolve", torch.float32, 2)
    exact = A.precise_result(op, s, "linalg.tensorsolve").numpy()
    diffs = _run(op, lambda *a, **k: eager.tensor(exact, dtype=eager.float64), s)
    assert diffs and "dtype float64 != torch's torch.float32" in diffs[0]


def test_no_reference_without_a_higher_precision():
    op, s = _sample("add", torch.float64, 0)
    assert A.precise_result(op, s, "add") is None           # float64, no mpmath function
    assert any(A.VALUES_DIFFER in d for d in _run(
        op, lambda x, y, **k: eager.add(x, y, **k) + 1e-3, s))
    op, s = _sample("add", torch.int64, 0)
    assert A.precise_result(op, s, "add") is None           # integers only: nothing to upcast


def test_the_mpmath_reference():
    x = torch.tensor([[-5.4215, 0.0], [-1.0, float("inf")]], dtype=torch.float64)
    y1 = A.precise_result(None, SampleInput(x), "special.bessel_y1")
    assert y1[0, 1] == float("-inf") and torch.isnan(y1[1]).all()   # Y1 of x < 0 is not real
    j0 = A.precise_result(None, SampleInput(x), "special.bessel_j0")
    assert abs(float(j0[0, 0]) - scipy_special.j0(-5.4215)) < 1e-16      # Cephes, near a zero
    assert abs(float(j0[0, 0]) - float(torch.special.bessel_j0(x[0, 0]))) > 1e-8
