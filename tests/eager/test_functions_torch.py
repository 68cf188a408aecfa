"""torch.* math by torch's names (and the Tensor methods of the same names), against torch:
values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")


def _pairs(shapes, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = (rng.uniform(0.5, 2.0, s) if positive else rng.standard_normal(s) * 2)
        a = a.astype(np.float32)
        out.append((eager.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)))
    return out


def _close(a, b, rtol=1e-4, atol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    np.testing.assert_allclose(a, b.detach().numpy(), rtol=rtol, atol=atol)


DIFFERENTIABLE = [
    ("mm", [(3, 4), (4, 5)], {}), ("bmm", [(2, 3, 4), (2, 4, 2)], {}),
    ("dot", [(4,), (4,)], {}), ("outer", [(3,), (4,)], {}),
    ("addmm", [(3, 5), (3, 4), (4, 5)], dict(beta=0.5, alpha=2.0)),
    ("baddbmm", [(2, 3, 2), (2, 3, 4), (2, 4, 2)], dict(alpha=0.3)),
    ("addcmul", [(3, 4), (3, 4), (3, 4)], dict(value=0.5)),
    ("std", [(3, 4)], dict(dim=1)), ("std", [(3, 4)], dict(dim=0, correction=0)),
    ("var", [(3, 4)], dict(dim=1, keepdim=True, unbiased=False)), ("var", [(5,)], {}),
    ("prod", [(3, 4)], dict(dim=1)), ("prod", [(2, 3)], {}),
    ("cumprod", [(3, 4)], dict(dim=1)), ("amax", [(3, 4)], dict(dim=(0, 1))),
    ("amin", [(3, 4)], dict(dim=1, keepdim=True)), ("logcumsumexp", [(3, 4)], dict(dim=1)),
    ("trunc", [(3, 4)], {}), ("frac", [(3, 4)], {}), ("floor", [(3, 4)], {}),
    ("ceil", [(3, 4)], {}), ("round", [(3, 4)], {}), ("round", [(3, 4)], dict(decimals=1)),
    ("fmod", [(3, 4), (3, 4)], {}), ("remainder", [(3, 4), (3, 4)], {}),
    ("log1p", [(3, 4)], dict(positive=True)), ("expm1", [(3, 4)], {}),
    ("log2", [(3, 4)], dict(positive=True)), ("log10", [(3, 4)], dict(positive=True)),
    ("reciprocal", [(3, 4)], dict(positive=True)), ("lerp", [(3, 4), (3, 4), (3, 4)], {}),
    ("clamp_min", [(3, 4)], dict(min=0.2)), ("clamp_max", [(3, 4)], dict(max=-0.1)),
    ("clip", [(3, 4)], dict(min=-1, max=1)),
    ("narrow", [(4, 5)], dict(dim=1, start=1, length=3)),
    ("roll", [(3, 4)], dict(shifts=(1, -2), dims=(0, 1))), ("roll", [(3, 4)], dict(shifts=5)),
    ("repeat_interleave", [(2, 3)], dict(repeats=2, dim=1)),
    ("repeat_interleave", [(4,)], dict(repeats=3)), ("tile", [(2, 3)], dict(dims=(2, 1, 2))),
    ("broadcast_to", [(3, 1)], dict(size=(2, 3, 4))), ("take", [(3, 4)], {}),
    ("diff", [(3, 5)], dict(n=2)), ("diff", [(3, 5)], dict(dim=0)),
    ("diag", [(4,)], dict(diagonal=1)), ("diag", [(4, 4)], dict(diagonal=-1)),
    ("diagonal", [(2, 3, 4)], dict(offset=1, dim1=1, dim2=2)),
    ("kron", [(2, 3), (3, 2)], {}), ("cdist", [(4, 3), (5, 3)], {}),
    ("cdist", [(2, 4, 3), (2, 5, 3)], dict(p=1.0)),
    ("einsum", [(3, 4), (4, 5)], dict(equation="ij,jk->ik")),
    ("einsum", [(2, 3, 4), (2, 4, 5)], dict(equation="bij,bjk->bik")),
    ("einsum", [(4, 4)], dict(equation="ii->i")), ("einsum", [(3, 4)], dict(equation="ij")),
    ("einsum", [(2, 3, 4), (4,)], dict(equation="...j,j->...")),
    ("einsum", [(2, 3), (2, 3)], dict(equation="ij,ij->")),
    ("scatter_add", [(3, 5), (2, 5)], dict(dim=0)),
    ("scatter", [(3, 5), (1, 5)], dict(dim=0)),
    ("nan_to_num", [(3, 4)], {}),
    ("add", [(3, 4), (4,)], {}), ("add", [(3, 4), (3, 4)], dict(alpha=-0.5)),
    ("sub", [(3, 4), (3, 1)], dict(alpha=2.0)), ("subtract", [(3, 4), (3, 4)], {}),
    ("rsub", [(3, 4), (3, 4)], dict(alpha=3.0)), ("mul", [(2, 3), (2, 3)], {}),
    ("multiply", [(2, 3), (3,)], {}), ("neg", [(3, 4)], {}), ("negative", [(3, 4)], {}),
]
INDEX = {"take": np.array([0, 5, 11, 3]), "scatter_add": np.array([[0, 1, 2, 0, 0],
                                                                   [2, 0, 0, 1, 0]]),
         "scatter": np.array([[2, 0, 1, 1, 0]])}


def _call(lib, name, xs, kw, idx):
    if name == "einsum":
        return lib.einsum(kw["equation"], *xs)
    if name in ("scatter_add", "scatter"):
        return getattr(lib, name)(xs[0], kw["dim"], lib.tensor(idx), xs[1])
    if name == "take":
        return lib.take(xs[0], lib.tensor(idx))
    return getattr(lib, name)(*xs, **kw)


@pytest.mark.parametrize("name,shapes,kw", DIFFERENTIABLE,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(DIFFERENTIABLE)])
def test_function_matches_torch_with_gradients(name, shapes, kw):
    kw = dict(kw)
    pairs = _pairs(shapes, positive=kw.pop("positive", False))
    if name == "lerp":
        pairs[2] = tuple(p.sigmoid().detach().requires_grad_() for p in pairs[2])
    out = _call(eager, name, [p[0] for p in pairs], kw, INDEX.get(name))
    ref = _call(torch, name, [p[1] for p in pairs], kw, INDEX.get(name))
    _close(out, ref)
    w = np.random.default_rng(7).standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * eager.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for ours, theirs in pairs:
        _close(ours.grad, theirs.grad)


def test_tensor_methods_of_the_same_names():
    x = eager.tensor([[1.5, -2.0], [0.0, 3.0]])
    tx = torch.tensor([[1.5, -2.0], [0.0, 3.0]])
    for name, args in (("mm", (x,)), ("prod", (1,)), ("roll", (1, 0)), ("floor", ()),
                       ("isfinite", ()), ("count_nonzero", ()), ("nonzero", ()),
                       ("narrow", (1, 0, 1)), ("diff", ()), ("fmod", (1.25,)),
                       ("add", (x,)), ("add", (2.0,)), ("sub", (x,)), ("mul", (x,)),
                       ("multiply", (0.5,)), ("subtract", (1,)), ("neg", ()),
                       ("negative", ())):
        targs = tuple(tx if a is x else a for a in args)
        _close(getattr(x, name)(*args), getattr(tx, name)(*targs))
    assert [u.tolist() for u in x.unbind(1)] == [u.tolist() for u in tx.unbind(1)]
    _close(x.add(x, alpha=2), tx.add(tx, alpha=2))
    _close(x.sub(x, alpha=0.5), tx.sub(tx, alpha=0.5))
    i, ti = eager.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    assert eager.add(i, i, alpha=2).tolist() == torch.add(ti, ti, alpha=2).tolist()
    assert eager.add(i, i).dtype == np.int64


def test_predicates_and_value_dependent_functions_match_torch():
    a = np.array([[1.0, np.nan, -np.inf], [0.0, np.inf, 2.0]], np.float32)
    x, tx = eager.tensor(a), torch.tensor(a)
    for name in ("isnan", "isinf", "isfinite", "nan_to_num", "count_nonzero"):
        assert np.array_equal(getattr(eager, name)(x).numpy(), getattr(torch, name)(tx).numpy(),
                              equal_nan=True), name
    assert np.array_equal(eager.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0).numpy(),
                          torch.nan_to_num(tx, nan=1.0, posinf=9.0, neginf=-9.0).numpy())
    b = np.array([[0, 2, 0], [1, 0, 3]])
    assert eager.nonzero(eager.tensor(b)).tolist() == torch.nonzero(torch.tensor(b)).tolist()
    assert [t.tolist() for t in eager.nonzero(eager.tensor(b), as_tuple=True)] == \
        [t.tolist() for t in torch.nonzero(torch.tensor(b), as_tuple=True)]
    m = b > 0
    v = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert eager.masked_select(eager.tensor(v), eager.tensor(m)).tolist() == \
        torch.masked_select(torch.tensor(v), torch.tensor(m)).tolist()
    assert eager.bincount(eager.tensor([1, 1, 3]), minlength=5).tolist() == \
        torch.bincount(torch.tensor([1, 1, 3]), minlength=5).tolist()
    seq, vals = np.array([[1, 3, 5, 7], [2, 4, 6, 8]]), np.array([[3, 6], [1, 9]])
    for right in (False, True):
        assert eager.searchsorted(eager.tensor(seq), eager.tensor(vals), right=right).tolist() \
            == torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right).tolist()
    assert eager.repeat_interleave(eager.tensor([2, 0, 1])).tolist() == \
        torch.repeat_interleave(torch.tensor([2, 0, 1])).tolist()
    for name in ("logical_and", "logical_or", "logical_xor"):
        assert getattr(eager, name)(eager.tensor(b), eager.tensor(m)).tolist() == \
            getattr(torch, name)(torch.tensor(b), torch.tensor(m)).tolist()
    assert eager.logical_not(eager.tensor(b)).tolist() == torch.logical_not(
        torch.tensor(b)).tolist()
    for mode in ("floor", "trunc", None):
        assert np.allclose(eager.div(eager.tensor([-7.0, 7.0]), 2, rounding_mode=mode).numpy(),
                           torch.div(torch.tensor([-7.0, 7.0]), 2, rounding_mode=mode).numpy())
    assert eager.remainder(eager.tensor([-7, 7]), 3).tolist() == \
        torch.remainder(torch.tensor([-7, 7]), 3).tolist()
    assert eager.fmod(eager.tensor([-7, 7]), 3).tolist() == \
        torch.fmod(torch.tensor([-7, 7]), 3).tolist()


def test_meshgrid_and_unbind_match_torch():
    a, b = [0.0, 1.0, 2.0], [5.0, 6.0]
    for indexing in ("ij", "xy"):
        ours = eager.meshgrid(eager.tensor(a), eager.tensor(b), indexing=indexing)
        theirs = torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing)
        for o, t in zip(ours, theirs):
            assert o.tolist() == t.tolist()


def test_random_functions_have_torchs_shapes_and_laws():
    eager.manual_seed(0)
    w = eager.tensor([[0.0, 1.0, 3.0], [1.0, 1.0, 0.0]])
    draws = eager.multinomial(w, 2000, replacement=True)
    assert draws.shape == (2, 2000) and draws.dtype == np.int64
    assert abs((draws[0] == 2).float().mean().item() - 0.75) < 0.05
    assert set(np.unique(draws[1].numpy())) <= {0, 1}
    assert sorted(eager.multinomial(w[0:1], 2).tolist()[0]) == [1, 2]
    with pytest.raises(RuntimeError, match="without replacement"):
        eager.multinomial(w, 3)
    b = eager.bernoulli(eager.full((4000,), 0.3))
    assert set(np.unique(b.numpy())) <= {0.0, 1.0} and abs(b.mean().item() - 0.3) < 0.03
    n = eager.normal(eager.zeros(3, 4000) + 2.0, 0.5)
    assert n.shape == (3, 4000) and abs(n.mean().item() - 2.0) < 0.05
    assert abs(n.std().item() - 0.5) < 0.05
    assert eager.normal(1.0, 2.0, size=(5, 2)).shape == (5, 2)


def test_scatter_with_duplicate_indices_raises():
    with pytest.raises(NotImplementedError, match="duplicate indices"):
        eager.scatter(eager.zeros(3), 0, eager.tensor([1, 1]), eager.ones(2))


@pytest.mark.parametrize("name,shapes", [("addmm", [(3, 5), (3, 4), (4, 5)]),
                                         ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)])])
def test_beta_zero_ignores_the_input_even_nan(name, shapes):
    pairs = _pairs(shapes, seed=3)
    a = np.full(shapes[0], np.nan, np.float32)
    ours_in, theirs_in = eager.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out = getattr(eager, name)(ours_in, pairs[1][0], pairs[2][0], beta=0, alpha=0.5)
    ref = getattr(torch, name)(theirs_in, pairs[1][1], pairs[2][1], beta=0, alpha=0.5)
    _close(out, ref)
    assert not np.isnan(out.detach().numpy()).any()
    out.sum().backward()
    ref.sum().backward()
    _close(ours_in.grad, theirs_in.grad)
    _close(pairs[1][0].grad, pairs[1][1].grad)


def test_einsum_output_letter_no_operand_has_raises_as_torch():
    x = eager.ones(2, 3)
    with pytest.raises(ValueError, match="names a letter no operand has"):
        eager.einsum("ij,jk->il", x, eager.ones(3, 4))
    with pytest.raises(RuntimeError):
        torch.einsum("ij,jk->il", torch.ones(2, 3), torch.ones(3, 4))
    assert eager.einsum("ii->i", eager.eye(3)).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("compiled", (False, True))
def test_weighted_cov_sums_its_weights_in_their_dtype(compiled):
    """torch's cov sums the weights and forms the normalising factor in the weights' dtype
    (float32 aweights of a float64 input: a float32 factor); the aweights' gradient is float32."""
    from dualgrad import compiler
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5))
    aw = rng.uniform(0.1, 1.0, 5).astype(np.float32)
    fw = np.array([1, 2, 1, 3, 1], np.int32)
    for correction in (0, 1, 2):
        ex, ea = eager.tensor(x, requires_grad=True), eager.tensor(aw, requires_grad=True)
        tx, ta = torch.tensor(x, requires_grad=True), torch.tensor(aw, requires_grad=True)
        f = (lambda x, a: eager.cov(x, correction=correction, fweights=eager.tensor(fw),
                                    aweights=a))
        ours = (compiler.compile(f) if compiled else f)(ex, ea)
        ref = torch.cov(tx, correction=correction, fweights=torch.tensor(fw), aweights=ta)
        np.testing.assert_allclose(np.asarray(ours.detach()), ref.detach().numpy(), rtol=1e-12)
        ct = rng.standard_normal((3, 3))
        (ours * eager.tensor(ct)).sum().backward()
        (ref * torch.tensor(ct)).sum().backward()
        assert ea.grad.dtype == np.float32
        np.testing.assert_allclose(np.asarray(ea.grad), ta.grad.numpy(), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(ex.grad), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ("quantile", "nanquantile"))
@pytest.mark.parametrize("interpolation", ("linear", "midpoint", "lower"))
def test_quantile_interpolates_as_torch_with_a_gradient_to_q(name, interpolation):
    """torch's ranks are q * (n - 1) in the input's dtype, its weight carries q's gradient
    (linear), and it interpolates with lerp's two fused forms (float32 to the bit)."""
    rng = np.random.default_rng(8)
    for trial in range(12):
        x = rng.standard_normal((3, int(rng.integers(1, 12)))).astype(np.float32)
        if trial % 3 == 0:
            x[0, 0] = np.nan
        if trial % 4 == 0:
            x[1] = np.nan
        q = rng.uniform(0, 1, 4).astype(np.float32)
        tx, tq = torch.tensor(x, requires_grad=True), torch.tensor(q, requires_grad=True)
        ex, eq = eager.tensor(x, requires_grad=True), eager.tensor(q, requires_grad=True)
        ref = getattr(torch, name)(tx, tq, dim=1, interpolation=interpolation)
        ours = getattr(eager, name)(ex, eq, dim=1, interpolation=interpolation)
        np.testing.assert_array_equal(np.asarray(ours.detach()), ref.detach().numpy())
        ct = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
        (ref * torch.tensor(ct)).sum().backward()
        (ours * eager.tensor(ct)).sum().backward()
        for g, tg in ((eq.grad, tq.grad), (ex.grad, tx.grad)):
            want = np.zeros(1) if tg is None else tg.numpy()
            np.testing.assert_allclose(np.zeros(1) if g is None else np.asarray(g), want,
                                       rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scalar", [np.float64(0.5), np.float32(0.5), np.float16(2.0), np.int64(3),
                                    np.int8(-2), np.uint8(200), np.bool_(True)],
                         ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "int64", "float64"])
def test_numpy_scalars_are_read_as_python_numbers(scalar, dtype):
    """torch reads a NumPy scalar beside a tensor as a Python number (x * np.float64(0.5) of a
    float32 x is float32; NumPy 2 alone would make it float64)."""
    forms = (lambda x, s: x * s, lambda x, s: s * x, lambda x, s: x + s, lambda x, s: s - x,
             lambda x, s: x / s, lambda x, s: x < s)
    for form in forms:
        ref = form(torch.ones(3, dtype=getattr(torch, dtype)) * 3, scalar)
        ours = form(eager.ones(3, dtype=getattr(eager, dtype)) * 3, scalar)
        assert str(ours.dtype) == str(ref.dtype)
        np.testing.assert_array_equal(np.asarray(ours.float()), ref.float().numpy())
