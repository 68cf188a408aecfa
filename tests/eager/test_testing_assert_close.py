"""torch.testing.assert_close / assert_allclose against real torch: the same pairs pass or
fail in both, with the same message (type names aside)."""
import math
import warnings

import numpy as np
import pytest

from dualgrad import eager as dg

torch = pytest.importorskip("torch")


def _pairs(lib):
    t = lib.tensor
    nan = math.nan
    return {
        "close floats": (t([1.0, 2.0]), t([1.0, 2.0000001])),
        "far floats": (t([1.0, 2.0, 3.0]), t([1.0, 2.5, 3.0])),
        "2-d": (t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.0, 5.0]])),
        "dtype": (t([1.0, 2.0]), t([1.0, 2.0], dtype=lib.float64)),
        "shape": (t([1.0, 2.0]), t([1.0, 2.0, 3.0])),
        "ints": (t([1, 2]), t([1, 3])),
        "bools": (t([True, False]), t([True, True])),
        "nan": (t([[1.0, nan]]), t([[1.0, nan]])),
        "zero expected": (t([1.0, 0.0]), t([1.0, 1e-3])),
        "0-d": (t(1.0), t(2.0)),
        "float64": (t([1.0, 2.0], dtype=lib.float64), t([1.0, 2.0 + 1e-6], dtype=lib.float64)),
        "float16": (t([1.0, 2.0], dtype=lib.float16), t([1.0, 2.01], dtype=lib.float16)),
        "list item": ([t(1.0)], [t(2.0)]),
        "dict item": ({"a": t(1.0)}, {"a": t(1.0001)}),
        "python floats": (1.0, 1.1),
        "python ints": (1, 2),
        "int vs float": (1, 1.0),
        "bool scalars": (True, False),
        "none": (None, 1),
        "tuple vs list": ((1.0, 2.0), [1.0, 2.0]),
        "lengths": ([1.0], [1.0, 2.0]),
        "keys": ({"a": 1}, {"b": 1}),
        "infinities": (t([math.inf, 1.0]), t([math.inf, 1.0])),
    }


def _outcome(lib, a, e, **kw):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (lib.testing.assert_allclose if kw.pop("old", False) else
             lib.testing.assert_close)(a, e, **kw)
        return "ok"
    except (AssertionError, TypeError, ValueError) as err:
        return f"{type(err).__name__}: {err}"


_KWARGS = [{}, {"equal_nan": True}, {"check_dtype": False}, {"rtol": 0.1, "atol": 0.0},
           {"msg": "custom"}]
# NOTE: assert_allclose (deprecated) takes a tensor first: its cases are the tensor pairs
_CASES = [(c, kw) for c in _pairs(dg) for kw in _KWARGS] + [
    (c, {"old": True}) for c, (a, _) in _pairs(dg).items() if isinstance(a, dg.Tensor)]


@pytest.mark.parametrize("case,kw", _CASES, ids=[f"{c}-{kw}" for c, kw in _CASES])
def test_same_outcome_and_message_as_torch(case, kw):
    mine, theirs = _pairs(dg)[case], _pairs(torch)[case]
    assert _outcome(dg, *mine, **dict(kw)) == _outcome(torch, *theirs, **dict(kw))


def test_tolerances_given_alone_are_refused():
    for kw in ({"rtol": 1e-3}, {"atol": 1e-3}):
        mine = _outcome(dg, dg.tensor(1.0), dg.tensor(1.0), **kw)
        assert mine == _outcome(torch, torch.tensor(1.0), torch.tensor(1.0), **kw)
        assert mine.startswith("ValueError")


def test_a_callable_msg_gets_the_message_and_numpy_arrays_compare():
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes are not close"):
        dg.testing.assert_close(dg.tensor([1.0]), dg.tensor([2.0]), msg=lambda m: "wrapped: " + m)
    dg.testing.assert_close(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="No comparison pair"):
        dg.testing.assert_close(dg.tensor([1.0]), np.ones(1))
