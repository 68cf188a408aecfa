"""Tensor indexing against torch: `x[index]`, `x[index] = value` and their gradients for a
generated set of index expressions mixing ints, 0-d tensors, slices, None, Ellipsis, lists,
integer tensors and boolean masks on a 3-d tensor.

Where NumPy's reading of an index differs from torch's (an integer beside an index array,
`x[0, :, idx]`; an Ellipsis standing for no dimension between two index arrays), dualgrad
reads it as torch does (ops/index.py, torch_stages). The expressions are drawn with a fixed
seed: CASES per mode, each run on torch and dualgrad.eager from the same NumPy data; an index
torch refuses must be refused too (any exception type: the messages differ).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager as dg  # noqa: E402

SHAPE = (4, 5, 6)
CASES = 300          # per test; 0.3 s per 100 here
BASE = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)


def _draw(rng):
    """One index expression as (kind, value) parts, for either library."""
    parts, dim = [], 0
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["int", "slice", "slice", "none", "ellipsis", "list", "long", "mask",
                           "zero_d"])
        size = SHAPE[min(dim, len(SHAPE) - 1)]
        if kind == "ellipsis" and any(k == "ellipsis" for k, _ in parts):
            continue
        if kind in ("int", "zero_d"):
            value = rng.randint(-size, size - 1) if kind == "int" else rng.randint(0, size - 1)
        elif kind == "slice":
            value = (rng.choice([None, -3, 0, 1, 2]), rng.choice([None, -1, 3, 10]),
                     rng.choice([None, 1, 2, 3]))
        elif kind in ("list", "long"):
            value = [rng.randint(-size, size - 1) for _ in range(rng.randint(1, 3))]
        elif kind == "mask":
            value = [rng.random() < 0.5 for _ in range(size)]
        else:
            value = None
        parts.append((kind, value))
        dim += kind not in ("none", "ellipsis")
    return parts


def _index(lib, parts):
    make = {"int": lambda v: v, "slice": lambda v: slice(*v), "none": lambda v: None,
            "ellipsis": lambda v: Ellipsis, "list": list,
            "long": lambda v: lib.tensor(v, dtype=lib.int64),
            "mask": lambda v: lib.tensor(v, dtype=lib.bool), "zero_d": lib.tensor}
    return tuple(make[k](v) for k, v in parts)


def _cases(seed):
    rng = random.Random(seed)
    return [_draw(rng) for _ in range(CASES)]


def _both(fn):
    """fn(lib) on torch and dualgrad: (results as NumPy arrays) or the exception type."""
    out = []
    for lib in (torch, dg):
        try:
            out.append([np.asarray(a) for a in fn(lib)])
        except Exception as e:  # noqa: BLE001 - any refusal, compared by its presence
            out.append(type(e))
    return out


def _agree(expected, got, parts):
    if isinstance(expected, type) or isinstance(got, type):
        assert isinstance(expected, type) and isinstance(got, type), \
            f"{parts}: torch gave {expected!r}, dualgrad {got!r}"
        return
    for a, b in zip(expected, got):
        assert a.shape == b.shape and np.array_equal(a, b), f"{parts}:\n{a}\n!=\n{b}"


def _get(parts):
    def run(lib):
        y = lib.tensor(BASE)[_index(lib, parts)]
        return [y.numpy(), np.array(tuple(y.shape))]
    return run


def _set(parts, value):
    def run(lib):
        x = lib.tensor(BASE)
        idx = _index(lib, parts)
        if value == "scalar":
            x[idx] = -1.0
        else:                    # a row broadcast over what the index selects
            n = tuple(x[idx].shape)
            x[idx] = lib.tensor(np.arange(n[-1] if n else 1, dtype=np.float32) - 50)
        return [x.numpy()]
    return run


def _grad(parts):
    """Gradients through x[index] and through a write x[index] = v into a tracked tensor
    (the write's values, and the gradient of what it overwrote: zero)."""
    def run(lib):
        x = lib.tensor(BASE, requires_grad=True)
        y = x[_index(lib, parts)]
        w = lib.tensor(np.arange(int(np.prod(tuple(y.shape))), dtype=np.float32)
                       .reshape(tuple(y.shape)))
        (y * w).sum().backward()
        first = x.grad.numpy().copy()
        x.grad = None
        z = x * 2.0
        z[_index(lib, parts)] = lib.tensor(-1.0)
        (z * z).sum().backward()
        return [first, z.detach().numpy(), x.grad.numpy()]
    return run


@pytest.mark.parametrize("seed", [0, 1])
def test_getitem(seed):
    for parts in _cases(seed):
        _agree(*_both(_get(parts)), parts)


@pytest.mark.parametrize("value", ["scalar", "row"])
def test_setitem(value):
    for parts in _cases(2):
        _agree(*_both(_set(parts, value)), parts)


def test_gradients():
    for parts in _cases(3):
        _agree(*_both(_grad(parts)), parts)


def test_the_cases_mix_what_numpy_reads_otherwise():
    """The drawn expressions include the two readings that differ from NumPy's (else the
    tests above could pass without them)."""
    cases = _cases(0) + _cases(1)
    kinds = [[k for k, _ in parts] for parts in cases]
    arrays = ("list", "long", "mask")
    assert sum(any(a in k for a in arrays) and ("int" in k or "zero_d" in k) for k in kinds) > 30
    assert sum(sum(a in k for a in arrays) >= 2 and "ellipsis" in k for k in kinds) > 5


def test_repeated_positions_hold_the_last_write():
    """x[[1, 1, 3]] = v on a tracked tensor wrote 2 * v into row 1 (the scatter summed the
    duplicate), where torch (and an untracked tensor) hold v."""
    for lib in (torch, dg):
        x = lib.ones(4, 3, requires_grad=True)
        z = x * 1.0
        z[[1, 1, 3]] = lib.tensor([[5.0, 6.0, 7.0], [8.0, 9.0, 10.0], [1.0, 2.0, 3.0]])
        assert z.detach().numpy()[1].tolist() == [8.0, 9.0, 10.0], lib.__name__
        z.sum().backward()
        assert x.grad.numpy()[[1, 3]].sum() == 0.0 and x.grad.numpy()[0].sum() == 3.0


def test_integer_beside_index_array_keeps_torch_layout():
    x = dg.arange(120.0).reshape(4, 5, 6)
    assert tuple(x[0, :, [1, 2, 4]].shape) == (5, 3)           # NumPy: (3, 5)
    assert tuple(x[:, [4], ..., dg.tensor([2, 3])].shape) == (4, 2)
    x[0, :, [1, 2]] = dg.tensor([-1.0, -2.0])
    assert x[0, 3, 1].item() == -1.0 and x[0, 3, 2].item() == -2.0


_DTYPES = ["int64", "int32", "uint8", "int8", "bool", "float32", "float16", "float64"]
_VALUES = [2.7, -2.7, 300, -1, True, 1e10, float("nan"), float("inf")]


@pytest.mark.parametrize("dtype", _DTYPES)
def test_written_values_convert_as_torch(dtype):
    """x[1] = v and x[[0, 2]] = v for Python numbers and 0-d / 1-d tensors of another dtype:
    torch casts through a basic index, demands the dtype through index tensors (index_put_;
    a 0-d value under a mask is masked_fill and casts), and checks Python numbers against
    the dtype's range (uint8's -1 is 255; 300 and -2.7 raise). dualgrad cast every tensor
    and raised NumPy's OverflowError for uint8's -1 (123 of these 192 cases differed)."""
    for value in _VALUES:
        for kind in ("number", "0-d", "1-d"):
            def run(lib, value=value, kind=kind):
                x = lib.zeros(3, dtype=getattr(lib, dtype))
                v = value if kind == "number" else lib.tensor(value) if kind == "0-d" else \
                    lib.tensor([value])
                x[1] = v if kind != "1-d" else v[0]
                x[[0, 2]] = v
                x[x != x] = v if kind != "1-d" else v[0]        # a mask: masked_fill
                return [x.numpy()]
            expected, got = _both(run)
            if isinstance(expected, type) or isinstance(got, type):
                assert isinstance(expected, type) and isinstance(got, type), \
                    (dtype, value, kind, expected, got)
            else:
                np.testing.assert_array_equal(expected[0], got[0], err_msg=f"{value} {kind}")
