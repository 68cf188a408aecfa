"""backward() from a tape of one entry on leaves (a compile()d loss, `w.sum()`) takes a short
path: its results must be those of the general walk, as torch's."""
import numpy as np
import pytest

from dualgrad import compiler, eager


def test_a_leaf_read_twice_gets_the_sum_then_accumulates():
    @compiler.compile
    def f(a, b):
        return (a * b).sum()

    w = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    f(w, w).backward()                     # d/dw sum(w*w) = 2w
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0])
    f(w, w).backward()                     # accumulates into .grad
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 8.0, 12.0])


def test_second_backward_raises_unless_retained():
    w = eager.ones(3, requires_grad=True)
    y = w.sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_grad_is_an_array_of_its_own_and_hooks_run():
    w = eager.ones(2, 3, requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    y = w.t().sum()        # two entries: the general walk
    y.backward()
    z = w.sum()            # one entry on a leaf
    z.backward()
    handle.remove()
    assert len(seen) == 2
    np.testing.assert_allclose(w.grad.numpy(), np.full((2, 3), 2.0))
    g = w.grad.numpy()
    assert g.flags.writeable and g.flags.owndata


def test_gradient_argument_and_non_leaf_inputs():
    w = eager.tensor([1.0, -2.0], requires_grad=True)
    (w * 3.0).backward(eager.tensor([1.0, 10.0]))
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 30.0])
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0            # not a leaf: the walk goes through it
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])


def test_in_place_change_after_use_is_still_caught():
    w = eager.ones(3, requires_grad=True)
    x = eager.ones(3)
    y = (x * w)            # saves x for w's gradient
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y2 = x.mul(w)           # torch.Tensor.mul
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.backward(eager.ones(3))
