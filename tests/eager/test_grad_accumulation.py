"""backward() sums the gradients of a tensor used several times in place once the running
total is its own (ops.autodiff's add_into): the sums are those of `a + b + ...`, and no
gradient a hook or another rule was handed is ever written to."""
import numpy as np

from dualgrad import eager


def test_weight_used_at_every_step_gets_the_sum():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 4)).astype(np.float32)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(6)]
    w = eager.from_numpy(w0.copy()).requires_grad_()
    h = eager.zeros(2, 4)
    for x in xs:
        h = eager.tanh(eager.from_numpy(x) + h @ w)
    h.sum().backward()
    # the same sums written out by hand, in the order backward() adds them
    w2 = eager.from_numpy(w0.copy()).requires_grad_()
    h, parts = eager.zeros(2, 4), []
    for x in xs:
        wt = w2.detach().requires_grad_()
        parts.append(wt)
        h = eager.tanh(eager.from_numpy(x) + h @ wt)
    h.sum().backward()
    total = parts[-1].grad
    for p in reversed(parts[:-1]):
        total = total + p.grad
    np.testing.assert_allclose(w.grad.numpy(), total.numpy(), rtol=1e-6, atol=1e-6)


def test_hooked_gradient_is_not_written_after_it_was_handed_on():
    w = eager.ones(3, requires_grad=True)
    x = w * 2.0
    seen = []
    x.register_hook(seen.append)
    a, b, c = (eager.tensor([1.0, 2.0, 3.0]) * k for k in (1.0, 10.0, 100.0))
    y = x * 1.0                       # y's gradient is summed from three uses, then handed on
    loss = (y * a).sum() + (y * b).sum() + (y * c).sum() + (x * a).sum()
    loss.backward()
    np.testing.assert_array_equal(seen[0].numpy(), [112.0, 224.0, 336.0])
    np.testing.assert_array_equal(w.grad.numpy(), [224.0, 448.0, 672.0])
