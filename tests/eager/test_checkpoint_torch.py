"""torch.utils.checkpoint as torch's: checkpoint and checkpoint_sequential give the gradients
of the plain call (parameters and inputs), with use_reentrant True and False, inputs that do
or do not require grad (torch's rules for each), dropout drawing the same mask again in the
recomputation, several outputs, keyword arguments, torch's warnings and errors; and
get_rng_state / set_rng_state, which it relies on."""
import warnings

import numpy as np
import pytest
import torch

from dualgrad import eager
from dualgrad.compiler import compile


def _net(lib, drop):
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Dropout(drop),
                            lib.nn.Linear(8, 3))
    with lib.no_grad():
        for i, p in enumerate(net.parameters()):
            rng = np.random.default_rng(i)
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


def _grads(lib, how, reentrant, x_grad, drop=0.0):
    """The step's gradients (first and last weight's, input's; None where a tensor has none),
    or None when the output has no gradient at all."""
    net = _net(lib, drop)
    x = lib.tensor(np.random.default_rng(9).standard_normal((5, 4)).astype(np.float32))
    x.requires_grad_(x_grad)
    lib.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "plain":
            y = net(x)
        elif how == "checkpoint":
            y = lib.utils.checkpoint.checkpoint(net, x, use_reentrant=reentrant)
        else:
            y = lib.utils.checkpoint.checkpoint_sequential(net, 2, x, use_reentrant=reentrant)
    if not y.requires_grad:
        return None
    (y * y).sum().backward()
    return [None if t.grad is None else t.grad.numpy().copy()
            for t in (net[0].weight, net[3].weight, x)]


@pytest.mark.parametrize("how", ["checkpoint", "sequential"])
@pytest.mark.parametrize("x_grad", [True, False])
@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_as_torch(how, reentrant, x_grad):
    want, got = _grads(torch, how, reentrant, x_grad), _grads(eager, how, reentrant, x_grad)
    assert (got is None) == (want is None)
    if want is None:
        return
    for w, g in zip(want, got):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if reentrant and not x_grad:
        return    # NOTE: torch's rule: the checkpointed part then gives no gradients at all
    plain = _grads(eager, "plain", reentrant, x_grad)
    for p, g in zip(plain, got):
        np.testing.assert_array_equal(g, p)


@pytest.mark.parametrize("reentrant", [True, False])
def test_dropout_draws_the_same_mask_when_recomputed(reentrant):
    plain = _grads(eager, "plain", reentrant, True, drop=0.5)
    got = _grads(eager, "checkpoint", reentrant, True, drop=0.5)
    for p, g in zip(plain, got):
        np.testing.assert_array_equal(g, p)


def test_several_outputs_and_keywords():
    for lib in (torch, eager):
        x = lib.tensor([1.0, 2.0], requires_grad=True)

        def f(a, scale=1.0):
            return a.sin() * scale, (a * a).sum()
        s, q = lib.utils.checkpoint.checkpoint(f, x, scale=3.0, use_reentrant=False)
        (s.sum() + q).backward()
        np.testing.assert_allclose(x.grad.numpy(), 3 * np.cos([1.0, 2.0]) + 2 * np.array([1, 2]),
                                   rtol=1e-6)


def test_torch_warnings_and_errors():
    x = eager.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        eager.utils.checkpoint.checkpoint(lambda t: t * 2, x)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = eager.utils.checkpoint.checkpoint(eager.nn.Linear(2, 2), eager.ones(1, 2),
                                                use_reentrant=True)
    assert not out.requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        eager.utils.checkpoint.checkpoint(lambda t, scale: t, x, scale=2, use_reentrant=True)
    with eager.no_grad():
        assert not eager.utils.checkpoint.checkpoint(lambda t: t * 2, x,
                                                     use_reentrant=False).requires_grad


def test_inside_compile_it_is_the_function_itself():
    net = _net(eager, 0.0)

    def step(x):
        y = eager.utils.checkpoint.checkpoint(net, x, use_reentrant=False)
        loss = (y * y).sum()
        loss.backward()
        return loss
    x = eager.ones(5, 4)
    want = step(x).item(), net[0].weight.grad.numpy().copy()
    net.zero_grad()
    fast = compile(step)
    fast(x)
    net.zero_grad()
    got = fast(x).item(), net[0].weight.grad.numpy().copy()
    assert got[0] == pytest.approx(want[0], rel=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_rng_state_round_trips_as_torch():
    for lib in (torch, eager):
        lib.manual_seed(3)
        state = lib.get_rng_state()
        assert state.dtype == lib.uint8 and state.ndim == 1
        a = lib.randn(4)
        lib.set_rng_state(state)
        assert lib.equal(lib.randn(4), a)
        g = lib.Generator().manual_seed(5)
        s = g.get_state()
        b = lib.rand(3, generator=g)
        g.set_state(s)
        assert lib.equal(lib.rand(3, generator=g), b)
    with pytest.raises(TypeError):
        eager.set_rng_state(eager.ones(3))
    with pytest.raises(RuntimeError):
        eager.set_rng_state(eager.zeros(3, dtype=eager.uint8))
