"""Smaller torch names the census found missing, each against real torch: torch.range,
nn.EmbeddingBag, the torch.cuda allocator counters on a CPU-only build, nn.parallel's
data_parallel, RNN.flatten_parameters and the nn.modules.<file>.<Class> paths; beside
torch.range, arange, linspace, logspace and full_like in integer and half dtypes."""
import warnings

import numpy as np
import pytest

from dualgrad import eager as dg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("args,dtype", [((1, 4), None), ((0, 1, 0.3), None), ((1, 4), "int64"),
                                        ((4, 1, -1), None), ((0, 1, 0.1), None), ((2, 2), None),
                                        ((0.5, 2.5, 0.5), "float64")])
def test_range_includes_its_end_as_torch(args, dtype):
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        got = dg.range(*args, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.range(*args, dtype=getattr(torch, dtype) if dtype else None)
    assert got.tolist() == want.tolist() and str(got.dtype) == str(want.dtype)


# torch's CPU kernels: an integer dtype truncates start, end and step (int64 counts its steps
# in integers), linspace goes up to halfway and back from end with fused multiply-adds and
# converts start and end to the dtype first, logspace takes C's pow; op_db's samples past the
# test's cap (tests/eager/test_opdb.py)
SPACED = [
    ("arange", (-0.9, 2.1, 2.0), "int16"), ("arange", (-0.9, 2.1, 2.0), "int64"),
    ("arange", (2.1, -2.9, -1.0), "uint8"), ("arange", (0.0, -8.000001, -4.0), "int64"),
    ("arange", (0, 5, 0.5), "int32"), ("arange", (0, 5, 0.5), "int64"),
    ("arange", (0, 5, 0), None), ("arange", (3, 1), None), ("arange", (0, float("inf")), None),
    ("linspace", (-15.131, 17.521, 101), "int16"), ("linspace", (4.3, -3, 50), "int8"),
    ("linspace", (4.3, 50, 50), "uint8"), ("linspace", (4.3, -3, 50), "float16"),
    ("linspace", (4.3, -3, 50), "bfloat16"), ("linspace", (0, 4.863, 101), "float64"),
    ("linspace", (14.479, -8, 50), "float32"), ("linspace", (2.5, 7, 1), "int32"),
    ("linspace", (0, 1, -1), None),
    ("logspace", (4.3, 0, 2, 2.0), "uint8"), ("logspace", (1.2, 4, 4), "int32"),
    ("logspace", (4.3, -3, 2), "float16"), ("logspace", (4.3, -3, 2, 5.0), "bfloat16"),
    ("logspace", (4.947, 13.697, 50), "float64"), ("logspace", (0.5, 2, 1, 3.0), "int64"),
]


@pytest.mark.parametrize("name,args,dtype", SPACED)
def test_arange_linspace_logspace_values_as_torch(name, args, dtype):
    def run(lib):
        try:
            out = getattr(lib, name)(*args, dtype=getattr(lib, dtype) if dtype else None)
        except (RuntimeError, ValueError) as e:
            return type(e), str(e)
        return str(out.dtype).replace("torch.", ""), out.double().tolist()
    assert run(dg) == run(torch)


@pytest.mark.parametrize("dtype,value", [("uint8", -3), ("uint8", -255), ("int8", -128)])
def test_full_like_wraps_a_negative_int_as_torch(dtype, value):
    got = dg.full_like(dg.zeros(2, dtype=getattr(dg, dtype)), value)
    assert got.tolist() == torch.full_like(torch.zeros(2, dtype=getattr(torch, dtype)),
                                           value).tolist()


def test_range_refuses_a_step_against_the_bounds():
    with pytest.raises(RuntimeError, match="inconsistent with step sign"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dg.range(3, 1)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("form", ["2d", "offsets", "last_offset", "weights", "padding"])
def test_embedding_bag_module_agrees_with_torch(mode, form):
    w = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    kw = {"mode": mode, "include_last_offset": form == "last_offset",
          "padding_idx": 2 if form == "padding" else None}
    ours = dg.nn.EmbeddingBag.from_pretrained(dg.tensor(w), freeze=False, **kw)
    theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=False, **kw)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    args = {"2d": lambda t: (t(idx.reshape(2, 4)),),
            "offsets": lambda t: (t(idx), t([0, 3, 5])),
            "last_offset": lambda t: (t(idx), t([0, 3, 5, 8])),
            "weights": lambda t: (t(idx), t([0, 4]), t(np.linspace(0.5, 2, 8, dtype=np.float32))),
            "padding": lambda t: (t(idx), t([0, 2, 5]))}[form]
    if form == "weights" and mode != "sum":   # NOTE: weights are for sums only: both refuse
        for module, t in ((ours, dg.tensor), (theirs, torch.tensor)):
            with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
                module(*args(t))
        return
    got, want = ours(*args(dg.tensor)), theirs(*args(torch.tensor))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-6)
    assert repr(ours).startswith("EmbeddingBag(10, 3")


def test_cuda_allocator_counters_answer_as_torch_cpu_build():
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved"):
        assert getattr(dg.cuda, name)() == getattr(torch.cuda, name)() == 0
    assert dict(dg.cuda.memory_stats()) == dict(torch.cuda.memory_stats()) == {}
    for name in ("synchronize", "current_device", "mem_get_info"):
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            getattr(dg.cuda, name)()


def test_data_parallel_needs_a_gpu_as_in_torch_and_flatten_parameters_does_nothing():
    import dualgrad.eager.nn.parallel as parallel
    lin = dg.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        parallel.data_parallel(lin, dg.ones(1, 2))
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        torch.nn.parallel.data_parallel(torch.nn.Linear(2, 2), torch.ones(1, 2))
    gru = dg.nn.GRU(3, 4)
    before = {k: v.clone() for k, v in gru.state_dict().items()}
    assert gru.flatten_parameters() is None
    assert all(np.array_equal(before[k].numpy(), v.numpy()) for k, v in gru.state_dict().items())


def test_nn_modules_paths_are_torchs_files():
    import torch.nn.modules as torch_files
    for file, classes in vars(dg.nn.modules).items():
        theirs = getattr(torch_files, file)
        for name, cls in vars(classes).items():
            if name != "NonDynamicallyQuantizableLinear":
                assert hasattr(theirs, name), f"torch.nn.modules.{file} has no {name}"
            assert cls is getattr(dg.nn, name, cls)
    assert dg.nn.modules.conv.Conv2d is dg.nn.Conv2d
    assert dg.nn.modules.pixelshuffle.PixelShuffle is dg.nn.PixelShuffle
