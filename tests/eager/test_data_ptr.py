"""Tensor.data_ptr() and untyped_storage() against torch: over views as users make them, the
questions programs ask (do two tensors share memory, from where, how big is the storage) get
torch's answers; inside compile() they end the trace (a traced value has no address)."""
import warnings

import pytest
import torch

from dualgrad import eager
from dualgrad.compiler import compile

VIEWS = {
    "itself": lambda t: t,
    "slice": lambda t: t[1:3],
    "step_slice": lambda t: t[:, 1::2],
    "transpose": lambda t: t.t(),
    "select": lambda t: t[2],
    "element": lambda t: t[1, 2],
    "narrow": lambda t: t.narrow(1, 2, 3),
    "view": lambda t: t.view(24),
    "reshape_slice": lambda t: t.reshape(6, 4)[1:],
    "detach": lambda t: t.detach(),
    "unsqueeze_slice": lambda t: t[1:].unsqueeze(0),
    "empty_slice": lambda t: t[2:2],
    "clone": lambda t: t.clone(),
    "contiguous_of_t": lambda t: t.t().contiguous(),
    "arith": lambda t: t * 1,
}


def _answers(lib, view, dtype):
    base = (lib.arange(24) % 3).to(dtype).reshape(4, 6)
    v = view(base)
    return {"offset_bytes": v.data_ptr() - base.data_ptr() if v.data_ptr() else None,
            "empty_is_0": v.data_ptr() == 0 if v.numel() == 0 else None,
            "shares_storage": v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(),
            "storage_bytes": v.untyped_storage().nbytes(),
            "storage_len": len(v.untyped_storage())}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_memory_as_in_torch(name, dtype):
    view = VIEWS[name]
    got = _answers(eager, view, getattr(eager, dtype))
    want = _answers(torch, view, getattr(torch, dtype))
    if not want["shares_storage"]:
        got.pop("offset_bytes"), want.pop("offset_bytes")   # two allocations: any distance
    assert got == want


def test_tied_weights_have_one_address():
    for lib in (torch, eager):
        enc, dec = lib.nn.Embedding(10, 4), lib.nn.Linear(4, 10, bias=False)
        dec.weight = enc.weight
        assert dec.weight.data_ptr() == enc.weight.data_ptr()
        assert lib.nn.Linear(4, 10).weight.data_ptr() != enc.weight.data_ptr()


def test_inside_compile_it_is_a_graph_break():
    @compile
    def f(x):
        y = x * 2
        return y + (1.0 if y.data_ptr() else 0.0)
    x = eager.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(x)
        assert f(x).tolist() == [3.0, 3.0, 3.0]
    with pytest.warns(UserWarning, match=r"data_ptr\(\)"):
        compile(lambda x: x.untyped_storage().nbytes() + x)(x)
