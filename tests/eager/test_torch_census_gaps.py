"""The torch names the census found missing, checked against torch where it is installed:
CUDA tensor types on a CPU-only machine, resize_/resize/new, DataParallel as a passthrough,
multiprocessing.spawn, nn.init's old names, version strings, torch.nn.modules paths,
Linear/Embedding(device=, dtype=). A few seconds (spawn starts two processes)."""
import os

import numpy as np
import pytest

import dualgrad.eager as dg

torch = pytest.importorskip("torch")


def _err(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def test_cuda_tensor_types_raise_torchs_cpu_only_error():
    assert _err(lambda: dg.cuda.FloatTensor(2))[0] is _err(lambda: torch.cuda.FloatTensor(2))[0]
    assert "Torch not compiled with CUDA enabled" in _err(lambda: dg.cuda.LongTensor([1]))[1]
    cuda = False
    Tensor = dg.cuda.FloatTensor if cuda else dg.FloatTensor
    assert Tensor(2, 3).dtype == dg.float32
    assert not isinstance(dg.ones(2), dg.cuda.FloatTensor)
    with pytest.raises(AssertionError, match="CUDA"):
        dg.ones(2).type(dg.cuda.FloatTensor)


def test_resize_and_new_match_torch():
    for mod in (dg, torch):
        x = mod.arange(6.0).reshape(2, 3)
        assert x.resize_(3, 2).tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
        assert x.resize_(4).tolist() == [0.0, 1.0, 2.0, 3.0]
        with pytest.warns(UserWarning, match="non-inplace resize"):
            assert x.resize(2, 2).shape == (2, 2)
        assert x.new([1, 2]).dtype == x.dtype and tuple(x.new(3).shape) == (3,)
    w = dg.ones(2, requires_grad=True)
    assert _err(lambda: w.resize_(3)) == _err(lambda: torch.ones(2, requires_grad=True)
                                             .resize_(3))


def test_data_parallel_is_a_passthrough_on_the_cpu():
    dg.manual_seed(0)
    lin = dg.nn.Linear(3, 2)
    m = dg.nn.DataParallel(lin, device_ids=[0, 1])
    ref = torch.nn.DataParallel(torch.nn.Linear(3, 2), device_ids=[0, 1])
    assert list(m.state_dict()) == list(ref.state_dict()) == ["module.weight", "module.bias"]
    assert m.module is lin and m.device_ids == ref.device_ids == []
    x = dg.ones(4, 3)
    assert np.allclose(m(x).detach().numpy(), lin(x).detach().numpy())


def _worker(rank, path):
    with open(os.path.join(path, f"rank{rank}"), "w") as f:
        f.write(str(float(dg.ones(2).sum()) + rank))


def _fails(rank):
    raise ValueError(f"bad rank {rank}")


def test_multiprocessing_spawn(tmp_path):
    dg.multiprocessing.spawn(_worker, args=(str(tmp_path),), nprocs=2)
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["2.0", "3.0"]
    with pytest.raises(dg.multiprocessing.ProcessRaisedException, match="bad rank"):
        dg.multiprocessing.spawn(_fails, nprocs=1)


def test_old_init_names_warn_and_work():
    w = dg.empty(3, 4)
    with pytest.warns(FutureWarning, match="xavier_uniform_"):
        dg.nn.init.xavier_uniform(w)
    assert float(w.abs().max()) <= np.sqrt(6 / 7) + 1e-6


def test_versions_devices_and_module_paths():
    assert dg.__version__.startswith("2.") and dg.version.cuda is torch.version.cuda is None
    assert dg.backends.cudnn.version() is torch.backends.cudnn.version() is None
    assert dg.nn.modules.linear.Linear is dg.nn.Linear
    assert isinstance(dg.nn.LSTM(2, 3), dg.nn.modules.rnn.LSTM)
    lin = dg.nn.Linear(2, 3, device="cpu", dtype=dg.float64)
    assert lin.weight.dtype == dg.float64 == torch.nn.Linear(2, 3, dtype=torch.float64) \
        .weight.detach().numpy().dtype
    with pytest.raises(AssertionError, match="CUDA"):
        dg.nn.Embedding(3, 2, device="cuda")
    assert tuple(dg.empty(size=(2, 3)).shape) == tuple(torch.empty(size=(2, 3)).shape)
    e = dg.nn.Embedding(5, 2, padding_idx=0)
    e.reset_parameters()
    assert e.weight[0].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="accelerator"):
        dg.ones(2).pin_memory()


@pytest.mark.parametrize("name,pad,ndim", [("ReflectionPad2d", (1, 2, 3, 0), 4),
                                           ("ReplicationPad2d", 2, 4), ("ReflectionPad1d", (2, 1), 3),
                                           ("ReplicationPad1d", 3, 3), ("CircularPad2d", (1, 1, 2, 2), 4)])
def test_padding_modes_match_torch_values_and_gradients(name, pad, ndim):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 4, 5)[4 - ndim:]).astype(np.float32)
    xt, xd = torch.tensor(a, requires_grad=True), dg.tensor(a, requires_grad=True)
    yt, yd = getattr(torch.nn, name)(pad)(xt), getattr(dg.nn, name)(pad)(xd)
    g = rng.normal(size=tuple(yt.shape)).astype(np.float32)
    (yt * torch.tensor(g)).sum().backward()
    (yd * dg.tensor(g)).sum().backward()
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy())
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), atol=1e-5)


def test_reflection_padding_too_large_raises_as_torch():
    x = np.zeros((1, 1, 4, 4), np.float32)
    assert _err(lambda: dg.nn.ReflectionPad2d(4)(dg.tensor(x)))[0] is \
        _err(lambda: torch.nn.ReflectionPad2d(4)(torch.tensor(x)))[0]


def test_serialization_and_distributed_helpers():
    import dualgrad.eager.distributed as dist
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    with pytest.raises(AssertionError, match="CUDA"):
        dist.get_default_backend_for_device("cuda")
    with dg.serialization.safe_globals([dict]):   # nothing to allow: load never unpickles
        pass


def test_reset_parameters_draws_as_init_does():
    dg.manual_seed(0)
    fresh = dg.nn.Linear(5, 3)
    dg.manual_seed(0)
    layer = dg.nn.Linear(5, 3)
    layer.weight.data.zero_()
    weight = layer.weight
    dg.manual_seed(0)
    layer.reset_parameters()
    assert layer.weight is weight   # in place, as torch's
    np.testing.assert_array_equal(layer.weight.detach().numpy(), fresh.weight.detach().numpy())
    np.testing.assert_array_equal(layer.bias.detach().numpy(), fresh.bias.detach().numpy())
    ref = torch.nn.Linear(5, 3)
    ref.reset_parameters()
    assert abs(ref.weight).max() <= 5 ** -0.5 and abs(layer.weight).max().item() <= 5 ** -0.5
    norm = dg.nn.LayerNorm(4)
    with dg.no_grad():
        norm.weight.mul_(3)
        norm.bias.add_(2)
    norm.reset_parameters()
    assert norm.weight.tolist() == [1.0] * 4 and norm.bias.tolist() == [0.0] * 4


def test_deprecated_names_warn_as_torch_and_do_the_new_ones_work():
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        got = dg.nn.functional.upsample(dg.tensor(x), scale_factor=2, mode="nearest")
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        want = torch.nn.functional.upsample(torch.tensor(x), scale_factor=2, mode="nearest")
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    grads = []
    for lib in (dg, torch):
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.ones(3) * 5
        with pytest.warns(FutureWarning, match="clip_grad_norm_"):
            norm = lib.nn.utils.clip_grad_norm([p], 1.0)
        grads.append([float(norm)] + p.grad.tolist())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
