"""softmax_cross_entropy's row kernels (numba, ops/native.py) against its NumPy path and
against torch on the inputs that break naive formulas."""
import numpy as np
import pytest

from dualgrad import eager, ops
from dualgrad.eager.nn import functional as F
from dualgrad.ops import losses

EDGE = np.array([[np.inf, 1.0, 0.0], [-np.inf, -np.inf, -np.inf], [np.nan, 1.0, 0.0],
                 [-np.inf, 0.0, 2.0], [1e30, -1e30, 0.0], [88.0, 89.0, -100.0],
                 [0.0, 0.0, 0.0]], np.float32)
EDGE_T = np.array([0, 1, 1, 2, 1, 0, 2])


def _numpy_path(fn, *arrays):
    # a Fortran-ordered copy is not C-contiguous: the kernel takes its NumPy branch
    return fn(*[np.asfortranarray(a) if a.ndim > 1 else a for a in arrays])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_kernels_equal_the_numpy_path(dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, (40, 3)), EDGE]).astype(dtype)
    t = rng.random((47, 3)).astype(dtype)
    t[::3, 1] = 0                       # zero labels ignore their class, -inf included
    g = rng.random(47).astype(dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(losses._sce_kernel(x, t), _numpy_path(losses._sce_kernel, x, t),
                                   rtol=2e-6, equal_nan=True)
        np.testing.assert_allclose(losses._sce_grad_kernel(x, t, g),
                                   _numpy_path(losses._sce_grad_kernel, x, t, g),
                                   rtol=2e-6, atol=1e-6 if dtype == np.float32 else 1e-12,
                                   equal_nan=True)


def test_cross_entropy_edge_rows_match_torch():
    torch = pytest.importorskip("torch")
    x = eager.tensor(EDGE, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor(EDGE_T), reduction="none")
    loss.sum().backward()
    tx = torch.tensor(EDGE, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(EDGE_T), reduction="none")
    tl.sum().backward()
    np.testing.assert_allclose(loss.detach().numpy(), tl.detach().numpy(), rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7,
                               equal_nan=True)


def test_cross_entropy_of_an_empty_batch_is_nan_as_torch():
    x = eager.zeros(0, 5, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor(np.zeros(0, np.int64)))
    loss.backward()
    assert np.isnan(loss.item()) and x.grad.shape == (0, 5)


def test_double_backward_through_the_loss_matches_finite_differences():
    # a gradient penalty: d/dx of |d loss / d x|^2 goes through softmax_cross_entropy_grad
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(4, 5))
    t = eager.tensor(np.array([0, 4, 2, 2]))

    def penalty(a):
        x = eager.tensor(a, requires_grad=True)
        F.cross_entropy(x, t).backward(create_graph=True)
        gx, x.grad = x.grad, None
        return x, (gx * gx).sum()

    x, p = penalty(x0)
    p.backward()
    eps, num = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        num[i] = (penalty(x0 + d)[1].item() - penalty(x0 - d)[1].item()) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-5, atol=1e-8)


def test_the_primitive_names_itself_in_shape_errors():
    with pytest.raises(ops.ShapeError, match="softmax_cross_entropy: logits"):
        ops.softmax_cross_entropy(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))


def test_sigmoid_cross_entropy_gradient_at_zero_logits_matches_torch():
    """sigmoid(x) - t at x = 0 as well (max(x, 0) and |x| differentiated apart gave 1 - t:
    every zero-initialised logistic model took a wrong first step)."""
    torch = pytest.importorskip("torch")
    x = np.array([0.0, 0.0, 2.0, -3.0], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.0], np.float32)
    xe = eager.tensor(x, requires_grad=True)
    F.binary_cross_entropy_with_logits(xe, eager.tensor(t), reduction="sum").backward()
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.binary_cross_entropy_with_logits(xt, torch.tensor(t),
                                                         reduction="sum").backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
