"""The names issue 29 added to dualgrad.eager, used as a PyTorch user writes them and compared
with torch (op_db's own samples run in tests/eager/test_opdb.py; these check the behaviours a
sample list does not: aliasing through as_strided, hasattr on what is not provided, a gradient
through a whole decomposition, the namedtuple fields). Small inputs: under 10 s in all."""
import re

import numpy as np
import pytest

from dualgrad import compiler, eager

torch = pytest.importorskip("torch")


def _t(a, **kw):
    return eager.tensor(np.asarray(a), **kw)


def test_hasattr_is_false_for_what_is_not_provided():
    assert hasattr(eager.linalg, "inv") and hasattr(eager.linalg, "qr")
    assert not hasattr(eager.linalg, "eig") and not hasattr(eager.linalg, "lu_factor")
    with pytest.raises(AttributeError, match="eig"):
        eager.linalg.eig


def test_as_strided_is_a_view_and_its_gradient_adds_overlaps():
    base = eager.arange(6.0)
    win = base.as_strided((2, 3), (2, 1))       # overlapping rows [0 1 2] and [2 3 4]
    win[0, 2] = 10.0
    assert base.tolist() == [0.0, 1.0, 10.0, 3.0, 4.0, 5.0]
    x = eager.arange(6.0).requires_grad_()
    x.as_strided((2, 3), (2, 1)).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 1.0, 1.0, 0.0]


def test_prod_over_one_element_is_a_new_tensor():
    """A product over a dim of size one (or of a 0-d input) is a copy, never a view."""
    for x, dim in ((eager.ones(1, 3), 0), (eager.ones(()), 0), (eager.ones(2, 1), -1)):
        p = x.prod(dim)
        p.fill_(5.0)
        assert x.sum().item() == x.numel()


def test_solve_det_inv_and_their_gradients_match_torch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    ea, eb = _t(a, requires_grad=True), _t(b, requires_grad=True)
    t_out = torch.linalg.solve(ta, tb).sum() + torch.linalg.det(ta) + torch.linalg.inv(ta)[0, 1]
    e_out = eager.linalg.solve(ea, eb).sum() + eager.linalg.det(ea) + eager.linalg.inv(ea)[0, 1]
    t_out.backward()
    e_out.backward()
    np.testing.assert_allclose(e_out.item(), t_out.item(), rtol=1e-10)
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-8)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-8)


def test_svd_and_qr_reconstruct_and_differentiate_as_torch():
    a = np.random.default_rng(1).standard_normal((4, 3))
    ta, ea = torch.tensor(a, requires_grad=True), _t(a, requires_grad=True)
    tu, ts, tvh = torch.linalg.svd(ta, full_matrices=False)
    res = eager.linalg.svd(ea, full_matrices=False)
    assert res._fields == ("U", "S", "Vh")
    q, r = eager.linalg.qr(ea)
    np.testing.assert_allclose((q @ r).detach().numpy(), a, atol=1e-12)
    # NOTE: U @ Vh, not U or Vh alone: their columns' signs are LAPACK's choice
    ((tu @ tvh).sum() + ts.sum() + torch.linalg.qr(ta).R.sum()).backward()
    ((res.U @ res.Vh).sum() + res.S.sum() + r.sum()).backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 0), (0, 2)])
@pytest.mark.parametrize("compiled", (False, True))
def test_full_svd_completes_an_orthonormal_basis(shape, compiled):
    """full_matrices=True of a non-square matrix: U (m, m) and Vh (n, n), the first min(m, n)
    vectors torch's, the rest an orthonormal completion (LAPACK's choice, as torch's) that
    gets no gradient, as in torch's rule."""
    a = np.random.default_rng(2).standard_normal(shape)
    m, n = shape[-2:]
    k = min(m, n)
    ta, ea = torch.tensor(a, requires_grad=True), _t(a, requires_grad=True)
    f = (lambda x: tuple(eager.linalg.svd(x)))
    u, s, vh = (compiler.compile(f) if compiled else f)(ea)
    tu, ts, tvh = torch.linalg.svd(ta)
    assert u.shape == tu.shape and vh.shape == tvh.shape
    for q in (u.detach().numpy(), vh.detach().numpy()):
        np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(
            np.eye(q.shape[-1]), q.shape), atol=1e-12)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :] @ vh[..., :k, :]).detach().numpy(),
                               a, atol=1e-12)
    if k:   # NOTE: the defined part: U[:, :k] Vh[:k] (each pair's sign is LAPACK's) and S
        ((tu[..., :k] @ tvh[..., :k, :]).sum() + ts.sum() + tu.sum() * 0).backward()
        ((u[..., :k] @ vh[..., :k, :]).sum() + s.sum() + u.sum() * 0).backward()
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("shape", [(0, 0), (5, 0), (0, 5), (2, 0, 3)])
@pytest.mark.parametrize("ord", [1, -1, float("inf"), -float("inf"), 2, -2, "nuc", "fro"])
def test_matrix_norm_of_an_empty_matrix_as_torch(shape, ord):
    """The largest of no sums (or singular values) is 0; the smallest raises amin's error."""
    for keepdim in (False, True):
        try:
            want = torch.linalg.matrix_norm(torch.zeros(shape), ord, keepdim=keepdim)
        except IndexError as e:
            with pytest.raises(IndexError, match=re.escape(str(e))):
                eager.linalg.matrix_norm(eager.zeros(shape), ord, keepdim=keepdim)
            continue
        got = eager.linalg.matrix_norm(eager.zeros(shape), ord, keepdim=keepdim)
        assert tuple(got.shape) == tuple(want.shape) and got.sum().item() == 0.0


@pytest.mark.parametrize("ord", [2, 2.0, 1, 3, 0.5, -1, -2.5, float("inf"), -float("inf"), 0])
def test_vector_norm_propagates_nan_as_torch(ord):
    """A NaN among the elements makes the norm NaN (it compared > 0 and counted as zero)."""
    x = np.array([[np.nan, 3.5, 0.0, 2.0], [3.2, np.inf, -1.8, 0.0], [0.0, 0.0, 0.0, 0.0]])
    want = torch.linalg.vector_norm(torch.tensor(x), ord, dim=1).numpy()
    np.testing.assert_array_equal(eager.linalg.vector_norm(_t(x), ord, dim=1).numpy(), want)
    want = torch.masked.norm(torch.tensor(x), ord, 0, mask=torch.tensor(x != 2.0)).numpy()
    np.testing.assert_array_equal(
        eager.masked.norm(_t(x), ord, 0, mask=_t(x != 2.0)).numpy(), want)


def test_empty_solves_as_torch():
    """solve_triangular of an empty system keeps both operands on the tape; ldl_solve of a
    0x0 factor is an empty X (B's shape)."""
    a = _t(np.zeros((2, 0, 0)), requires_grad=True)
    b = _t(np.zeros((2, 0, 3)), requires_grad=True)
    x = eager.linalg.solve_triangular(a, b, upper=True)
    assert x.shape == (2, 0, 3) and x.requires_grad
    x.sum().backward()
    assert a.grad.shape == (2, 0, 0) and b.grad.shape == (2, 0, 3)
    ld, piv = eager.linalg.ldl_factor(eager.zeros(0, 0))
    assert eager.linalg.ldl_solve(ld, piv, eager.zeros(0, 5)).shape == (0, 5)
    ld, piv = eager.linalg.ldl_factor(eager.zeros(0, 2, 2))
    assert eager.linalg.ldl_solve(ld, piv, eager.zeros(2, 5)).shape == (0, 2, 5)


@pytest.mark.parametrize("name", ["i0", "special.i1e", "special.ndtri", "special.erfcx",
                                  "special.bessel_j1", "special.log_ndtr"])
def test_special_functions_keep_torch_dtypes(name):
    x = np.array([[0.2, 0.5], [0.7, 0.9]])
    fn_t, fn_e = torch, eager
    for part in name.split("."):
        fn_t, fn_e = getattr(fn_t, part), getattr(fn_e, part)
    for dt in ("float32", "float64", "int64"):
        v = (x * 10).astype(dt) if dt == "int64" else x.astype(dt)
        want, got = fn_t(torch.tensor(v)), fn_e(_t(v))
        assert str(got.dtype) == str(want.dtype)
        # NOTE: dualgrad rounds a float64 result once; torch's float32 kernels differ by ulps
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=3e-5, equal_nan=True)


def test_masked_mean_and_softmax_ignore_masked_elements():
    x = np.array([[1.0, 5.0, 3.0], [2.0, 2.0, 9.0]])
    m = np.array([[True, False, True], [False, True, True]])
    for fn in ("mean", "amax"):
        want = getattr(torch.masked, fn)(torch.tensor(x), 1, mask=torch.tensor(m))
        got = getattr(eager.masked, fn)(_t(x), 1, mask=_t(m))
        np.testing.assert_allclose(got.numpy(), want.numpy())
    want = torch.masked.softmax(torch.tensor(x), 1, mask=torch.tensor(m))
    np.testing.assert_allclose(eager.masked.softmax(_t(x), 1, mask=_t(m)).numpy(),
                               want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8", "int16", "int64"])
def test_masked_softmax_and_logsumexp_of_a_slice_masked_whole(dtype):
    """softmax / softmin along a slice masked whole are NaN (0 / 0); an integer logsumexp
    stands its dtype's least value in for the masked elements (truncated back), as torch."""
    x = np.array([[6, 6, 8], [6, 9, 1]], dtype)
    m = np.array([[True, False, True], [False, False, False]])
    want = torch.masked.logsumexp(torch.tensor(x), -1, mask=torch.tensor(m))
    got = eager.masked.logsumexp(_t(x), -1, mask=_t(m))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    if dtype == "float32":
        for fn in ("softmax", "softmin"):
            want = getattr(torch.masked, fn)(torch.tensor(x), 1, mask=torch.tensor(m))
            got = getattr(eager.masked, fn)(_t(x), 1, mask=_t(m))
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_windows_and_conv3d_under_compile():
    np.testing.assert_allclose(eager.signal.windows.kaiser(7, beta=5.0, sym=False).numpy(),
                               torch.signal.windows.kaiser(7, beta=5.0, sym=False).numpy(),
                               rtol=1e-6)
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 5, 5)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((3, 2, 2, 3, 3)).astype(np.float32)
    f = compiler.compile(lambda a, b: eager.nn.functional.conv3d(a, b, padding=1, stride=2))
    want = torch.nn.functional.conv3d(torch.tensor(x), torch.tensor(w), padding=1, stride=2)
    np.testing.assert_allclose(f(_t(x), _t(w)).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
