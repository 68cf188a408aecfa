"""In-place updates and PyTorch's safety rules (leaf errors, the version-counter check)."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn

torch = pytest.importorskip("torch")


def test_manual_sgd_matches_torch_step_by_step():
    rng = np.random.default_rng(0)
    xn, yn = rng.standard_normal((16, 3)).astype(np.float32), rng.standard_normal((16, 2))
    yn = yn.astype(np.float32)
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    ours = [eager.tensor(w0, requires_grad=True), eager.tensor(xn), eager.tensor(yn)]
    ref = [torch.tensor(w0, requires_grad=True), torch.tensor(xn), torch.tensor(yn)]
    for lib, (w, x, y) in ((eager, ours), (torch, ref)):
        for _ in range(5):
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
                w.grad.zero_()
    np.testing.assert_allclose(ours[0].detach().numpy(), ref[0].detach().numpy(), rtol=1e-5)


def test_in_place_on_a_leaf_that_requires_grad_raises():
    w = eager.ones(3, requires_grad=True)
    for update in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(),
                   lambda: w.__isub__(1), lambda: w.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                               "used in an in-place operation"):
            update()
    with eager.no_grad():
        w.mul_(3).add_(1)
    assert w.tolist() == [4.0] * 3 and w.requires_grad and w.is_leaf


def test_saved_tensor_modified_in_place_makes_backward_raise():
    for lib in (eager, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        z = y * y            # saves y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
    for lib in (eager, torch):
        s = lib.ones(3, requires_grad=True).sigmoid()      # saves its output
        with lib.no_grad():
            s += 1
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            s.sum().backward()


def _grads(lib, fn, x0):
    x = lib.tensor(x0, requires_grad=True)
    out = fn(lib, x)
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("fn", [
    lambda lib, x: (lambda y: (y.mul_(3), y.add_(x), y)[-1])(x * 2),
    lambda lib, x: (lambda y: (y.__iadd__(x * x), y)[-1])(x + 1.0),
    lambda lib, x: (lambda y: (y.clamp_(-0.5, 0.5), y)[-1])(x * 1.0),
    lambda lib, x: (lambda y: (y.div_(x.abs() + 1), y.sub_(x, alpha=2), y)[-1])(x + 0),
    lambda lib, x: (lambda y: (y.masked_fill_(x > 0, 0.0), y)[-1])(x * 3),
    lambda lib, x: (lambda h: (h.__setitem__(0, x * 2), h.__setitem__((1, slice(1, 3)), x[:2]),
                               h)[-1])(lib.zeros(2, 4)),
    lambda lib, x: (lambda h: (h.__setitem__(x > 0, 0.0), h)[-1])(x * 1),
    lambda lib, x: (lambda h: (h.__setitem__(lib.tensor([3, 0]), x[1:3] * 5), h)[-1])(x * 1),
    lambda lib, x: (lambda h: (h.copy_(x * 4), h)[-1])(lib.zeros(4)),
], ids=["mul_add", "iadd", "clamp", "div_sub_alpha", "masked_fill", "setitem_slices",
        "setitem_mask", "setitem_index", "copy"])
def test_tracked_in_place_ops_give_torchs_values_and_gradients(fn):
    x0 = np.array([-1.5, -0.2, 0.3, 2.0], np.float32)
    ours, ref = _grads(eager, fn, x0), _grads(torch, fn, x0)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-6)


def test_in_place_keeps_the_tensor_object_aliases_and_dtype_rules():
    t = eager.arange(6)
    alias = t
    t[t > 3] = 0
    t += 1
    assert alias is t and t.tolist() == [1, 2, 3, 4, 1, 1]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        t += 0.5
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        eager.ones(3).add_(eager.ones(2, 3))
    v = eager.zeros(2, 3)
    row = v[0]
    row.fill_(7.0)
    assert v.tolist() == [[7.0] * 3, [0.0] * 3]       # a view writes through, as in torch


def test_fill_copy_uniform_normal_zero():
    t = eager.empty(1000)
    t.uniform_(-2, 2)
    assert -2 <= t.min().item() and t.max().item() < 2
    t.normal_(1.0, 0.1)
    assert abs(t.mean().item() - 1.0) < 0.05
    t.fill_(3)
    assert t.tolist() == [3.0] * 1000
    t.zero_()
    t.copy_(eager.arange(1000))
    assert t[999].item() == 999.0 and t.dtype == np.float32


def test_data_assignment_and_in_place_through_data():
    lin = nn.Linear(3, 2)
    w = lin.weight
    lin.weight.data = eager.zeros(2, 3)                # a Tensor's values become the data
    assert lin.weight is w and w.sum().item() == 0
    assert isinstance(w.data, eager.Tensor) and not w.data.requires_grad
    w.grad = eager.ones(2, 3)
    w.data -= 0.5 * w.grad.data
    assert np.all(w.data.numpy() == -0.5)
    with eager.no_grad():
        w.data = w.data - 0.5 * w.grad
    assert np.all(w.data.numpy() == -1.0)
    w.data = eager.ones(4)                              # torch lets .data change the shape
    assert w.shape == (4,)


def test_data_idioms_of_pytorch_scripts():
    # the DCGAN-style initialiser, written as public PyTorch scripts write it
    def weights_init(m):
        if isinstance(m, nn.Conv2d):
            m.weight.data.normal_(0.0, 0.02)
        elif isinstance(m, nn.BatchNorm2d):
            m.weight.data.normal_(1.0, 0.02)
            m.bias.data.fill_(0)

    eager.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.ReLU())
    net.apply(weights_init)
    w = net[0].weight.data.numpy()
    assert abs(w.std() - 0.02) < 0.002 and abs(w.mean()) < 0.002
    assert np.all(net[1].bias.data.numpy() == 0)
    assert abs(net[1].weight.detach().numpy().mean() - 1) < 0.01
    # in place through .data on a leaf that requires grad is allowed and not recorded
    p = nn.Parameter(eager.ones(3))
    p.data.mul_(2)
    loss = (p * p).sum()
    loss.backward()
    assert p.grad.tolist() == [4.0, 4.0, 4.0]
    p.grad.data.zero_()
    assert p.grad.tolist() == [0.0, 0.0, 0.0]
    assert loss.data.item() == 12.0 and p.data.numpy() is p.detach().numpy()
    with pytest.raises(RuntimeError, match="leaf"):
        p.mul_(2)                                      # without .data it is refused, as in torch


def test_requires_grad_flags():
    y = eager.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    d = y.detach()
    d.add_(1)
    assert d.tolist() == [3.0, 3.0]
