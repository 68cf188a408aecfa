"""Learning-rate schedules as modern training scripts compose them (a linear warm-up then
cosine decay with SequentialLR, ChainedScheduler, PolynomialLR) and the flat-vector
utilities, run on dualgrad.eager and on torch: the same learning rates at every step."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def _schedule(torch, opt, kind):
    S = torch.optim.lr_scheduler
    if kind == "warmup_cosine":
        warmup = S.LinearLR(opt, start_factor=0.1, total_iters=3)
        return S.SequentialLR(opt, [warmup, S.CosineAnnealingLR(opt, T_max=6)], milestones=[3])
    if kind == "three_phases":
        return S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=2),
                                    S.ExponentialLR(opt, 0.9), S.StepLR(opt, 2, 0.5)],
                              milestones=[2, 5])
    if kind == "constant_then_linear":
        return S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=2),
                                    S.LinearLR(opt, 0.2, 1.0, 3)], milestones=[2])
    if kind == "linear_then_constant":   # a milestone step(0): ConstantLR's closed form
        return S.SequentialLR(opt, [S.LinearLR(opt, 0.2, total_iters=3),
                                    S.ConstantLR(opt, factor=0.5, total_iters=2)], milestones=[3])
    if kind == "chained":
        return S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=2),
                                   S.ExponentialLR(opt, gamma=0.9)])
    return S.PolynomialLR(opt, total_iters=4, power=2.0)


def schedule_program(torch, kind):
    model = torch.nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.zero_()
    opt = torch.optim.SGD([{"params": [model.weight]}, {"params": [model.bias], "lr": 0.5}],
                          lr=0.1, momentum=0.9)
    sched = _schedule(torch, opt, kind)
    lrs, group_lrs = [sched.get_last_lr()], []
    x, y = torch.tensor([[1.0, 2.0], [0.5, -1.0]]), torch.tensor([[1.0], [0.0]])
    for _ in range(10):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        group_lrs.append([g["lr"] for g in opt.param_groups])
    return {"lrs": lrs, "group_lrs": group_lrs, "weight": model.weight, "bias": model.bias}


@pytest.mark.parametrize("kind", ["warmup_cosine", "three_phases", "constant_then_linear",
                                  "linear_then_constant", "chained", "polynomial"])
def test_schedule_equals_torch(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, ref = schedule_program(dualgrad.eager, kind), schedule_program(real_torch, kind)
    np.testing.assert_array_equal(ours["lrs"], ref["lrs"])   # NOTE: to the last bit
    assert_same_results(ours, ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("t_mult", [1, 2])
def test_warm_restarts_stepped_with_fractional_epochs_equal_torch(t_mult):
    """torch's documented per-batch form, step(epoch + i / iters), and a jump to epoch 20."""
    rates = []
    for torch in (dualgrad.eager, real_torch):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=t_mult,
                                                                     eta_min=0.01)
        seen = []
        for epoch in range(8):
            for i in range(4):
                sched.step(epoch + i / 4)
                seen.append(opt.param_groups[0]["lr"])
        sched.step(20)
        rates.append(seen + [opt.param_groups[0]["lr"], sched.last_epoch])
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)


def flat_vector_program(torch):
    model = torch.nn.Linear(2, 2)
    torch.nn.utils.vector_to_parameters(torch.arange(6.0) / 10, model.parameters())
    flat = torch.nn.utils.parameters_to_vector(model.parameters())
    (flat ** 2).sum().backward()     # an L2 penalty on the flat vector
    return {"flat": flat, "weight": model.weight, "weight.grad": model.weight.grad,
            "bias.grad": model.bias.grad}


def test_flat_vector_utilities_equal_torch():
    assert_same_results(flat_vector_program(dualgrad.eager), flat_vector_program(real_torch))
