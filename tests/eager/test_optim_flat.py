"""Optimizers update all parameters of one dtype in one flat pass (torch's foreach); the
result is bit for bit what updating them one by one gives, step after step, including a
step where one parameter has no gradient."""
import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn, optim


def _train(make_opt, flat, steps=4):
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    opt = make_opt(model.parameters())
    if not flat:
        opt._flat_step = lambda group: [opt._update(p, p.grad.data, opt.state[id(p)])
                                        for p in group]
    x = eager.from_numpy(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
    for k in range(steps):
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        if k == 2:
            model[0].bias.grad = None          # a parameter without a gradient this step
        opt.step()
    return [p.data.copy() for p in model.parameters()], opt


@pytest.fixture(autouse=True)
def _flat_from_two(monkeypatch):
    monkeypatch.setattr(optim, "FLAT_MIN", 2)   # NOTE: the model has 4 parameters


@pytest.mark.parametrize("make_opt", [
    lambda ps: optim.SGD(ps, lr=0.1),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3, nesterov=True),
    lambda ps: optim.Adam(ps, lr=1e-2),
    lambda ps: optim.AdamW(ps, lr=1e-2)], ids=["sgd", "nesterov", "adam", "adamw"])
def test_flat_update_equals_per_parameter_update(make_opt):
    flat, opt = _train(make_opt, True)
    one_by_one, _ = _train(make_opt, False)
    for a, b in zip(flat, one_by_one):
        np.testing.assert_array_equal(a, b)
    for p in opt.params:          # state stays per parameter, in each parameter's shape
        for v in opt.state[id(p)].values():
            if isinstance(v, np.ndarray):
                assert v.shape == p.data.shape
