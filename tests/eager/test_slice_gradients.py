"""Gradients of a tensor read through many slices (an RNN's steps of one projection, heads cut
from one matrix, overlapping windows) are summed at each slice's place in one array
(ops.autodiff's add_into with Op.grad_at): the values must be torch's, with hooks,
retain_grad, other uses of the same tensor mixed in, and double backward."""
import numpy as np
import pytest
import torch

from dualgrad import eager

PROGRAMS = {
    # each takes the library and a (6, 4, 5) float64 tensor computed from a leaf
    "steps": lambda lib, z: sum((z[t] * (t + 1)).tanh().sum() for t in range(z.shape[0])),
    "overlapping": lambda lib, z: sum((z[t:t + 3] ** 2).sum() for t in range(4)),
    "strided_and_int": lambda lib, z: (z[::2] * 3).sum() + z[1, :, 2].exp().sum()
    + z[..., -1].sum(),
    "mixed_with_a_whole_use": lambda lib, z: (z[0] * z[1]).sum() + (z * z).sum()
    + z[2:4].sin().sum(),
    "heads": lambda lib, z: sum((z[:, :, h:h + 1] @ z[:, :, h:h + 1].transpose(1, 2)).sum()
                                for h in range(5)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_slice_gradients_match_torch(name):
    rng = np.random.default_rng(sorted(PROGRAMS).index(name))
    a = rng.standard_normal((6, 4, 5))
    tl, dl = torch.tensor(a, requires_grad=True), eager.tensor(a, requires_grad=True)
    tz, dz = tl * 1.5, dl * 1.5
    tz.retain_grad()
    dz.retain_grad()
    seen = {}

    def keep(key):
        def hook(g):
            seen[key] = g.detach().numpy().copy()
        return hook

    tz.register_hook(keep("torch"))
    dz.register_hook(keep("ours"))
    PROGRAMS[name](torch, tz).backward()
    PROGRAMS[name](eager, dz).backward()
    np.testing.assert_allclose(dl.grad.numpy(), tl.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dz.grad.numpy(), tz.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(seen["ours"], seen["torch"], rtol=1e-12, atol=1e-12)


def test_double_backward_through_slices():
    a = np.random.default_rng(3).standard_normal((5, 3))
    results = []
    for lib in (torch, eager):
        x = lib.tensor(a, requires_grad=True)
        y = sum((x[t] ** 3).sum() for t in range(5))
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        results.append((g.detach().numpy(), x.grad.numpy()))
    for ours, ref in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_leaf_gradient_accumulates_across_backward_calls():
    a = np.random.default_rng(4).standard_normal((4, 3))
    grads = []
    for lib in (torch, eager):
        x = lib.tensor(a, requires_grad=True)
        for _ in range(2):
            sum((x[t] * t).sum() for t in range(4)).backward()
        grads.append(x.grad.numpy().copy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
