"""Which index torch reports among equal values, where its CPU kernel decides it by an
algorithm dualgrad follows (kthvalue's quickselect), against real torch on random rows full
of ties and NaN.
"""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["int64", "uint8", "float32", "float16"])
def test_kthvalue_picks_torchs_index_among_ties(dtype):
    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(1, 40))
        rows = rng.integers(0, 6, (3, n)).astype(dtype)
        if dtype.startswith("float") and trial % 4 == 0:
            rows[rng.integers(3), rng.integers(n)] = np.nan
        k = int(rng.integers(1, n + 1))
        ref = torch.kthvalue(torch.from_numpy(rows), k, dim=1)
        ours = eager.kthvalue(eager.tensor(rows), k, dim=1)
        np.testing.assert_array_equal(np.asarray(ours.indices), ref.indices.numpy())
        np.testing.assert_array_equal(np.asarray(ours.values).astype(np.float64),
                                      ref.values.double().numpy())


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_topk_picks_torchs_indices_among_ties(dtype):
    """Both of torch's paths: nth_element + sort (k * 64 > n) and partial_sort (k * 64 <= n),
    largest and smallest, sorted or not."""
    rng = np.random.default_rng(1)
    for trial in range(40):
        n = int(rng.integers(1, 300)) if trial % 2 else int(rng.integers(1, 40))
        rows = rng.integers(0, 5, (2, n)).astype(dtype)
        if dtype == "float32" and trial % 5 == 0:
            rows[0, rng.integers(n)] = np.nan
        k = int(rng.integers(1, max(2, n // 64 + 1))) if trial % 3 == 0 else \
            int(rng.integers(1, n + 1))
        largest, srt = trial % 4 != 1, trial % 7 != 3
        ref = torch.topk(torch.from_numpy(rows), k, largest=largest, sorted=srt)
        ours = eager.topk(eager.tensor(rows), k, largest=largest, sorted=srt)
        np.testing.assert_array_equal(np.asarray(ours.indices), ref.indices.numpy())


@pytest.mark.parametrize("dtype", ["int8", "float16", "bool"])
def test_unstable_sort_orders_ties_as_torch(dtype):
    """sort(stable=False) is std::sort in torch, except its stable radix sort for a 1-d integer
    tensor of 32768 or more elements sorted ascending; stable=True keeps equal values in
    order."""
    rng = np.random.default_rng(2)
    for shape in ((3, 50), (700,), (33000,)):
        x = rng.integers(0, 7, shape).astype(dtype)
        for descending in (False, True):
            for stable in (False, True):
                ref = torch.sort(torch.from_numpy(x), descending=descending, stable=stable)
                ours = eager.sort(eager.tensor(x), descending=descending, stable=stable)
                np.testing.assert_array_equal(np.asarray(ours.indices), ref.indices.numpy())
                np.testing.assert_array_equal(
                    np.asarray(eager.argsort(eager.tensor(x), descending=descending)),
                    torch.argsort(torch.from_numpy(x), descending=descending).numpy())


@pytest.mark.parametrize("dtype", ["int64", "bool", "float32", "float16"])
def test_mode_picks_torchs_index_among_copies(dtype):
    """mode's index among the copies of the mode is where std::sort (introsort past 16
    elements) left the last of them; NaN, equal to nothing under C++'s <, scatters."""
    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(1, 40)) if trial % 2 else int(rng.integers(100, 3000))
        rows = rng.integers(0, max(2, n // 5), (3, n)).astype(dtype)
        if dtype.startswith("float") and trial % 3 == 0:
            rows[rng.random(rows.shape) < 0.1] = np.nan
        ref = torch.mode(torch.from_numpy(rows), dim=1)
        ours = eager.mode(eager.tensor(rows), dim=1)
        np.testing.assert_array_equal(np.asarray(ours.indices), ref.indices.numpy())
        np.testing.assert_array_equal(np.asarray(ours.values).astype(np.float64),
                                      ref.values.double().numpy())


# Gradients among ties: which elements get the gradient when several hold the picked value.
# torch's `max(dim)`, `min(dim)`, `median(dim)`, `kthvalue`, `mode`, `topk`, the poolings give
# it to the element at the reported index; `amax`, `amin`, `max()`, `median()` share it
# evenly. op_db's random samples have no ties, so this is checked on rows full of them
# (max(dim) shared it, as amax does, before).
TIE_GRADIENTS = {
    "max(dim)": lambda L, x: x.max(1)[0], "min(dim)": lambda L, x: x.min(1)[0],
    "max(dim, keepdim)": lambda L, x: x.max(0, keepdim=True).values,
    "amax": lambda L, x: x.amax(1), "amin": lambda L, x: x.amin((0, 1)),
    "max()": lambda L, x: x.max(), "min()": lambda L, x: x.min(),
    "median(dim)": lambda L, x: x.median(1)[0], "median()": lambda L, x: x.median(),
    "nanmedian(dim)": lambda L, x: x.nanmedian(1)[0], "kthvalue": lambda L, x: x.kthvalue(2, 1)[0],
    "mode": lambda L, x: x.mode(1)[0], "topk": lambda L, x: x.topk(2, 1)[0],
    "sort": lambda L, x: x.sort(1)[0] * L.arange(x.shape[1]),
    "cummax": lambda L, x: x.cummax(1)[0], "cummin": lambda L, x: x.cummin(1)[0],
    "aminmax": lambda L, x: L.aminmax(x, dim=1)[1],
    "maximum": lambda L, x: L.maximum(x, x.flip(1)),
    "max_pool1d": lambda L, x: L.nn.functional.max_pool1d(x[None], 2),
    "adaptive_max_pool1d": lambda L, x: L.nn.functional.adaptive_max_pool1d(x[None], 2),
    "clamp": lambda L, x: x.clamp(1.0, 2.0), "relu": lambda L, x: L.relu(x - 1.0),
    "abs": lambda L, x: (x - 2.0).abs(),
}


@pytest.mark.parametrize("name", list(TIE_GRADIENTS))
def test_gradients_among_ties_go_where_torchs_go(name):
    rng = np.random.default_rng(7)
    for _ in range(8):
        rows = rng.integers(0, 4, (3, int(rng.integers(2, 7)))).astype(np.float64)
        grads = []
        for lib in (torch, eager):
            x = lib.tensor(rows, requires_grad=True)
            out = TIE_GRADIENTS[name](lib, x)
            w = lib.tensor(np.arange(1.0, out.numel() + 1).reshape(tuple(out.shape)))
            (out * w).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, err_msg=f"{name} on {rows}")
