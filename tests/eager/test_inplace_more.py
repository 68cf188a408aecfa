"""torch's remaining in-place methods (scatter_, index_add_, tril_, unsqueeze_, …), the
layout queries (is_contiguous, stride, contiguous) and retain_grad, against torch: values,
gradients through the in-place op, the version check, the leaf rule."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")


def _idx(L, *v):
    return L.tensor(np.array(v[0] if len(v) == 1 else v))


# (id, call(lib, tensor, other)): an in-place method and its operand of shape (3, 4)
INPLACE = [
    ("scatter_", lambda L, t, o: t.scatter_(0, _idx(L, [[2, 0, 1, 1]]), o[:1])),
    ("scatter_-value", lambda L, t, o: t.scatter_(1, _idx(L, [[3], [0], [1]]), 2.5)),
    ("scatter_add_", lambda L, t, o: t.scatter_add_(0, _idx(L, [[0, 1, 2, 0], [0, 0, 0, 0]]),
                                                   o[:2])),
    ("index_add_", lambda L, t, o: t.index_add_(1, _idx(L, 3, 0, 3), o[:, :3], alpha=-2)),
    ("index_fill_", lambda L, t, o: t.index_fill_(0, _idx(L, 0, 2), -1.0)),
    ("index_copy_", lambda L, t, o: t.index_copy_(1, _idx(L, 2, 0), o[:, :2])),
    ("masked_scatter_", lambda L, t, o: t.masked_scatter_(
        L.tensor(np.array([[True, False, True, False]])), o)),
    ("put_", lambda L, t, o: t.put_(_idx(L, 0, 11, -2), o[0, :3])),
    ("put_-acc", lambda L, t, o: t.put_(_idx(L, 5, 5), o[1, :2], accumulate=True)),
    ("tril_", lambda L, t, o: t.tril_()),
    ("triu_", lambda L, t, o: t.triu_(-1)),
    ("square_", lambda L, t, o: t.square_()),
    ("fill_diagonal_", lambda L, t, o: t.fill_diagonal_(7.0)),
    ("unsqueeze_", lambda L, t, o: t.unsqueeze_(1)),
    ("squeeze_", lambda L, t, o: t.unsqueeze_(0).squeeze_(0)),
    ("t_", lambda L, t, o: t.t_()),
    ("transpose_", lambda L, t, o: t.transpose_(0, -1)),
    ("scatter_reduce_", lambda L, t, o: t.scatter_reduce_(1, _idx(L, [[0, 0], [3, 1], [2, 2]]),
                                                         o[:, :2], "amin")),
    ("scatter_reduce_-mean", lambda L, t, o: t.scatter_reduce_(
        0, _idx(L, [[0, 0, 2, 2]]), o[:1], "mean", include_self=False)),
    ("addmm_", lambda L, t, o: t.addmm_(o[:, :2], o[:2, :], beta=0.5, alpha=2)),
    ("addr_", lambda L, t, o: t.addr_(o[:, 0], o[0], alpha=-1)),
    ("index_put_", lambda L, t, o: t.index_put_((_idx(L, 2, 0), _idx(L, 1, 3)), o[0, :2])),
    *[(f"{n}_", lambda L, t, o, n=n: getattr(t, n + "_")())
      for n in ("sin", "cos", "tan", "sinh", "cosh", "atan", "arctan", "erf", "sign", "sgn",
                "exp2", "expm1", "absolute", "negative", "floor", "ceil", "round", "trunc",
                "fix", "frac", "rad2deg", "deg2rad", "sinc", "nan_to_num")],
    *[(f"{n}_", lambda L, t, o, n=n: getattr(t.clamp_(-0.9, 0.9), n + "_")())
      for n in ("asin", "acos", "arcsin", "arccos", "erfinv", "logit")],
    *[(f"{n}_", lambda L, t, o, n=n: getattr(t.abs_().add_(0.5), n + "_")())
      for n in ("log1p", "log2", "log10", "reciprocal", "rsqrt")],
    *[(f"{n}_", lambda L, t, o, n=n: getattr(t, n + "_")(o))
      for n in ("atan2", "arctan2", "hypot", "copysign", "fmod", "remainder", "multiply",
                "subtract", "true_divide", "divide")],
    ("xlogy_", lambda L, t, o: t.xlogy_(o.abs())),
    ("subtract_-alpha", lambda L, t, o: t.subtract_(o, alpha=3)),
    ("round_-decimals", lambda L, t, o: t.round_(decimals=1)),
    ("cumsum_", lambda L, t, o: t.cumsum_(1)),
    ("cumprod_", lambda L, t, o: t.cumprod_(dim=0)),
]


def _pair(seed):
    a = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
    return a


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_values_and_gradients_match_torch(case):
    _, call = case
    a, o = _pair(0), _pair(1)
    outs = []
    for L in (eager, torch):
        leaf = L.tensor(a, requires_grad=True)
        other = L.tensor(o, requires_grad=True)
        t = leaf * 1.0                     # a non-leaf: in place is allowed, and recorded
        back = call(L, t, other)
        assert back is t
        w = L.tensor(np.arange(t.numel(), dtype=np.float32).reshape(tuple(t.shape)))
        (t * w).sum().backward()
        outs.append((t.detach().numpy(), _np(leaf.grad),
                     None if other.grad is None else _np(other.grad)))
    (v, g, go), (tv, tg, tgo) = outs
    assert v.shape == tv.shape
    np.testing.assert_allclose(v, tv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, tg, rtol=1e-5, atol=1e-6)
    if tgo is None:
        assert go is None or not go.any()
    else:
        np.testing.assert_allclose(go, tgo, rtol=1e-5, atol=1e-6)


def _np(t):
    return t.numpy(force=True) if isinstance(t, torch.Tensor) else t.numpy()


@pytest.mark.parametrize("name", ["asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh"])
def test_inplace_without_a_torch_gradient_match_its_values(name):
    a = np.array([[1.5, 2.0, 3.5], [1.01, 7.0, 1.2]], np.float32)
    a = a if "cosh" in name else a / 8
    x, tx = eager.tensor(a), torch.tensor(a)
    assert getattr(x, name + "_")() is x
    getattr(tx, name + "_")()
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-6)


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_a_leaf_that_requires_grad_raises(case):
    _, call = case
    for L in (eager, torch):
        leaf = L.tensor(_pair(0), requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            call(L, leaf, L.tensor(_pair(1)))
        with L.no_grad():                   # as parameters are updated
            call(L, leaf, L.tensor(_pair(1)))


@pytest.mark.parametrize("name", ["index_add_", "tril_", "unsqueeze_", "t_", "scatter_"])
def test_inplace_after_use_fails_the_version_check(name):
    call = dict(INPLACE)[name]
    for L in (eager, torch):
        leaf = L.tensor(_pair(0), requires_grad=True)
        t = leaf * 1.0
        used = t * t                        # mul saved t
        call(L, t, L.tensor(_pair(1)))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            used.sum().backward()


def test_shape_inplace_keeps_the_storage():
    for L in (eager, torch):
        x = L.zeros(2, 3)
        x.unsqueeze_(0)
        y = x.view(6)
        x.fill_(2.0)
        assert y.tolist() == [2.0] * 6 and tuple(x.shape) == (1, 2, 3)
        z = L.zeros(2, 3)
        z.t_()
        z[0, 1] = 5.0
        assert tuple(z.shape) == (3, 2) and z.t()[1, 0].item() == 5.0


def test_addmv_and_baddbmm_in_place():
    a, m, v = _pair(0)[0], _pair(1), _pair(2)[0]
    outs = []
    for L in (eager, torch):
        t = L.tensor(a[:3].copy())
        t.addmv_(L.tensor(m), L.tensor(v), beta=2, alpha=0.5)
        b = L.tensor(np.ones((2, 3, 3), np.float32))
        b.baddbmm_(L.tensor(np.ones((2, 3, 4), np.float32)), L.tensor(np.ones((2, 4, 3),
                                                                               np.float32)))
        outs.append((t.numpy().copy(), b.numpy().copy()))
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_exponential_and_fill_diagonal_wrap():
    eager.manual_seed(0)
    x = eager.zeros(10000).exponential_(lambd=2.0)
    assert x.min().item() >= 0 and abs(x.mean().item() - 0.5) < 0.03
    for L in (eager, torch):
        t = L.zeros(7, 3)
        t.fill_diagonal_(1.0, wrap=True)
        assert t.sum().item() == 6.0 and t[4, 0].item() == 1.0
    with pytest.raises(RuntimeError, match="all be of equal length"):
        eager.zeros(2, 3, 4).fill_diagonal_(1.0)


def test_scatter_reduce_add_and_index_errors():
    for L in (eager, torch):
        t = L.ones(3, 4)
        t.scatter_(0, _idx(L, [[0, 0, 2, 2]]), L.full((1, 4), 2.0), reduce="add")
        assert t.tolist() == [[3.0, 3.0, 1.0, 1.0], [1.0] * 4, [1.0, 1.0, 3.0, 3.0]]
        with pytest.raises(RuntimeError, match="same number of dimensions"):
            t.scatter_(0, _idx(L, [0, 1]), 1.0)


def test_duplicate_indices_raise_where_torch_is_unspecified():
    with pytest.raises(NotImplementedError, match="duplicate indices"):
        eager.zeros(3).index_copy_(0, eager.tensor([1, 1]), eager.ones(2))
    with pytest.raises(NotImplementedError, match="duplicate indices"):
        eager.zeros(3).put_(eager.tensor([1, 1]), eager.ones(2))


def test_scatter_multiply_multiplies_once_per_index_as_torch():
    for src in (2.5, [[2.0, 3.0, 5.0]]):
        x, tx = eager.ones(2, 3), torch.ones(2, 3)
        idx = [[0, 1, 0]]
        s = eager.tensor(src) if isinstance(src, list) else src
        ts = torch.tensor(src) if isinstance(src, list) else src
        x.scatter_(0, eager.tensor(idx), s, reduce="multiply")
        tx.scatter_(0, torch.tensor(idx), ts, reduce="multiply")
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
    hit_twice = eager.tensor([[1, 2, 3]]).scatter(1, eager.tensor([[0, 0]]), 3, reduce="multiply")
    assert hit_twice.tolist() == [[9, 2, 3]]      # torch: each index multiplies in turn


# -- layout ------------------------------------------------------------------------------------
LAYOUTS = [
    ("fresh", lambda L, x: x), ("t", lambda L, x: x.t()),
    ("permute", lambda L, x: x.reshape(2, 3, 4).permute(2, 0, 1)),
    ("expand", lambda L, x: x[:1].expand(5, 6)), ("slice", lambda L, x: x[:, 1:3]),
    ("rows", lambda L, x: x[1:3]), ("unsqueeze", lambda L, x: x.unsqueeze(1)),
    ("0-d", lambda L, x: x[0, 0]), ("transpose", lambda L, x: x.transpose(0, 1)),
]


@pytest.mark.parametrize("case", LAYOUTS, ids=[c[0] for c in LAYOUTS])
def test_stride_and_is_contiguous_match_torch(case):
    _, view = case
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x, tx = view(eager, eager.tensor(a)), view(torch, torch.tensor(a))
    assert x.stride() == tx.stride()
    assert x.is_contiguous() == tx.is_contiguous()
    if x.ndim:
        assert x.stride(-1) == tx.stride(-1)
    c = x.contiguous()
    assert c.is_contiguous() and c.tolist() == tx.contiguous().tolist()
    assert x.ndimension() == tx.ndimension()


def test_contiguous_copies_with_a_gradient():
    w = eager.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
    c = w.t().contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1)
    (c * eager.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    assert w.grad.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
    x = eager.ones(3)
    assert x.contiguous() is x


# -- retain_grad -------------------------------------------------------------------------------
def test_retain_grad_fills_a_non_leaf_grad_as_torch():
    a = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    got = []
    for L in (eager, torch):
        x = L.tensor(a, requires_grad=True)
        h = x * x
        h.retain_grad()
        y = (h.sin() * 3.0)
        y.retain_grad()
        loss = y.sum()
        loss.retain_grad()
        assert h.retains_grad and not x.retains_grad and not (x * 2).retains_grad
        loss.backward(retain_graph=True)
        first = h.grad.numpy().copy()
        loss.backward()                    # non-leaf grads accumulate too
        got.append((first, h.grad.numpy(), y.grad.numpy(), loss.grad.numpy(), x.grad.numpy()))
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_retain_grad_edge_cases():
    x = eager.ones(2, requires_grad=True)
    x.retain_grad()                        # a leaf: no-op, as torch
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        eager.ones(2).retain_grad()
    y = x * 2                               # one-node tape: the fast path must not skip it
    y.retain_grad()
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0] and x.grad.tolist() == [2.0, 2.0]
    z = x * 3                               # not retained: None, as torch
    z.sum().backward()
    assert z.grad is None


# -- register_hook -----------------------------------------------------------------------------
def _hooked_run(L):
    seen = []
    x = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
    hx = x.register_hook(lambda g: seen.append(("x", g.tolist())) or g * 2)
    y = x * x
    y.retain_grad()
    hy = y.register_hook(lambda g: seen.append(("y", g.tolist())) or g + 1)
    y.register_hook(lambda g: seen.append(("y2", g.tolist())))      # returns None: keeps g
    z = (y * 3).sum() + y.sin().sum()
    z.backward()
    first = (list(seen), x.grad.tolist(), y.grad.tolist())
    hx.remove()
    hy.remove()
    seen.clear()
    x.grad = None
    (x * x).sum().backward()
    return first, (list(seen), x.grad.tolist())


def test_register_hook_sees_and_replaces_gradients_as_torch():
    ours, theirs = _hooked_run(eager), _hooked_run(torch)
    (s1, xg1, yg1), (s2, xg2) = ours
    (t1, txg1, tyg1), (t2, txg2) = theirs
    assert [n for n, _ in s1] == [n for n, _ in t1]
    for (_, a), (_, b) in zip(s1, t1):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(xg1, txg1, rtol=1e-6)
    np.testing.assert_allclose(yg1, tyg1, rtol=1e-6)
    assert s2 == t2 == [] and xg2 == txg2


def test_register_hook_rules():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        eager.ones(2).register_hook(lambda g: g)
    x = eager.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g[:1])
    assert y.grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError, match="hook returned a gradient of shape"):
        y.sum().backward()
