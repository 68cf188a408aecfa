"""Tensors handed to Python's own protocols, against torch: float(), int(), complex(),
bool(), round(), abs(), -t, ~t, len(), iteration, `in`, hash(), f-strings, `.item()`,
`.tolist()` and a tensor used as a list index, for one-element and two-element tensors of every
real dtype both libraries have. The value, its Python type and (where torch raises) the
exception type must match: code written as `try: ... except ValueError` takes the branch it
takes under torch.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager as dg  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]
VALUES = [[1.5], [-2.5], [0.0], [3], [255], [1, 2]]
CALLS = {
    "item": lambda t: t.item(), "float": float, "int": int, "bool": bool, "complex": complex,
    "round": round, "tolist": lambda t: t.tolist(), "abs": lambda t: abs(t).tolist(),
    "neg": lambda t: (-t).tolist(), "invert": lambda t: (~t).tolist(), "len": len,
    "iterate": lambda t: [type(a).__name__ for a in t], "contains": lambda t: 1.5 in t,
    "hash": lambda t: type(hash(t)).__name__, "list index": lambda t: [10, 20, 30, 40][t],
    "format": lambda t: f"{t:.2f}", "equals a number": lambda t: (t == 1.5).tolist(),
}


def _outcome(lib, dtype, value, call):
    try:
        got = CALLS[call](lib.tensor(value, dtype=getattr(lib, dtype)))
    except Exception as e:  # noqa: BLE001 - compared by type
        return "raises", e
    return repr(got), type(got).__name__


@pytest.mark.parametrize("dtype", DTYPES)
def test_python_protocols_as_torch(dtype):
    for value in VALUES:
        for call in CALLS:
            want = _outcome(torch, dtype, value, call)
            got = _outcome(dg, dtype, value, call)
            where = f"{call}(tensor({value}, dtype={dtype}))"
            if want[0] == "raises":
                assert got[0] == "raises", f"{where}: torch raises {want[1]!r}, dualgrad {got}"
                assert isinstance(got[1], type(want[1])), \
                    f"{where}: torch raises {type(want[1]).__name__}, dualgrad {got[1]!r}"
            else:
                assert got == want, where


def test_the_calls_differed_before():
    """What this file pins (each differed: a list index with a (1,)-shaped tensor raised,
    abs() of a bool tensor computed where torch refuses, float() of two elements and ~ of a
    float tensor raised RuntimeError for torch's ValueError and TypeError)."""
    assert [10, 20][dg.tensor([1])] == 20
    with pytest.raises(NotImplementedError):
        abs(dg.tensor([True]))
    with pytest.raises(ValueError, match="only one element tensors"):
        float(dg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~dg.tensor([1.5])
    assert np.isclose(complex(dg.tensor([2.0])), 2 + 0j)


@pytest.mark.parametrize("dtype", DTYPES)
def test_type_limits_as_torch(dtype):
    """finfo / iinfo: every value and the printed form (finfo(float32).resolution was NumPy's
    float32 rounding of 1e-6, 9.99999997e-07; iinfo printed its limits in full where torch
    prints them with %g)."""
    if dtype == "bool":
        with pytest.raises(TypeError):
            torch.iinfo(torch.bool)
        with pytest.raises(TypeError):
            dg.iinfo(dg.bool)
        return
    info = "finfo" if dtype.startswith(("float", "bfloat")) else "iinfo"
    want = getattr(torch, info)(getattr(torch, dtype))
    got = getattr(dg, info)(getattr(dg, dtype))
    assert repr(got) == repr(want)
    names = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution") \
        if info == "finfo" else ("bits", "max", "min")
    for name in names:
        assert getattr(got, name) == getattr(want, name), name
