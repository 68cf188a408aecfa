"""The tensor idioms of tutorials and papers (indexing with masks and index tensors,
gather/scatter, masked_fill, creation, dtypes and devices), written once against a module
named `torch` and run on dualgrad.eager and on torch: values, shapes and dtypes agree."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def indexing_program(torch):
    r = {}
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    idx = torch.tensor([[0, 2], [1, 3], [3, 0]])
    r["gather"] = torch.gather(x, 1, idx)
    r["scatter_"] = torch.zeros(3, 4).scatter_(1, idx, 1.0)
    r["scatter_src"] = torch.zeros(3, 4).scatter(1, idx, torch.ones(3, 2) * 5)
    onehot = torch.zeros(4, 5)
    onehot.scatter_(1, torch.tensor([1, 0, 4, 2]).unsqueeze(1), 1)
    r["one_hot"] = onehot
    mask = x > 5
    r["masked_fill"] = x.masked_fill(mask, -1e9)
    r["masked_fill_finfo"] = x.masked_fill(~mask, torch.finfo(x.dtype).min)
    r["x[mask]"] = x[mask]
    r["x[x > 3]"] = x[x > 3]
    r["rows[mask]"] = x[torch.tensor([True, False, True])]
    y = x.clone()
    y[mask] = 0
    r["x[mask] = 0"] = y
    r["pick"] = x[torch.arange(3), torch.tensor([1, 2, 3])]
    r["pick_range"] = x[range(3), [0, 0, 1]]
    r["mixed"] = x[1:, [0, 2]]
    r["where"] = torch.where(x > 3, x, torch.zeros_like(x))
    r["nonzero"] = (x > 8).nonzero()
    r["topk"] = x.topk(2, dim=1)[1]
    r["correct"] = (x.argmax(1) == torch.tensor([3, 3, 0])).sum().item()
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]], requires_grad=True)
    target = torch.tensor([1, 2])
    logp = logits.log_softmax(-1)
    nll = -logp[torch.arange(2), target].mean()       # the NLL written by hand
    nll.backward()
    r["nll"], r["nll_grad"] = nll, logits.grad
    w = torch.ones(3, 4, requires_grad=True)
    (w * 2)[mask].sum().backward()
    r["mask_grad"] = w.grad
    r["max_of_two"] = torch.max(x, torch.full_like(x, 5.0))
    r["min_of_two"] = x.min(torch.full_like(x, 5.0))
    r["floordiv"] = torch.tensor([5, -7]) // 2
    r["floordiv_float"] = torch.tensor([5.5, -7.0]) // 2
    r["rfloordiv"] = 7 // torch.tensor([2, 3])
    r["mod"] = torch.tensor([5, -7]) % 3
    r["mod_float"] = torch.tensor([5.5, -7.5]) % 2
    r["shift"] = torch.tensor([1, 2]) << 2
    z = torch.tensor([9, 10])
    z //= 4
    r["ifloordiv"] = z
    keep = torch.tensor([True, True, False])
    keep &= torch.tensor([True, False, True])
    r["iand"] = keep
    lt = torch.tensor([1.0, 2.0, 3.0])
    lt.lt_(2.5)
    r["lt_"] = lt
    return r


def dtype_program(torch):
    r = {}
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    r["arange"], r["arange_f"] = torch.arange(5), torch.arange(0, 1, 0.25)
    r["linspace"], r["full"] = torch.linspace(0, 1, steps=5), torch.full((2, 3), 7)
    r["full_bool"], r["eye"] = torch.full((2,), True), torch.eye(3, 2)
    base = torch.tensor([[1.5, 2.0]])
    r["new_zeros"], r["new_full"] = base.new_zeros((3,)), base.new_full((2,), 3)
    r["new_tensor"], r["ones_like"] = base.new_tensor([1, 2]), torch.ones_like(base, dtype=torch.int32)
    x = torch.tensor([[1.7, -2.2], [3.5, 0.4]])
    r["long"], r["int"], r["double"], r["bool"] = x.long(), x.int(), x.double(), x.bool()
    r["to"] = x.to(device, dtype=torch.float64)
    r["cumsum_int32"] = torch.tensor([1, 2], dtype=torch.int32).cumsum(0)
    r["cumsum_bool"] = torch.tensor([True, False, True]).cumsum(dim=0)
    r["cumprod_int32"] = torch.cumprod(torch.tensor([2, 3], dtype=torch.int32), 0)
    r["prod_int32"] = torch.tensor([2, 3], dtype=torch.int32).prod()
    r["prod_bool"] = torch.tensor([True, False]).prod()
    r["sum_dtype"] = torch.tensor([1, 2], dtype=torch.int32).sum(dtype=torch.float64)
    r["mean_dtype"] = torch.mean(torch.tensor([1.0, 2.0]), dim=0, dtype=torch.float64)
    r["uint8_wrap"] = torch.tensor([250], dtype=torch.uint8) + 10
    r["int_true_div"] = torch.tensor([3]) / torch.tensor([2])
    r["int_plus_float"] = torch.tensor([1, 2]) + 0.5
    r["flags"] = [torch.is_floating_point(x), torch.is_complex(x), torch.is_tensor(x),
                  x.shape == torch.Size([2, 2]), torch.Size([2, 3]).numel(),
                  torch.finfo(torch.float16).eps, torch.iinfo(torch.int32).max,
                  torch.finfo().tiny, torch.pi, torch.inf]
    r["greater"] = torch.greater(x, 1.0)
    return r


def edge_program(torch):
    x = torch.tensor([[3.0, float("nan"), float("inf"), 1.0, float("nan")],
                      [1.0, 2.0, float("nan"), 0.0, 5.0]])
    m = torch.tensor([[1.0, 2.0], [3.0, 5.0]])
    return {"sort_desc_nan": torch.sort(x, descending=True).indices,
            "sort_desc_nan_dim0": torch.sort(x, dim=0, descending=True).indices,
            "argsort_desc_nan": x.argsort(dim=1, descending=True),
            "topk_nan": torch.topk(x, 2).values,
            "std_of_one": torch.tensor([1.0]).std(),
            "var_of_one_dim": torch.ones(1, 3).var(0),
            "var_positional_unbiased": m.var(0, False),
            "std_positional_keepdim": m.std(1, True, True),
            "var_correction": m.var(dim=1, correction=0)}


@pytest.mark.parametrize("program", [indexing_program, dtype_program, edge_program])
def test_program_equals_torch(program):
    assert_same_results(program(dualgrad.eager), program(real_torch))


def test_boolean_mask_indexing_follows_numpy_and_carries_gradients():
    x = dualgrad.eager.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    picked = x[x > 2.5]
    assert picked.tolist() == [3.0, 4.0, 5.0]
    picked.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


def test_an_index_out_of_range_names_the_shape():
    x = dualgrad.eager.zeros(2, 3)
    with pytest.raises(IndexError, match=r"shape \(2, 3\)"):
        x[dualgrad.eager.tensor([0, 5]), dualgrad.eager.tensor([0, 1])]
