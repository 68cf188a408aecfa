"""ops.moments returns two outputs, which the generated tests do not handle: its forward
against NumPy and jax, eager and graph, and its gradient are checked here."""
import numpy as np
import pytest

from dualgrad import ops
from tests.opinfo import numeric_grad

CASES = [((4, 3), (0,), False), ((2, 3, 4, 4), (0, 2, 3), True), ((5,), 0, False),
         ((1, 1), (0, 1), False)]


@pytest.mark.parametrize("shape,axes,keepdims", CASES)
def test_moments_matches_numpy(shape, axes, keepdims):
    x = np.random.default_rng(0).uniform(-2, 2, shape)
    m, v = ops.moments(x, axes, keepdims=keepdims)
    np.testing.assert_allclose(m, np.mean(x, axis=axes, keepdims=keepdims))
    np.testing.assert_allclose(v, np.var(x, axis=axes, keepdims=keepdims))


@pytest.mark.parametrize("shape,axes,keepdims", CASES)
def test_moments_gradient_eager_and_graph(shape, axes, keepdims):
    from dualgrad import eager
    from dualgrad import graph
    x = np.random.default_rng(1).uniform(-2, 2, shape)

    def f(a):
        m, v = ops.moments(a, axes, keepdims=keepdims)
        return float(np.sum(np.sin(m)) + np.sum(v * v))
    want = numeric_grad(f, [x.copy()], 0)
    t = eager.tensor(x, requires_grad=True)
    m, v = ops.moments(t, axes, keepdims=keepdims)
    (eager.sin(m).sum() + (v * v).sum()).backward()
    np.testing.assert_allclose(t.grad.data, want, rtol=1e-5, atol=1e-6)
    with graph.Graph().as_default():
        p = graph.placeholder(graph.float64, shape)
        gm, gv = graph.nn.moments(p, axes, keepdims=keepdims)
        loss = graph.reduce_sum(graph.sin(gm)) + graph.reduce_sum(gv * gv)
        (gx,) = graph.gradients(loss, [p])
        with graph.Session() as sess:
            out_m, out_v, out_g = sess.run([gm, gv, gx], {p: x})
    np.testing.assert_allclose(out_m, np.mean(x, axis=axes, keepdims=keepdims))
    np.testing.assert_allclose(out_v, np.var(x, axis=axes, keepdims=keepdims))
    np.testing.assert_allclose(out_g, want, rtol=1e-5, atol=1e-6)


def test_moments_matches_jax():
    jnp = pytest.importorskip("jax.numpy")
    x = np.random.default_rng(2).uniform(-2, 2, (2, 3, 4))
    m, v = ops.moments(x, (0, 2))
    np.testing.assert_allclose(m, np.asarray(jnp.mean(x, axis=(0, 2))), rtol=1e-6)
    np.testing.assert_allclose(v, np.asarray(jnp.var(x, axis=(0, 2))), rtol=1e-6)
