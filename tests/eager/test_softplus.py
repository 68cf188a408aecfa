"""softplus: one registry entry (ops/elementwise.py) and its front-door names, F.softplus /
nn.Softplus (torch's beta and threshold) and graph.nn.softplus (tf.nn.softplus). The
registry matrix tests the op itself in every engine, under the optimiser, fused and under
compile; here are the names, torch's extra arguments and the extremes."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import compiler, eager, graph
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

X = np.array([-100.0, -30.0, -5.0, -0.5, 0.0, 0.5, 5.0, 19.0, 21.0, 30.0, 100.0], np.float32)


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 20.0), (0.5, 3.0)])
def test_softplus_matches_torch_values_and_gradients(beta, threshold):
    torch = pytest.importorskip("torch")
    t = torch.tensor(X, requires_grad=True)
    torch.nn.functional.softplus(t, beta=beta, threshold=threshold).sum().backward()
    x = eager.tensor(X, requires_grad=True)
    y = nn.Softplus(beta, threshold)(x)
    y.sum().backward()
    want = torch.nn.functional.softplus(torch.tensor(X), beta=beta, threshold=threshold)
    np.testing.assert_allclose(y.detach().numpy(), want.numpy(), rtol=1e-6, atol=1e-30)
    # NOTE: the gradient is ops.sigmoid, whose kernel (the tanh form) loses relative accuracy
    # in the negative tail (2e-4 at x = -10, 0 below about -17): a known limit of that op
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=5e-4, atol=1e-7)
    assert repr(nn.Softplus(beta, threshold)) == f"Softplus(beta={beta}, threshold={threshold})"


def test_softplus_is_exact_for_large_negative_inputs():
    y = F.softplus(eager.tensor(X)).numpy()
    want = np.logaddexp(X.astype(np.float64), 0)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-44)   # 3.7e-44 is a denormal
    assert y[0] > 0 and y[-1] == 100.0


def test_graph_softplus_fused_matches_eager():
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(graph.float32, (None,))
        y = graph.nn.softplus(p * 2.0, name="sp")
        (dx,) = graph.gradients(graph.reduce_sum(y), [p])
    assert y.name == "sp:0"
    for optimize in (False, True):
        with graph.Session(g, optimize=optimize) as s:
            got, grad = s.run([y, dx], {p: X})
        np.testing.assert_allclose(got, np.logaddexp(2.0 * X, 0), rtol=2e-6, atol=1e-30)
        np.testing.assert_allclose(grad, 2.0 / (1.0 + np.exp(-2.0 * X)), rtol=5e-4, atol=5e-7)


def test_compiled_softplus_equals_eager():
    f = compiler.compile(lambda x: (F.softplus(x) * x).sum())
    x1, x2 = eager.tensor(X, requires_grad=True), eager.tensor(X, requires_grad=True)
    y1, y2 = f(x1), (F.softplus(x2) * x2).sum()
    y1.backward()
    y2.backward()
    np.testing.assert_allclose(float(y1), float(y2), rtol=1e-6)
    # NOTE: fused sigmoid (the gradient) is 0.5 + 0.5 * tanh_f32: within 2e-7 absolute,
    # times x = -100 here
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-5, atol=2e-5)
