"""Calls users write inside a model's forward, each compiled on its own: every one is traced
(no graph break, which would run the function eagerly at every call) and gives eager's values
(random ones: eager's shape and dtype). The calls that read a layout (is_contiguous, stride)
or a value into Python (item, bool) are graph breaks by design and are not in the table."""
import warnings

import numpy as np
import pytest

from dualgrad import eager as torch
from dualgrad.compiler import compile

F = torch.nn.functional

CALLS = {
    "element_size": lambda t: t * t.element_size(),
    "nbytes": lambda t: t * t.nbytes,
    "numel": lambda t: t.sum() / t.numel(),
    "dim_size_shape": lambda t: t * (t.dim() + t.size(0) + t.shape[1]),
    "is_floating_point": lambda t: t * (2 if t.is_floating_point() else 3),
    "dtype_test": lambda t: t * (2 if t.dtype == torch.float32 else 3),
    "requires_grad_test": lambda t: t * (2 if t.requires_grad else 3),
    "storage_offset": lambda t: t * (t.storage_offset() + 1),
    "len": lambda t: t * len(t),
    "type_as": lambda t: t.type_as(t) * 2,
    "to_dtype_device": lambda t: t.to(torch.float64).to(t.device) * 2,
    "float_type": lambda t: t.float() + t.type(torch.float64),
    "cpu_detach_data": lambda t: t.cpu() + t.detach() + t.data,
    "views": lambda t: t.view(-1)[:6] + t.view_as(t)[0] + t.T[:, 0].sum() + t.mT.sum(),
    "expand_as_permute": lambda t: t[:1].expand_as(t) + t.permute(1, 0).t(),
    "unsqueeze_expand": lambda t: t.unsqueeze(0).expand(3, -1, -1) * 2,
    "contiguous_after_transpose": lambda t: t.t().contiguous().view(-1) * 2,
    "new_factories": lambda t: t + t.new_zeros(t.shape) + t.new_ones(t.shape)
    + t.new_full(t.shape, 2.0) + t.new_tensor([1.0] * 6),
    "like_factories": lambda t: t + torch.zeros_like(t) + torch.ones_like(t)
    + torch.full_like(t, 3.0) + 0 * torch.empty_like(t),
    "clone_flatten_repeat": lambda t: t.clone().flatten() + t.repeat(2, 1).flatten()[:24],
    "split_chunk_unbind": lambda t: t.split(2)[0].sum() + t.chunk(2)[1] + t.unbind(0)[1],
    "index_tensor": lambda t: t[torch.tensor([0, 2])] * 2,
    "where_clamp_masked_fill": lambda t: torch.where(t > 0, t, 0.0) + t.clamp(min=0)
    + t.masked_fill(t > 0, 0.0),
    "factories_in_forward": lambda t: t + torch.arange(t.shape[1]) + torch.linspace(0, 1, 6),
    "causal_mask": lambda t: t.masked_fill(torch.triu(torch.ones(4, 6), 1).bool(), 0.0),
    "tril": lambda t: t.tril() * 2,
    "softmax_norms": lambda t: t.softmax(-1) + t / t.norm(dim=-1, keepdim=True)
    + F.normalize(t, dim=-1),
    "topk_max_argmax_sort": lambda t: t.topk(2, -1).values.sum() + t.max(dim=1).values.sum()
    + t.argmax(-1).sum() + t.sort(-1)[0],
    "cumsum_std": lambda t: t.cumsum(-1) + t.std(0),
    "einsum_bmm": lambda t: torch.einsum("ij,kj->ik", t, t) + torch.bmm(t[None], t.t()[None])[0],
    "one_hot": lambda t: F.one_hot(t.argmax(-1), 6).float() * t,
    "pad_interpolate": lambda t: F.pad(t, (1, 1))[:, 1:-1] + F.interpolate(t[None], scale_factor=2)[0, :, ::2],
    "gather_scatter_add": lambda t: t.gather(1, t.argsort(1)) + t.scatter_add(1, t.argsort(1), t),
    "scatter_value": lambda t: t.scatter(1, t.topk(2, dim=1).indices, 0.0)
    + t.scatter(1, torch.zeros(4, 3, dtype=torch.int64), 5.0),     # NOTE: repeated: one value
    "one_hot_by_scatter": lambda t: torch.zeros(4, 6).scatter_(1, t.argmax(1, keepdim=True), 1.0),
    "cat_stack": lambda t: torch.cat([t, t], 0)[:4] + torch.stack([t, t]).sum(0),
    "isnan_any": lambda t: t * torch.isnan(t).any(),
    "channels_last": lambda t: t.reshape(1, 4, 6, 1).to(memory_format=torch.channels_last) * 2,
}

RANDOM = {
    "dropout": lambda t: F.dropout(t, 0.5) * 2,
    "bernoulli": lambda t: torch.bernoulli(t.sigmoid()) * 2,
    "multinomial": lambda t: torch.multinomial(t.softmax(-1), 1) * 2,
    "randperm_index": lambda t: t[torch.randperm(4)] * 2,
    "randn_like": lambda t: t + torch.randn_like(t),
}


def _traced(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # NOTE: a graph break warns: here it fails
        return compile(fn)(x)


@pytest.mark.parametrize("name", sorted(CALLS) + sorted(RANDOM))
def test_traced_with_eager_results(name):
    """Eager's shape and dtype; eager's values too, except for random draws."""
    fn = CALLS.get(name) or RANDOM[name]
    x = torch.randn(4, 6)
    got = _traced(fn, x)
    want = fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name in CALLS:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("read", ["is_contiguous", "stride", "storage_offset"])
def test_a_layout_read_is_a_graph_break_with_eager_values(read):
    """The check above can fail: a call that reads the layout (of a view passed in, for
    storage_offset) warns of its graph break at the user's line, and the call gives eager's
    value (a view's storage offset is 5, not the 0 a traced tensor would say)."""
    fns = {"is_contiguous": lambda t: t * (2 if t.is_contiguous() else 3),
           "stride": lambda t: t * t.stride(0),
           "storage_offset": lambda t: t * t.storage_offset()}
    x = torch.randn(4, 6).t()[1:]
    with pytest.raises(UserWarning, match="memory layout read"):
        _traced(fns[read], x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compile(fns[read])(x)
    np.testing.assert_array_equal(got.numpy(), fns[read](x).numpy())
