"""A custom torch.autograd.Function inside a compiled function is traced, not a graph break:
its forward into the graph (without a gradient of its own), its backward into the gradient
graph. Checked against PyTorch running the same code eagerly: the values and the gradients
agree, and no warning (a graph break or a fallback) is raised."""
import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager
import dualgrad.eager.nn as nn


def _functions(torch):
    class ClippedReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, top):
            ctx.save_for_backward(x)
            ctx.top = top
            return x.clamp(min=0.0, max=top)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ((x > 0) & (x < ctx.top)).to(grad.dtype), None

    class SinCos(torch.autograd.Function):   # two outputs: backward gets both gradients
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return (x * w).sin(), (x * w).cos()

        @staticmethod
        def backward(ctx, gs, gc):
            x, w = ctx.saved_tensors
            d = gs * (x * w).cos() - gc * (x * w).sin()
            return d * w, (d * x).sum(0)
    return ClippedReLU, SinCos


def _step(torch, x, w, b):
    clipped, sincos = _functions(torch)
    s, c = sincos.apply(x, w)
    return (clipped.apply(s + b, 0.5) * 3 + c).pow(2).sum()


def test_a_custom_function_compiles_without_a_break_and_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xv, wv, bv = (rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (3,), (3,)))
    ref = [torch.tensor(v, requires_grad=i > 0) for i, v in enumerate((xv, wv, bv))]
    want = _step(torch, *ref)
    want.backward()
    x = eager.tensor(xv)
    w, b = eager.tensor(wv, requires_grad=True), eager.tensor(bv, requires_grad=True)
    step = compiler.compile(lambda x, w, b: _step(eager, x, w, b))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = step(x, w, b)
    got.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), ref[1].grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), ref[2].grad.numpy(), rtol=1e-5)


def test_a_training_step_with_a_custom_function_learns_as_eager():
    clipped, _ = _functions(eager)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 8), nn.Linear(8, 1)

        def forward(self, x):
            return self.b(clipped.apply(self.a(x), 2.0))

    def run(compiled):
        eager.manual_seed(0)
        net = Net()
        opt = eager.optim.SGD(net.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        step = compiler.compile(step) if compiled else step
        x = eager.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(16, 2))
        y = (x ** 2).sum(1, keepdim=True)
        return [step(x, y).item() for _ in range(30)]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = run(True)
    eager_losses = run(False)
    np.testing.assert_allclose(compiled, eager_losses, rtol=1e-5)
    assert compiled[-1] < 0.5 * compiled[0]
