"""backward() sums the gradients of a tensor used several times in place once the running
total is its own (ops.autodiff's add_into): the sums are those of `a + b + ...`, and no
gradient a hook or another rule was handed is ever written to."""
import numpy as np
import pytest

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


# -- .grad is added into in place, as torch's AccumulateGrad ---------------------------------
def _held_after_second(lib):
    x = lib.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    held = x.grad
    (x * 3).sum().backward()
    return held is x.grad, held.tolist()


def _create_graph_second(lib):
    x = lib.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    held = x.grad
    (x * x).sum().backward(create_graph=True)
    return held is x.grad, held.tolist(), x.grad.requires_grad


def _backward_inputs(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    (y * y).sum().backward(inputs=[x])
    held = x.grad
    (x * 3).sum().backward(inputs=[x])
    return held is x.grad, held.tolist()


def _hook_returns_a_held_tensor(lib):
    keep = lib.full((3,), 7.0)
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda g: keep)
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    return keep.tolist(), x.grad.tolist()


def _grad_the_user_set(lib):
    x = lib.ones(3, requires_grad=True)
    mine = lib.zeros(3)
    x.grad = mine
    (x * 2).sum().backward()
    return mine.tolist(), x.grad is mine


def _two_leaves_of_one_add(lib):
    a, b = lib.ones(3, requires_grad=True), lib.ones(3, requires_grad=True)
    (a + b).sum().backward()
    (a * 5).sum().backward()
    return a.grad.tolist(), b.grad.tolist()


def _zero_grad_keeps_the_tensor(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(2, 2)
    m(lib.ones(1, 2)).sum().backward()
    held = m.weight.grad
    lib.optim.SGD(m.parameters(), lr=0.1).zero_grad(set_to_none=False)
    m(lib.ones(1, 2)).sum().backward()
    return held is m.weight.grad, held.tolist()


@pytest.mark.parametrize("program", [
    _held_after_second, _create_graph_second, _backward_inputs, _hook_returns_a_held_tensor,
    _grad_the_user_set, _two_leaves_of_one_add, _zero_grad_keeps_the_tensor])
def test_grad_accumulates_into_the_same_tensor_as_torch(program):
    """A reference to `.grad` taken after one backward sees the next one's sum (torch adds
    into the tensor); a hook's returned tensor, or another leaf's gradient, is never added
    into."""
    import torch
    assert program(eager) == program(torch)
