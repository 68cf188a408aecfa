"""The mixed-precision recipe as scripts write it for "cuda if available" (autocast and a
GradScaler with enabled=use_amp, or enabled with device "cuda", which torch turns off
without a GPU): on this CPU-only machine both libraries train in float32 and agree."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results, load, state

real_torch = pytest.importorskip("torch")


def model(torch):
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def amp_program(torch, weights, x, y):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    use_amp = device == "cuda"
    net = model(torch).to(device)
    load(torch, net, weights)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    legacy = torch.cuda.amp.GradScaler()          # enabled, but no GPU: turns itself off
    losses = []
    for step in range(4):
        with torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(net(torch.from_numpy(x)),
                                                         torch.from_numpy(y))
        opt.zero_grad()
        (scaler if step % 2 else legacy).scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        (scaler if step % 2 else legacy).step(opt)
        scaler.update()
        losses.append(loss.item())
    return {"losses": losses, "scale": [scaler.get_scale(), legacy.get_scale()],
            "enabled": [scaler.is_enabled(), legacy.is_enabled(), torch.is_autocast_enabled()],
            "dtype": str(loss.dtype).replace("torch.", ""), **state(net)}


def test_amp_recipe_without_a_gpu_equals_torch():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 4)).astype(np.float32), rng.integers(0, 2, 8)
    real_torch.manual_seed(0)
    weights = state(model(real_torch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = amp_program(dualgrad.eager, weights, x, y)
        ref = amp_program(real_torch, weights, x, y)
    assert_same_results(ours, ref, rtol=1e-5, atol=1e-6)

