"""Tensor.register_post_accumulate_grad_hook: torch's hook, run as each leaf's .grad is final."""
import pytest

from dualgrad import eager
from dualgrad.eager import nn


def test_hooks_run_during_backward_last_layer_first():
    eager.manual_seed(0)
    first, last = nn.Linear(3, 4), nn.Linear(4, 2)
    seen = []

    def hook(p):
        # the last layer's gradient is complete before the first layer's is computed
        seen.append((p.shape, first.weight.grad is None))

    for p in (first.weight, last.weight):
        p.register_post_accumulate_grad_hook(hook)
    last(first(eager.ones(5, 3)).tanh()).sum().backward()
    assert seen == [((2, 4), True), ((4, 3), False)]


def test_hook_sees_the_accumulated_grad_and_can_be_removed():
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    got = []
    handle = w.register_post_accumulate_grad_hook(lambda p: got.append(p.grad.tolist()))
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    handle.remove()
    (w * 3).sum().backward()
    assert got == [[3.0, 3.0], [6.0, 6.0]] and w.grad.tolist() == [9.0, 9.0]


def test_hook_on_a_leaf_used_as_the_output_and_twice():
    w = eager.tensor(2.0, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda p: calls.append(float(p.grad)))
    (w * w + w).backward()
    assert calls == [5.0]


def test_hooks_only_on_leaves_that_require_grad():
    w = eager.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        eager.ones(2).register_post_accumulate_grad_hook(print)
