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
