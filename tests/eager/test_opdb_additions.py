"""The names issue 29 added to dualgrad.eager, used as a PyTorch user writes them and compared
with torch (op_db's own samples run in tests/eager/test_opdb.py; these check the behaviours a
sample list does not: aliasing through as_strided, hasattr on what is not provided, a gradient
through a whole decomposition, the namedtuple fields). Small inputs: under 10 s in all."""
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
        assert str(got.dtype) == str(want.dtype).split(".")[1]
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


def test_windows_and_conv3d_under_compile():
    np.testing.assert_allclose(eager.signal.windows.kaiser(7, beta=5.0, sym=False).numpy(),
                               torch.signal.windows.kaiser(7, beta=5.0, sym=False).numpy(),
                               rtol=1e-6)
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 5, 5)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((3, 2, 2, 3, 3)).astype(np.float32)
    f = compiler.compile(lambda a, b: eager.nn.functional.conv3d(a, b, padding=1, stride=2))
    want = torch.nn.functional.conv3d(torch.tensor(x), torch.tensor(w), padding=1, stride=2)
    np.testing.assert_allclose(f(_t(x), _t(w)).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
