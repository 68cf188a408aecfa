"""max_pool2d's primitives against torch: ties, nan, padding, ceil_mode, indices, gradients."""
import numpy as np
import pytest

from dualgrad import eager, graph, ops
from dualgrad.eager.nn import functional as F

torch = pytest.importorskip("torch")

CASES = [((2, 3, 8, 8), dict(kernel_size=2)),
         ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
         ((1, 2, 6, 7), dict(kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2),
                             ceil_mode=True)),
         ((1, 1, 5, 5), dict(kernel_size=3, stride=1, padding=1))]


def _image(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x[0, 0, :2, :2] = 5.0                  # a tie inside one window
    x[0, 0, 3, :] = 2.0                    # ties across overlapping windows
    x[-1, -1, 2, 3] = np.nan
    return x


@pytest.mark.parametrize("shape, kw", CASES)
def test_values_indices_and_gradient_are_torchs(shape, kw):
    x = _image(shape)
    g = np.random.default_rng(1).standard_normal(
        torch.nn.functional.max_pool2d(torch.tensor(x), **kw).shape).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    yt, it = torch.nn.functional.max_pool2d(xt, return_indices=True, **kw)
    yt.backward(torch.tensor(g))
    xe = eager.tensor(x, requires_grad=True)
    ye, ie = F.max_pool2d(xe, return_indices=True, **kw)
    ye.backward(eager.tensor(g))
    np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_a_tie_gives_the_whole_gradient_to_the_first_maximum():
    x = np.array([[[[1.0, 3.0], [3.0, 3.0]]]], np.float32)
    xe = eager.tensor(x, requires_grad=True)
    F.max_pool2d(xe, 2).sum().backward()
    np.testing.assert_array_equal(xe.grad.numpy()[0, 0], [[0.0, 1.0], [0.0, 0.0]])


def test_the_graph_gradient_is_the_eager_one():
    x = _image((2, 3, 7, 9))
    x[np.isnan(x)] = 0.0
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(np.float32, (None, 3, 7, 9))
        y = ops.max_pool2d(p, 3, stride=2, padding=1, ceil_mode=True)
        (dx,) = graph.gradients(graph.reduce_sum(y * y), [p])
    with graph.Session(g) as s:
        got = s.run(dx, {p: x})
    xe = eager.tensor(x, requires_grad=True)
    (F.max_pool2d(xe, 3, stride=2, padding=1, ceil_mode=True) ** 2).sum().backward()
    np.testing.assert_allclose(got, xe.grad.numpy(), rtol=1e-6)
