"""torch.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against torch: values,
structure (tensor or nested tuples), strict mode and errors; and a grad_output of another
dtype than its output, which torch's engine casts."""
import importlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402

A = np.array([[1.0, 2.0], [3.0, -1.0]])
X0, Y0 = np.array([0.5, -1.5]), np.array([2.0, 0.3, -0.7])


def _fn(lib):
    return importlib.import_module(("torch" if lib is torch else "dualgrad.eager") +
                                   ".autograd.functional")


def _two_in(lib):
    a = lib.tensor(A)
    return lambda x, y: ((a @ x) * y[:2]).tanh()


def _scalar_two_in(lib):
    return lambda x, y: (x.sin() * y[1:]).sum() + (x * x * x).sum() * y.sum()


CASES = {
    "jacobian": lambda L, F, t: F.jacobian(lambda x: x.exp() * x[0], t(X0)),
    "jacobian of two inputs": lambda L, F, t: F.jacobian(_two_in(L), (t(X0), t(Y0))),
    "jacobian of two outputs": lambda L, F, t: F.jacobian(lambda x: (x * 2, x.sum()), t(X0)),
    "jacobian, unused input": lambda L, F, t: F.jacobian(lambda x, y: x * 2, (t(X0), t(Y0))),
    "jacobian, vectorize": lambda L, F, t: F.jacobian(lambda x: x.exp(), t(X0), vectorize=True),
    "hessian": lambda L, F, t: F.hessian(lambda x: (x ** 3).sum() * x[0], t(X0)),
    "hessian of two inputs": lambda L, F, t: F.hessian(_scalar_two_in(L), (t(X0), t(Y0))),
    "vjp": lambda L, F, t: F.vjp(lambda x: x ** 2 * 3, t(X0), t([1.0, 2.0])),
    "vjp, v left out": lambda L, F, t: F.vjp(lambda x: (x ** 2).sum(), t(X0)),
    "vjp of two inputs": lambda L, F, t: F.vjp(_two_in(L), (t(X0), t(Y0)), t([1.0, -2.0])),
    "jvp": lambda L, F, t: F.jvp(lambda x: x.exp() * x.sum(), t(X0), t([1.0, 2.0])),
    "jvp of two inputs": lambda L, F, t: F.jvp(_two_in(L), (t(X0), t(Y0)),
                                                (t([1.0, 2.0]), t([0.5, 0.0, 1.0]))),
    "hvp": lambda L, F, t: F.hvp(lambda x: (x ** 3).sum() * x[1], t(X0), t([1.0, 2.0])),
    "vhp": lambda L, F, t: F.vhp(lambda x: (x ** 3).sum() * x[1], t(X0), t([1.0, 2.0])),
    "hvp of two inputs": lambda L, F, t: F.hvp(_scalar_two_in(L), (t(X0), t(Y0)),
                                                (t([1.0, 2.0]), t([0.5, 0.0, 1.0]))),
}
ERRORS = {
    "jacobian, strict": lambda L, F, t: F.jacobian(lambda x, y: x * 2, (t(X0), t(Y0)),
                                                    strict=True),
    "hessian of a vector": lambda L, F, t: F.hessian(lambda x: x ** 2, t(X0)),
    "vjp, v of the wrong size": lambda L, F, t: F.vjp(lambda x: x ** 2, t(X0), t([1.0, 2, 3])),
    "vjp, v left out for a vector": lambda L, F, t: F.vjp(lambda x: x ** 2, t(X0)),
}


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [out]


@pytest.mark.parametrize("name", list(CASES))
def test_functional_as_torch(name):
    got = []
    for lib in (torch, eager):
        out = CASES[name](lib, _fn(lib), lambda v, lib=lib: lib.tensor(np.asarray(v, float)))
        shape = [type(o).__name__ if isinstance(o, (tuple, list)) else "T" for o in
                 (out if isinstance(out, (tuple, list)) else [out])]
        got.append((shape, [(tuple(t.shape), t.requires_grad, t.detach().numpy())
                            for t in _flat(out)]))
    (s0, v0), (s1, v1) = got
    assert s1 == s0
    assert [v[:2] for v in v1] == [v[:2] for v in v0]
    for a, b in zip(v1, v0):
        np.testing.assert_allclose(a[2], b[2], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(ERRORS))
def test_functional_refuses_as_torch(name):
    with pytest.raises(RuntimeError):
        ERRORS[name](torch, _fn(torch), lambda v: torch.tensor(np.asarray(v, float)))
    with pytest.raises(RuntimeError):
        ERRORS[name](eager, _fn(eager), lambda v: eager.tensor(np.asarray(v, float)))


def test_create_graph_gives_differentiable_results():
    from dualgrad.eager.autograd.functional import jacobian
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    jac = jacobian(lambda v: v ** 3, x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.0, 2.0]))


@pytest.mark.parametrize("given", ["float32", "float16", "int64"])
def test_a_grad_output_of_another_dtype_is_read_in_the_outputs(given):
    """torch's engine casts a gradient to the dtype of the tensor it is for."""
    grads = []
    for lib in (torch, eager):
        x = lib.tensor(X0, requires_grad=True)
        y = lib.tensor(A) @ x
        v = lib.tensor(np.array([1, 2]).astype(given))
        g, = lib.autograd.grad(y, x, v)
        y2 = lib.tensor(A) @ x
        y2.backward(v)
        grads.append((g.numpy(), str(g.dtype).split(".")[-1], x.grad.numpy()))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    assert grads[1][1] == grads[0][1] == "float64"
    np.testing.assert_array_equal(grads[1][2], grads[0][2])
