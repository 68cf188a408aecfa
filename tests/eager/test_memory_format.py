"""Memory formats against torch: which calls lay a tensor out channels-last, what stride() and
is_contiguous() then say, that values and gradients never change, and torch's errors."""
import numpy as np
import pytest
import torch

from dualgrad import eager

SHAPE = (2, 3, 4, 5)


def _pair(shape=SHAPE, grad=False):
    x = torch.randn(*shape, dtype=torch.float64)
    d = eager.tensor(x.numpy().copy(), requires_grad=grad)
    return x.requires_grad_(grad), d


def _fmt(lib, name):
    return None if name is None else getattr(lib, name)


FORMATS = [None, "contiguous_format", "preserve_format", "channels_last"]

# each call as a user writes it, on a tensor already laid out by `first`
CALLS = {
    "to": lambda t, lib, f: t.to(memory_format=f) if f else t.to(lib.float64),
    "contiguous": lambda t, lib, f: t.contiguous(memory_format=f) if f else t.contiguous(),
    "clone": lambda t, lib, f: t.clone(memory_format=f) if f else t.clone(),
    "float": lambda t, lib, f: t.float(memory_format=f) if f else t.float(),
    "zeros_like": lambda t, lib, f: lib.zeros_like(t, memory_format=f) if f else
    lib.zeros_like(t),
    "ones_like": lambda t, lib, f: lib.ones_like(t, memory_format=f) if f else lib.ones_like(t),
    "empty_like": lambda t, lib, f: lib.empty_like(t, memory_format=f) if f else
    lib.empty_like(t),
    "full_like": lambda t, lib, f: lib.full_like(t, 2.0, memory_format=f) if f else
    lib.full_like(t, 2.0),
    "randn_like": lambda t, lib, f: lib.randn_like(t, memory_format=f) if f else
    lib.randn_like(t),
    "torch.clone": lambda t, lib, f: lib.clone(t, memory_format=f) if f else lib.clone(t),
}


@pytest.mark.parametrize("first", [None, "channels_last"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_layout_matches_torch(call, fmt, first):
    x, d = _pair()
    if first:
        x, d = x.to(memory_format=torch.channels_last), \
            d.to(memory_format=eager.channels_last)
    if call == "contiguous" and fmt == "preserve_format" and first:
        with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
            x.contiguous(memory_format=torch.preserve_format)
        with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
            d.contiguous(memory_format=eager.preserve_format)
        return
    want = CALLS[call](x, torch, _fmt(torch, fmt))
    got = CALLS[call](d, eager, _fmt(eager, fmt))
    assert got.stride() == want.stride()
    for f in ("contiguous_format", "channels_last"):
        assert got.is_contiguous(memory_format=getattr(eager, f)) == \
            want.is_contiguous(memory_format=getattr(torch, f))
    assert tuple(got.shape) == tuple(want.shape)
    if call not in ("randn_like", "empty_like"):      # NOTE: torch's empty is uninitialised
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    # whether the call returned its input, as torch's
    assert (got is d) == (want is x)


def test_gradient_flows_through_a_layout_change():
    x, d = _pair(grad=True)
    w = torch.arange(120.0, dtype=torch.float64).reshape(SHAPE)
    (x.to(memory_format=torch.channels_last) * w).sum().backward()
    (d.to(memory_format=eager.channels_last) * eager.tensor(w.numpy())).sum().backward()
    np.testing.assert_array_equal(d.grad.numpy(), x.grad.numpy())


def test_channels_last_3d_and_empty():
    x = torch.randn(2, 3, 4, 5, 6)
    d = eager.tensor(x.numpy())
    assert d.to(memory_format=eager.channels_last_3d).stride() == \
        x.to(memory_format=torch.channels_last_3d).stride()
    assert eager.empty(2, 3, 4, 5, memory_format=eager.channels_last).stride() == \
        torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()


@pytest.mark.parametrize("shape,fmt", [((3, 4), "channels_last"), ((2, 3, 4, 5), "channels_last_3d"),
                                       ((2, 3, 4), "channels_last")])
def test_wrong_rank_raises_as_torch(shape, fmt):
    with pytest.raises(RuntimeError, match="required rank"):
        torch.zeros(shape).to(memory_format=getattr(torch, fmt))
    with pytest.raises(RuntimeError, match="required rank"):
        eager.zeros(shape).to(memory_format=getattr(eager, fmt))
    with pytest.raises(RuntimeError, match="required rank"):
        eager.zeros_like(eager.zeros(shape), memory_format=getattr(eager, fmt))


def test_module_to_channels_last_lays_out_rank_4_parameters_only():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                             torch.nn.Flatten(), torch.nn.Linear(4 * 9, 2))
    dm = eager.nn.Sequential(eager.nn.Conv2d(3, 4, 3), eager.nn.BatchNorm2d(4),
                             eager.nn.Flatten(), eager.nn.Linear(4 * 9, 2))
    dm.load_state_dict({k: eager.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert tm.to(memory_format=torch.channels_last) is tm
    assert dm.to(memory_format=eager.channels_last) is dm
    for (name, tp), (_, dp) in zip(tm.named_parameters(), dm.named_parameters()):
        assert dp.stride() == tp.stride(), name
    x = torch.randn(2, 3, 5, 5)
    got = dm(eager.tensor(x.numpy()).to(memory_format=eager.channels_last))
    np.testing.assert_allclose(got.detach().numpy(), tm(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_not_a_memory_format_is_a_type_error():
    with pytest.raises(TypeError, match="memory_format"):
        eager.zeros(2, 3, 4, 5).contiguous(memory_format="channels_last")


def test_layout_calls_compile_without_a_graph_break():
    """contiguous() after a transpose, clone and to(memory_format=) inside a compiled function
    (the attention idiom `y.transpose(1, 2).contiguous().view(B, T, C)`) are traced, and give
    eager's values."""
    import warnings

    from dualgrad.compiler import compile

    def attention_merge(y):
        b, h, t, d = y.shape
        return y.transpose(1, 2).contiguous().view(b, t, h * d).clone() * 2

    def to_channels_last(x):
        return x.to(memory_format=eager.channels_last).contiguous(
            memory_format=eager.channels_last) + 1

    for fn, shape in ((attention_merge, (2, 4, 5, 3)), (to_channels_last, SHAPE)):
        x = eager.randn(*shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = compile(fn)(x)
        np.testing.assert_array_equal(got.numpy(), fn(x).numpy())
    with pytest.raises(RuntimeError, match="required rank"):
        compile(lambda x: x.contiguous(memory_format=eager.channels_last))(eager.randn(3, 4))

