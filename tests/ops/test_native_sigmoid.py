"""sigmoid on arrays of 1024 elements or more takes one exp and one numba loop
(ops/native.py): the same values as the NumPy formula it replaces, in every layout, and
PyTorch's values."""
import numpy as np
import pytest

from dualgrad import eager, ops

SIGMOID = ops.REGISTRY["sigmoid"].kernel


def _formula(x):
    return np.exp(np.minimum(x, 0)) / (np.exp(-np.abs(x)) + 1)


def _x(dtype, shape=(48, 64)):
    x = (np.random.default_rng(1).standard_normal(shape) * 40).astype(dtype)
    x.flat[:8] = [np.inf, -np.inf, np.nan, -0.0, 0.0, -100.0, -745.0, 88.0]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["c", "transposed", "strided", "3d"])
def test_native_sigmoid_equals_the_numpy_formula(dtype, layout):
    x = _x(dtype, (8, 12, 32) if layout == "3d" else (48, 64))
    x = {"c": x, "3d": x, "transposed": x.T, "strided": x[:, ::2]}[layout]
    got = SIGMOID(x)
    assert got.dtype == x.dtype and got.shape == x.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, _formula(x))


def test_native_sigmoid_keeps_the_deep_negative_tail():
    x = np.full(4096, -100.0, np.float32)
    got = SIGMOID(x)
    assert got[0] > 0 and got[0] == np.float32(np.exp(-100.0))   # a float32 subnormal


def test_small_and_integer_inputs_keep_the_numpy_path():
    x = _x("float32", (4, 8))
    np.testing.assert_array_equal(SIGMOID(x), _formula(x))
    ints = np.arange(-2000, 2000).reshape(40, 100)
    got = SIGMOID(ints)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, _formula(ints.astype(np.float32)))


def test_eager_sigmoid_and_its_gradient_match_torch_on_lstm_gates():
    torch = pytest.importorskip("torch")
    z = np.random.default_rng(2).standard_normal((32, 256)).astype(np.float32) * 4
    x = eager.tensor(z, requires_grad=True)
    eager.sigmoid(x).sum().backward()
    tz = torch.tensor(z, requires_grad=True)
    torch.sigmoid(tz).sum().backward()
    np.testing.assert_allclose(eager.sigmoid(eager.tensor(z)).numpy(),
                               torch.sigmoid(torch.tensor(z)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tz.grad.numpy(), rtol=1e-5, atol=1e-7)
