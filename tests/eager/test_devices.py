"""The device API behaves as PyTorch's on a machine without CUDA."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn

NO_CUDA = "Torch not compiled with CUDA enabled"


def test_availability_checks_pick_the_cpu():
    assert eager.cuda.is_available() is False and eager.cuda.device_count() == 0
    assert eager.accelerator.is_available() is False
    assert eager.backends.mps.is_available() is False
    device = "cuda" if eager.cuda.is_available() else "cpu"
    x = eager.ones(2, 3, device=device)
    assert x.device == eager.device("cpu") and x.device.type == "cpu" and not x.is_cuda
    eager.cuda.manual_seed(0)
    eager.cuda.manual_seed_all(0)       # seeding a missing GPU does nothing, as in PyTorch


def test_device_objects():
    assert repr(eager.device("cpu")) == "device(type='cpu')"
    d = eager.device("cuda:1")
    assert (d.type, d.index, str(d)) == ("cuda", 1, "cuda:1")
    assert eager.device("cuda", 0) == eager.device("cuda:0")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        eager.device("gpu")


@pytest.mark.parametrize("make", [
    lambda: eager.zeros(2).cuda(), lambda: eager.zeros(2, device="cuda"),
    lambda: eager.zeros(2).to("cuda"), lambda: eager.zeros(2).to(eager.device("cuda:0")),
    lambda: nn.Linear(2, 2).cuda(), lambda: nn.Linear(2, 2).to("cuda"),
    lambda: eager.tensor([1.0], device="cuda"), lambda: eager.cuda.synchronize()])
def test_cuda_raises_pytorchs_cpu_only_error(make):
    with pytest.raises(AssertionError, match=NO_CUDA):
        make()


@pytest.mark.parametrize("use", [
    lambda a: a.set_device_index(0), lambda a: a.current_device_index(),
    lambda a: a.synchronize(), lambda a: a.device_index(0).__enter__()])
def test_accelerator_device_calls_raise_as_torchs_without_one(use):
    torch = pytest.importorskip("torch")
    for a in (torch.accelerator, eager.accelerator):
        with pytest.raises(RuntimeError, match="none is available"):
            use(a)
    with eager.accelerator.device_index(None):   # None: no switch, as in torch
        pass


def test_other_accelerators_raise_clearly():
    with pytest.raises(RuntimeError, match="'mps' is not available"):
        eager.zeros(2, device="mps")


def test_tensor_to_forms():
    x = eager.tensor([1.5, 2.5], requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(eager.float32) is x
    y = x.to("cpu", eager.float64)
    assert y.dtype == np.float64 and y.grad_fn is not None
    assert x.to(device="cpu", dtype=eager.float64).dtype == np.float64
    assert x.to(eager.tensor([1])).dtype == np.int64
    assert x.type_as(eager.zeros(1, dtype=eager.float64)).dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [1.0, 1.0]
    assert eager.zeros(2).type() == "torch.FloatTensor"


def test_module_to_casts_parameters_and_buffers_in_place():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    params = list(model.parameters())
    assert model.to("cpu") is model
    model.double()
    assert all(p.dtype == np.float64 for p in model.parameters())
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert model[1].running_mean.dtype == np.float64
    assert model[1].num_batches_tracked.dtype == np.int64     # integer buffers stay as they are
    out = model(eager.randn(5, 3, dtype=eager.float64))
    assert out.dtype == np.float64
    model.to(eager.float32)
    assert model[0].weight.dtype == np.float32
    model.half()
    assert model[0].bias.dtype == np.float16
    with pytest.raises(TypeError, match="only accepts floating point"):
        model.to(eager.int64)


def test_factories_take_dtype_device_and_requires_grad():
    assert eager.zeros(2, 3, dtype=eager.float64, device="cpu").dtype == np.float64
    assert eager.ones((2, 3)).shape == (2, 3)
    assert eager.full((2,), 3).dtype == np.int64 and eager.full((2,), 3.0).dtype == np.float32
    assert eager.full((2,), True).dtype == np.bool_
    assert eager.arange(5).dtype == np.int64 and eager.arange(0, 1, 0.25).tolist() == \
        [0.0, 0.25, 0.5, 0.75]
    assert eager.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert np.allclose(eager.logspace(0, 2, 3).numpy(), [1, 10, 100])
    assert eager.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    r = eager.randint(2, 5, (100,))
    assert r.dtype == np.int64 and r.min().item() >= 2 and r.max().item() < 5
    assert eager.randint(3, (4,)).shape == (4,)
    assert sorted(eager.randperm(6).tolist()) == list(range(6))
    x = eager.rand(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert eager.full_like(x, 7).tolist() == [7.0] * 3
    assert eager.zeros_like(x).dtype == np.float32 and not eager.zeros_like(x).requires_grad
    assert eager.empty(2, 2).shape == (2, 2)
    with pytest.raises(RuntimeError, match="floating point"):
        eager.zeros(2, dtype=eager.int64, requires_grad=True)


def test_generators_give_reproducible_streams():
    g1, g2 = eager.Generator().manual_seed(7), eager.Generator().manual_seed(7)
    assert eager.randn(4, generator=g1).tolist() == eager.randn(4, generator=g2).tolist()
    eager.manual_seed(5)
    a = eager.rand(3).tolist()
    eager.manual_seed(5)
    assert eager.rand(3).tolist() == a


def test_grad_mode_forms_scripts_use():
    x = eager.ones(2, requires_grad=True)
    with eager.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad

    @eager.no_grad()
    def evaluate():
        return (x * 2).requires_grad

    @eager.inference_mode()
    def predict():
        return (x * 2).requires_grad
    assert evaluate() is False and predict() is False and eager.is_grad_enabled()
    eager.set_grad_enabled(False)
    assert not eager.is_grad_enabled()
    eager.set_grad_enabled(True)
