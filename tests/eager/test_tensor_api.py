"""Tensor methods and functions PyTorch scripts use, and PyTorch's type promotion, vs torch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")

X = np.array([[3.0, -1.0, 2.0, 2.5], [0.5, 5.0, -4.0, 1.0], [1.5, 1.25, 0.0, -2.0]], np.float32)


def _both(fn, *arrays, grad=True):
    """fn on dualgrad and on torch: (ours, theirs) outputs and input gradients."""
    out = []
    for lib in (eager, torch):
        ts = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        res = fn(lib, *ts)
        res = res if isinstance(res, tuple) else (res,)
        vals = [np.asarray(r.detach().numpy()) if hasattr(r, "detach") else r for r in res]
        floats = [r for r in res if hasattr(r, "requires_grad") and r.requires_grad]
        if floats:
            sum(((r * (i + 1)).sum() for i, r in enumerate(floats))).backward()
        out.append((vals, [None if t.grad is None else t.grad.numpy() for t in ts]))
    return out


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.sort(dim=1),
    lambda lib, x: x.sort(dim=0, descending=True),
    lambda lib, x: lib.sort(x, 1, descending=True),
    lambda lib, x: x.argsort(dim=1),
    lambda lib, x: x.topk(2),
    lambda lib, x: x.topk(2, dim=0, largest=False),
    lambda lib, x: lib.topk(x, 3, dim=1),
    lambda lib, x: x.gather(1, lib.tensor([[0, 0], [3, 1], [2, 2]])),
    lambda lib, x: lib.gather(x, 0, lib.tensor([[2, 0, 1, 1]])),
    lambda lib, x: x.index_select(1, lib.tensor([3, 0, 0])),
    lambda lib, x: x.max(dim=1),
    lambda lib, x: x.min(dim=0, keepdim=True),
    lambda lib, x: (x.eq(2.0), x.ne(2.0), x.lt(1), x.le(1), x.gt(0), x.ge(0)),
    lambda lib, x: (x.all(dim=1), (x > -5).all(), x.any(dim=0), (x > 4).any()),
    lambda lib, x: x.view_as(lib.zeros(4, 3)) * 2,
    lambda lib, x: x.expand_as(lib.zeros(2, 3, 4)) + 0,
    lambda lib, x: x.flatten().float() + x.flatten().contiguous(),
    lambda lib, x: (x.long(), x.int(), x.bool(), x.half().float() * 1),
    lambda lib, x: x.t() * 1,
    lambda lib, x: x.clone() * 3,
    lambda lib, x: x.amax(dim=0) + x.amin(dim=1).sum(),
], ids=lambda f: None)
def test_methods_match_torch(fn):
    (ov, og), (tv, tg) = _both(fn, X)
    for a, b in zip(ov, tv):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=1e-6)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    for a, b in zip(og, tg):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_sizes_and_counts():
    t = eager.zeros(2, 3, 4)
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.dim() == 3 and t.numel() == 24 and t.nelement() == 24 and eager.numel(t) == 24
    assert eager.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert eager.tensor(2.5).item() == 2.5
    v, c = eager.unique(eager.tensor([3, 1, 3, 2]), return_counts=True)
    assert v.tolist() == [1, 2, 3] and c.tolist() == [1, 1, 2]
    u, inv = eager.tensor([5, 5, 7]).unique(return_inverse=True)
    assert u.tolist() == [5, 7] and inv.tolist() == [0, 0, 1]
    n = eager.ones(2).new_zeros(3)
    assert n.dtype == np.float32 and n.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="topk: selected index k=5 out of range"):
        eager.ones(3).topk(5)


FACTORIES = [
    lambda lib: lib.linspace(-1, 1, 7), lambda lib: lib.logspace(0, 3, 4, base=2),
    lambda lib: lib.full((2, 3), 1.5), lambda lib: lib.full((2,), 7),
    lambda lib: lib.zeros_like(lib.ones(2, 3, dtype=lib.float64)),
    lambda lib: lib.ones_like(lib.ones(2, dtype=lib.int64)),
    lambda lib: lib.full_like(lib.ones(2, 2), 4), lambda lib: lib.eye(3),
    lambda lib: lib.eye(2, 4), lambda lib: lib.arange(10), lambda lib: lib.arange(1, 2, 0.25),
    lambda lib: lib.arange(5, dtype=lib.float32), lambda lib: lib.tensor([[1, 2], [3, 4]]),
    lambda lib: lib.tensor([1.0, 2.0]), lambda lib: lib.tensor(3),
    lambda lib: lib.tensor([True, False]), lambda lib: lib.empty(2, 3).shape,
    lambda lib: lib.zeros((2, 3), dtype=lib.float64),
]


@pytest.mark.parametrize("make", FACTORIES, ids=lambda f: None)
def test_factories_match_torch(make):
    ours, ref = make(eager), make(torch)
    if isinstance(ours, tuple):
        assert tuple(ours) == tuple(ref)
        return
    assert ours.dtype == ref.numpy().dtype
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)


def test_random_factories_have_torchs_shapes_dtypes_and_ranges():
    g = eager.Generator().manual_seed(0)
    for make in (lambda lib, **k: lib.rand(3, 4, **k), lambda lib, **k: lib.randn(3, 4, **k),
                 lambda lib, **k: lib.randint(0, 10, (3, 4), **k),
                 lambda lib, **k: lib.randint(10, (3, 4), **k),
                 lambda lib, **k: lib.randperm(7, **k)):
        ours, ref = make(eager, generator=g), make(torch)
        assert ours.shape == tuple(ref.shape) and ours.dtype == ref.numpy().dtype
    assert sorted(eager.randperm(7).tolist()) == list(range(7))


DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "pow", "maximum"])
def test_type_promotion_is_torchs(op):
    import operator
    f = {"maximum": lambda lib, a, b: lib.maximum(a, b)}.get(
        op, lambda lib, a, b: getattr(operator, op)(a, b))
    for a, b in itertools.product(DTYPES, DTYPES):
        for na, nb in ((1, 1), (1, 0), (0, 1)):
            if op == "sub" and "bool" in (a, b) or op == "pow" and "bool" in (a, b):
                continue
            x, y = np.ones((2,) * na, a), np.full((2,) * nb, 2, b)
            want = f(torch, torch.from_numpy(x), torch.from_numpy(y)).numpy().dtype
            got = f(eager, eager.tensor(x), eager.tensor(y)).dtype
            assert got == want, f"{x.dtype}{x.shape} {op} {y.dtype}{y.shape}: {got} vs {want}"
        for s in (2, 2.5, True):
            if op in ("sub", "pow") and (s is True or a == "bool") or op == "maximum":
                continue
            want = f(torch, torch.from_numpy(np.ones(2, a)), s).numpy().dtype
            assert f(eager, eager.tensor(np.ones(2, a)), s).dtype == want, (a, s)


def test_issue_example_float32_to_an_int64_power_stays_float32():
    x = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    p = eager.arange(3)
    y = x ** p
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32
    assert (eager.arange(4) / 2).dtype == np.float32
    assert eager.result_type(eager.ones(1), eager.arange(2)) == np.float32



def test_view_shares_memory_where_it_can():
    x = eager.arange(6.0).reshape(2, 3)
    v = x.view(3, 2)
    v[0, 0] = -1.0                      # a view: the write shows through
    assert x[0, 0].item() == -1.0
    assert x.view(-1).shape == (6,) and x.view((1, 6)).shape == (1, 6)
    assert x.t().view(6).tolist() == [-1.0, 3.0, 1.0, 4.0, 2.0, 5.0]   # a copy (torch raises)
    with pytest.raises(NotImplementedError, match="view\\(dtype\\)"):
        x.view(eager.int32)
