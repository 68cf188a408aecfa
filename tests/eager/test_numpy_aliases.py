"""torch's argument parser takes NumPy's names axis= (for dim=) and keepdims= (for keepdim=)
on Tensor methods and torch.* functions; squeeze(dim) of a dim whose size is not 1 is a
no-op. Checked against torch."""
import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "argmax", "argmin", "std",
                                  "var", "prod", "cumsum", "logsumexp", "all", "any",
                                  "softmax", "log_softmax", "nansum", "count_nonzero"])
@pytest.mark.parametrize("kw", [{"axis": 1}, {"axis": -1, "keepdims": True}], ids=str)
def test_methods_take_numpy_names(name, kw):
    try:
        want = getattr(torch.tensor(A), name)(**kw)
    except TypeError:
        pytest.skip(f"torch's {name} does not take {kw}")
    got = getattr(eager.tensor(A), name)(**kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)


def test_functions_take_numpy_names_and_reject_both():
    x, tx = eager.tensor(A), torch.tensor(A)
    assert eager.cat([x, x], axis=1).shape == tuple(torch.cat([tx, tx], axis=1).shape)
    assert eager.stack([x, x], axis=0).shape == tuple(torch.stack([tx, tx], axis=0).shape)
    np.testing.assert_allclose(eager.sum(x, axis=(0, 2), keepdims=True).numpy(),
                               torch.sum(tx, axis=(0, 2), keepdims=True).numpy(), rtol=1e-6)
    values, idx = x.max(axis=2)
    assert idx.tolist() == tx.max(axis=2).indices.tolist()
    with pytest.raises(TypeError):
        x.sum(dim=0, axis=1)


@pytest.mark.parametrize("dim", [0, 1, -2, (0, 1), (1, 2), None])
def test_squeeze_leaves_dims_that_are_not_one(dim):
    a = np.ones((2, 1, 3), np.float32)
    args = () if dim is None else (dim,)
    assert eager.tensor(a).squeeze(*args).shape == tuple(torch.tensor(a).squeeze(*args).shape)
    assert eager.squeeze(eager.tensor(a), *args).shape == \
        tuple(torch.squeeze(torch.tensor(a), *args).shape)


def test_squeeze_errors_and_gradients():
    with pytest.raises(IndexError, match="Dimension out of range"):
        eager.ones(2, 1, 3).squeeze(3)
    x = eager.ones(2, 1, 3, requires_grad=True)
    (x.squeeze(0) * 2.0).sum().backward()       # a no-op squeeze still carries the gradient
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 1, 3), 2.0))
    assert eager.tensor(1.0).squeeze(0).shape == ()
