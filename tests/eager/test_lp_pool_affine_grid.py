"""F.lp_pool1d/2d, nn.LPPool1d/2d and F.affine_grid against torch (each an AttributeError
before): values and gradients."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402


@pytest.mark.parametrize("p", [1, 2, 3, 1.5])
@pytest.mark.parametrize("dims,k,stride,ceil", [(1, 3, None, False), (1, 2, 1, False),
                                                (1, 3, 2, True), (2, 2, None, False),
                                                (2, (2, 3), (1, 2), True)])
def test_lp_pool_as_torch(p, dims, k, stride, ceil):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3) + (7,) * dims)
    if p == 1.5:
        x = np.abs(x)            # a fractional power of a negative sum is nan in both
    outs = []
    for lib in (torch, eager):
        t = lib.tensor(x, requires_grad=True)
        fn = getattr(lib.nn.functional, f"lp_pool{dims}d")
        y = fn(t, p, k, stride, ceil)
        (y * y).sum().backward()
        outs.append((y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-9, atol=1e-12)


def test_lp_pool_modules_as_torch():
    x = np.abs(np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype(np.float32))
    for cls, shape in (("LPPool2d", (1, 2, 6, 6)), ("LPPool1d", (1, 2, 6))):
        ours = getattr(eager.nn, cls)(2, 2)
        theirs = getattr(torch.nn, cls)(2, 2)
        data = x.reshape(shape) if cls == "LPPool2d" else x[:, :, 0]
        np.testing.assert_allclose(ours(eager.tensor(data)).numpy(),
                                   theirs(torch.tensor(data)).numpy(), rtol=1e-6)
        assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 3, 1)])
def test_affine_grid_as_torch(align, size):
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((size[0], 2, 3))
    outs = []
    for lib in (torch, eager):
        th = lib.tensor(theta, requires_grad=True)
        grid = lib.nn.functional.affine_grid(th, size, align_corners=align)
        (grid * grid).sum().backward()
        outs.append((grid.detach().numpy(), th.grad.numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="Nx2x3"):
        eager.nn.functional.affine_grid(eager.zeros(1, 3, 3), size, align_corners=align)
