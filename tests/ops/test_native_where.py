"""`where` on large arrays runs a numba loop (ops/native.py): the same values and dtype as
np.where in every case it takes, and np.where itself for the cases it declines."""
import numpy as np
import pytest

from dualgrad import eager, ops

N = 5000   # above the size from which the kernel takes the loop


def _cases(dtype):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((N // 50, 50)).astype(dtype) for _ in range(2))
    x[0, :3] = [np.nan, np.inf, -0.0]
    c = rng.standard_normal(x.shape) > 0
    return c, x, y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form", ["aa", "as", "sa", "as_int", "strided", "broadcast", "f64_scalar",
                                  "zero_d", "zero_d_other_dtype", "transposed"])
def test_where_kernel_matches_numpy(dtype, form):
    c, x, y = _cases(dtype)
    other = "float64" if dtype == "float32" else "float32"
    xt = np.ascontiguousarray(x.T).T     # a strided array of c's shape: copied by the loop
    args = {"aa": (c, x, y), "as": (c, x, 0.0), "sa": (c, 2.5, y), "as_int": (c, x, 3),
            "strided": (c[:, ::2], x[:, ::2], y[:, ::2]), "broadcast": (c, x, y[:1]),
            "f64_scalar": (c, x, np.float64(1.5)), "zero_d": (c, np.zeros((), dtype), xt),
            "zero_d_other_dtype": (c, x, np.ones((), other)), "transposed": (c, xt, y)}[form]
    got, want = ops.REGISTRY["where"].kernel(*args), np.where(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_relu_gradient_on_a_large_tensor_passes_where_the_input_is_positive():
    x = eager.tensor(np.linspace(-1, 1, N, dtype=np.float32), requires_grad=True)
    g = np.full(N, 2.0, np.float32)
    g[-1] = np.nan   # NOTE: a NaN gradient passes where the input is positive, as torch's
    eager.relu(x).backward(eager.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(x.detach().numpy() > 0, g, 0))
