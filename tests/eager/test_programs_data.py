"""Data and tensor-plumbing idioms: from_numpy / numpy() / as_tensor sharing memory,
DataLoader collation of dicts, tuples, numbers, strings and arrays (dtypes as torch's),
random_split and Subset, len(loader) with drop_last, mse_loss broadcasting, torch.where
with one argument, isin, rounding division; run on dualgrad.eager and on torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def data_program(torch):
    r = {}
    F = torch.nn.functional
    a = np.zeros(3, np.float32)
    t = torch.from_numpy(a)
    a[0] = 5
    r["from_numpy_shares"] = t[0].item()
    t2 = torch.ones(3)
    n = t2.numpy()
    n[1] = 7
    r["numpy_shares"] = t2[1].item()
    t3 = torch.as_tensor(a)
    a[2] = 9
    r["as_tensor_shares"] = t3[2].item()
    t4 = torch.tensor(a)
    a[1] = 4
    r["tensor_copies"] = t4[1].item()
    r["mse_broadcast"] = F.mse_loss(torch.tensor([[1.0], [2.0], [3.0]]), torch.tensor([1.0, 2.0, 4.0]))
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    r["nograd_rg"] = [y.requires_grad, y.is_leaf, (x * 2).requires_grad]
    r["div_floor"] = torch.div(torch.tensor([-7, 7]), 2, rounding_mode="floor")
    r["div_trunc"] = torch.div(torch.tensor([-7.0, 7.0]), 2, rounding_mode="trunc")
    d = torch.utils.data
    class DictDS(d.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": torch.full((2,), float(i)), "y": i, "name": f"s{i}",
                    "arr": np.array([i, i])}

    batches = list(d.DataLoader(DictDS(), batch_size=2))
    r["collate_x"] = batches[0]["x"]
    r["collate_y"] = batches[0]["y"]
    r["collate_name"] = batches[2]["name"]
    r["collate_arr"] = batches[1]["arr"]
    r["n_batches"] = len(d.DataLoader(DictDS(), batch_size=2))
    r["n_batches_drop"] = len(d.DataLoader(DictDS(), batch_size=2, drop_last=True))
    r["collate_y_dtype"] = str(batches[0]["y"].dtype).replace("torch.", "")
    r["collate_arr_dtype"] = str(batches[0]["arr"].dtype).replace("torch.", "")
    ds = d.TensorDataset(torch.arange(10.0), torch.arange(10))
    tr, va = d.random_split(ds, [8, 2], generator=torch.Generator().manual_seed(0))
    r["split_lens"] = [len(tr), len(va)]
    r["subset"] = d.Subset(ds, [3, 1])[1][0].item()
    r["ds_item"] = [ds[2][0].item(), ds[2][1].item()]
    tupl = list(d.DataLoader([(1, 2.0), (3, 4.0)], batch_size=2))[0]
    r["collate_tuple"] = str([tupl[0].tolist(), tupl[1].tolist(), str(tupl[1].dtype)[-7:]])
    r["float_collate"] = str(list(d.DataLoader([1.5, 2.5], batch_size=2))[0].dtype).replace("torch.", "")
    r["np_float64_collate"] = str(list(d.DataLoader([np.float64(1.5), np.float64(2.5)], batch_size=2))[0].dtype).replace("torch.", "")
    r["np_arr64_collate"] = str(list(d.DataLoader([np.zeros(2), np.ones(2)], batch_size=2))[0].dtype).replace("torch.", "")
    r["loader_none_bs"] = [b.tolist() for b in d.DataLoader(torch.arange(3), batch_size=None)]
    r["argmax_keepdim"] = torch.tensor([[1.0, 3.0], [4.0, 2.0]]).argmax(dim=1, keepdim=True)
    r["expand_inplace_copy"] = torch.zeros(2, 3).copy_(torch.tensor([1.0, 2.0, 3.0]))
    r["index_add"] = torch.zeros(3).index_add_(0, torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 3.0]))
    r["scatter_reduce"] = torch.zeros(3).scatter_reduce(0, torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 3.0]), reduce="amax", include_self=False)
    r["bincount"] = torch.bincount(torch.tensor([0, 1, 1, 3]))
    r["unique_inverse"] = torch.unique(torch.tensor([3, 1, 3]), return_inverse=True)[1]
    r["cumsum_flip"] = torch.flip(torch.cumsum(torch.tensor([1.0, 2.0, 3.0]), 0), [0])
    r["sum_bool_dim"] = torch.tensor([[True, False], [True, True]]).sum(dim=0)
    r["any_all"] = [bool(torch.tensor([0, 1]).any()), bool(torch.tensor([0, 1]).all())]
    r["isin"] = torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2, 3]))
    r["where_one_arg"] = torch.where(torch.tensor([0, 1, 1]))[0]
    return r


def test_data_program_equals_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # mse_loss's broadcast warning, in both
        ours, ref = data_program(dualgrad.eager), data_program(real_torch)
    assert_same_results(ours, ref)
