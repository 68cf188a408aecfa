"""eager.nn: registration, state dicts, train/eval, and every layer against torch's formulas.

Layer outputs are checked against plain NumPy written from torch's documented formulas; when
torch is importable (it is not a dependency), outputs and gradients are also checked against
torch itself given the same weights.
"""
from collections import OrderedDict

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

RNG = np.random.default_rng(1234)


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _np(t):
    return t.detach().numpy()


# -- registration -----------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.scale = nn.Parameter(np.ones(4, np.float32))
        self.not_a_param = eager.ones(4)          # a plain tensor attribute is not registered
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Block()
        self.head = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2, bias=False))

    def forward(self, x):
        return self.head(self.first(x))


def test_parameters_are_registered_in_definition_order_with_dotted_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["first.scale", "first.fc.weight", "first.fc.bias",
                     "head.0.weight", "head.0.bias", "head.2.weight"]
    assert [p.shape for p in net.parameters()] == [(4,), (4, 3), (4,), (5, 4), (5,), (2, 5)]
    assert all(p.requires_grad for p in net.parameters())
    assert [n for n, _ in net.named_modules()] == ["", "first", "first.fc", "first.act", "head",
                                                    "head.0", "head.1", "head.2"]
    assert net(eager.randn(7, 3)).shape == (7, 2)


def test_shared_parameters_are_listed_once_and_reassignment_replaces():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2
    block = Block()
    block.fc = nn.Identity()                        # a module replaced by another
    assert [n for n, _ in block.named_parameters()] == ["scale"]
    del block.scale
    assert list(block.parameters()) == []


def test_sequential_indexing_len_iteration_and_slices():
    layers = [nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)]
    seq = nn.Sequential(*layers)
    assert len(seq) == 3 and seq[0] is layers[0] and seq[-1] is layers[2]
    assert list(seq) == layers
    tail = seq[1:]
    assert isinstance(tail, nn.Sequential) and len(tail) == 2
    assert [n for n, _ in tail.named_parameters()] == ["2.weight", "2.bias"]   # names kept
    named = nn.Sequential(OrderedDict([("enc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.named_parameters()] == ["enc.weight", "enc.bias"]


def test_module_without_super_init_is_a_clear_error():
    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Bad()


# -- state dicts ------------------------------------------------------------------------------
def test_state_dict_round_trip_copies_values_in_place():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == [n for n, _ in a.named_parameters()]
    assert all(not t.requires_grad for t in sd.values())
    params_before = [id(p) for p in b.parameters()]
    missing, unexpected = b.load_state_dict(sd)
    assert missing == [] and unexpected == []
    assert [id(p) for p in b.parameters()] == params_before     # loaded in place
    x = eager.randn(4, 3)
    np.testing.assert_array_equal(_np(a(x)), _np(b(x)))
    # as in torch, state_dict() entries share memory with the parameters (detach shares)
    sd["first.scale"].numpy()[...] = 5.0
    np.testing.assert_array_equal(_np(a.first.scale), np.full(4, 5.0))


def test_load_state_dict_reports_missing_and_unexpected_keys():
    net = Net()
    sd = net.state_dict()
    del sd["head.0.bias"]
    sd["head.9.weight"] = eager.zeros(1)
    with pytest.raises(RuntimeError, match=r"missing keys \['head.0.bias'\].*"
                                           r"unexpected keys \['head.9.weight'\]"):
        net.load_state_dict(sd)
    missing, unexpected = net.load_state_dict(sd, strict=False)
    assert missing == ["head.0.bias"] and unexpected == ["head.9.weight"]


def test_load_state_dict_size_mismatch_changes_nothing():
    net, other = Net(), Net()
    before = {n: _np(p).copy() for n, p in net.named_parameters()}
    sd = other.state_dict()
    sd["head.2.weight"] = eager.zeros(3, 5)      # the last entry: nothing before it may load
    with pytest.raises(RuntimeError, match=r"size mismatch for head.2.weight: copying a param "
                                           r"with shape torch.Size\(\[3, 5\]\) from checkpoint, "
                                           r"the shape in current model is torch.Size\(\[2, 5\]\)"):
        net.load_state_dict(sd)
    for n, p in net.named_parameters():
        np.testing.assert_array_equal(_np(p), before[n], err_msg=n)


# -- train / eval, dropout --------------------------------------------------------------------
def test_train_and_eval_reach_every_submodule():
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.ReLU()))
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_dropout_is_identity_in_eval_and_zeroes_about_p_in_train():
    eager.manual_seed(0)
    p = 0.3
    drop = nn.Sequential(nn.Dropout(p))
    x = eager.ones(200, 500, requires_grad=True)
    y = _np(drop(x))
    zeroed = np.mean(y == 0.0)
    assert abs(zeroed - p) < 0.01, zeroed
    np.testing.assert_allclose(y[y != 0.0], 1.0 / (1.0 - p), rtol=1e-6)
    drop(x).sum().backward()                     # the gradient goes through the kept ones only
    g = x.grad.numpy()
    np.testing.assert_allclose(g[g != 0.0], 1.0 / (1.0 - p), rtol=1e-6)
    assert abs(np.mean(g == 0.0) - p) < 0.01
    drop.eval()
    out = drop(x)
    assert out is x or np.array_equal(_np(out), _np(x))
    assert drop[0].extra_repr() == "p=0.3, inplace=False"  # torch's repr


# -- layers against NumPy ---------------------------------------------------------------------
def test_linear_values_and_init_bounds():
    eager.manual_seed(3)
    lin = nn.Linear(300, 200)
    bound = 1.0 / np.sqrt(300)
    w, b = _np(lin.weight), _np(lin.bias)
    assert w.shape == (200, 300) and b.shape == (200,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.02 * bound       # uniform(-bound, bound)
    x = _randn(5, 300)
    np.testing.assert_allclose(_np(lin(eager.tensor(x))), x @ w.T + b, rtol=1e-5, atol=1e-5)
    assert nn.Linear(3, 2, bias=False).bias is None


def _conv_numpy(x, w, b, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, ho, wo), np.float64)
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return out + b.reshape(1, o, 1, 1)


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1), (1, 2)])
def test_conv2d_values_and_init_bounds(stride, padding):
    eager.manual_seed(4)
    conv = nn.Conv2d(3, 5, 3, stride=stride, padding=padding)
    bound = 1.0 / np.sqrt(3 * 3 * 3)
    w, b = _np(conv.weight), _np(conv.bias)
    assert w.shape == (5, 3, 3, 3) and b.shape == (5,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    x = _randn(2, 3, 7, 6)
    y = conv(eager.tensor(x))
    expected = _conv_numpy(x, w, b, stride, padding)
    assert y.shape == expected.shape
    np.testing.assert_allclose(_np(y), expected, rtol=1e-4, atol=1e-5)


def test_layer_norm_values():
    ln = nn.LayerNorm(6)
    assert _np(ln.weight).tolist() == [1.0] * 6 and _np(ln.bias).tolist() == [0.0] * 6
    ln.weight.data[...] = _randn(6)
    ln.bias.data[...] = _randn(6)
    x = _randn(2, 4, 6)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    expected = (x - mu) / np.sqrt(var + 1e-5) * _np(ln.weight) + _np(ln.bias)
    np.testing.assert_allclose(_np(ln(eager.tensor(x))), expected, rtol=1e-5, atol=1e-5)
    ln2 = nn.LayerNorm((4, 6), elementwise_affine=False)
    assert list(ln2.parameters()) == []
    flat = x.reshape(2, -1)
    expected2 = ((flat - flat.mean(-1, keepdims=True)) /
                 np.sqrt(flat.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(_np(ln2(eager.tensor(x))), expected2, rtol=1e-4, atol=1e-5)


def test_embedding_values_init_and_gradient():
    eager.manual_seed(5)
    emb = nn.Embedding(1000, 16)
    w = _np(emb.weight)
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1.0) < 0.02     # N(0, 1), as torch
    idx = np.array([[3, 7, 3], [0, 999, 1]])
    y = emb(eager.tensor(idx))
    assert y.shape == (2, 3, 16)
    np.testing.assert_array_equal(_np(y), w[idx])
    y.sum().backward()
    g = emb.weight.grad.numpy()
    assert np.all(g[3] == 2.0) and np.all(g[7] == 1.0) and np.all(g[2] == 0.0)


def _lstm_numpy(x, h, c, cell):
    wih, whh, bih, bhh = (_np(p) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                           cell.bias_hh))
    gates = x @ wih.T + bih + h @ whh.T + bhh
    i, f, g, o = np.split(gates, 4, axis=1)            # torch's order: i, f, g, o
    c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c2), c2


def _gru_numpy(x, h, cell):
    wih, whh, bih, bhh = (_np(p) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                           cell.bias_hh))
    gi, gh = x @ wih.T + bih, h @ whh.T + bhh
    ir, iz, in_ = np.split(gi, 3, axis=1)               # torch's order: r, z, n
    hr, hz, hn = np.split(gh, 3, axis=1)
    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (1 - z) * n + z * h


def _assert_cell_init(cell, gates, hidden, inp):
    bound = 1.0 / np.sqrt(hidden)
    shapes = {"weight_ih": (gates * hidden, inp), "weight_hh": (gates * hidden, hidden),
              "bias_ih": (gates * hidden,), "bias_hh": (gates * hidden,)}
    assert {n: p.shape for n, p in cell.named_parameters()} == shapes
    for p in cell.parameters():
        assert np.abs(_np(p)).max() <= bound


def test_lstm_cell_values_over_time_steps():
    eager.manual_seed(6)
    cell = nn.LSTMCell(5, 7)
    _assert_cell_init(cell, 4, 7, 5)
    xs = _randn(4, 3, 5)
    h, c = None, None
    hn, cn = np.zeros((3, 7), np.float32), np.zeros((3, 7), np.float32)
    for t in range(4):
        h, c = cell(eager.tensor(xs[t]), None if h is None else (h, c))
        hn, cn = _lstm_numpy(xs[t], hn, cn, cell)
        assert h.shape == (3, 7) and c.shape == (3, 7)
        np.testing.assert_allclose(_np(h), hn, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(c), cn, rtol=1e-5, atol=1e-6)


def test_gru_cell_values_over_time_steps():
    eager.manual_seed(7)
    cell = nn.GRUCell(5, 6)
    _assert_cell_init(cell, 3, 6, 5)
    xs = _randn(4, 2, 5)
    h, hn = None, np.zeros((2, 6), np.float32)
    for t in range(4):
        h = cell(eager.tensor(xs[t]), h)
        hn = _gru_numpy(xs[t], hn, cell)
        assert h.shape == (2, 6)
        np.testing.assert_allclose(_np(h), hn, rtol=1e-5, atol=1e-6)


def test_max_pool2d_and_flatten():
    x = _randn(2, 3, 6, 5)
    y = nn.MaxPool2d(2)(eager.tensor(x))
    expected = x[:, :, :6, :4].reshape(2, 3, 3, 2, 2, 2).max(axis=(3, 5))
    assert y.shape == (2, 3, 3, 2)
    np.testing.assert_array_equal(_np(y), expected)
    y3 = nn.MaxPool2d(3, stride=2)(eager.tensor(x))
    exp3 = np.array([[[[x[n, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max() for j in range(2)]
                       for i in range(2)] for c in range(3)] for n in range(2)])
    np.testing.assert_array_equal(_np(y3), exp3)
    xt = eager.tensor(x, requires_grad=True)
    nn.MaxPool2d(2)(xt).sum().backward()
    assert xt.grad.numpy().sum() == 2 * 3 * 3 * 2           # one 1 per window
    assert nn.Flatten()(eager.tensor(x)).shape == (2, 90)
    assert nn.Flatten(0)(eager.tensor(x)).shape == (180,)
    assert nn.Flatten(1, 2)(eager.tensor(x)).shape == (2, 18, 5)


def test_activation_modules_and_functional_losses():
    x = _randn(3, 4)
    t = eager.tensor(x)
    np.testing.assert_allclose(_np(nn.ReLU()(t)), np.maximum(x, 0))
    np.testing.assert_allclose(_np(nn.Tanh()(t)), np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(_np(nn.GELU(approximate="tanh")(t)),
                               0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                                      (x + 0.044715 * x ** 3))), rtol=1e-5,
                               atol=1e-6)
    y = np.array([0, 3, 1])
    logp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    np.testing.assert_allclose(F.cross_entropy(t, eager.tensor(y)).item(),
                               -logp[np.arange(3), y].mean(), rtol=1e-5)
    np.testing.assert_allclose(nn.CrossEntropyLoss(reduction="sum")(t, eager.tensor(y)).item(),
                               -logp[np.arange(3), y].sum(), rtol=1e-5)
    np.testing.assert_allclose(F.mse_loss(t, eager.zeros(3, 4)).item(), (x ** 2).mean(),
                               rtol=1e-5)


# -- against torch itself ---------------------------------------------------------------------
def _torch():
    return pytest.importorskip("torch")


def _copy_params(ours, theirs):
    torch = _torch()
    with torch.no_grad():
        for name, p in ours.named_parameters():
            getattr(theirs, name).copy_(torch.from_numpy(_np(p).copy()))


def _check_grads(ours, theirs, pairs, rtol=1e-4, atol=1e-5):
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), getattr(theirs, name).grad.numpy(),
                                   rtol=rtol, atol=atol, err_msg=name)
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


def _pair(x):
    torch = _torch()
    return eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def test_lstm_cell_matches_torch():
    torch = _torch()
    ours, theirs = nn.LSTMCell(5, 4), torch.nn.LSTMCell(5, 4)
    _copy_params(ours, theirs)
    (x, xt), (h0, h0t), (c0, c0t) = _pair(_randn(3, 5)), _pair(_randn(3, 4)), _pair(_randn(3, 4))
    w = _randn(3, 4)
    h, c = ours(x, (h0, c0))
    ht, ct = theirs(xt, (h0t, c0t))
    np.testing.assert_allclose(_np(h), ht.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(c), ct.detach().numpy(), rtol=1e-5, atol=1e-6)
    ((h * eager.tensor(w)).sum() + c.sum()).backward()
    ((ht * torch.from_numpy(w)).sum() + ct.sum()).backward()
    _check_grads(ours, theirs, [(x, xt), (h0, h0t), (c0, c0t)])


def test_gru_cell_matches_torch():
    torch = _torch()
    ours, theirs = nn.GRUCell(5, 4), torch.nn.GRUCell(5, 4)
    _copy_params(ours, theirs)
    (x, xt), (h0, h0t) = _pair(_randn(3, 5)), _pair(_randn(3, 4))
    w = _randn(3, 4)
    h, ht = ours(x, h0), theirs(xt, h0t)
    np.testing.assert_allclose(_np(h), ht.detach().numpy(), rtol=1e-5, atol=1e-6)
    (h * eager.tensor(w)).sum().backward()
    (ht * torch.from_numpy(w)).sum().backward()
    _check_grads(ours, theirs, [(x, xt), (h0, h0t)])


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1)])
def test_conv2d_matches_torch(stride, padding):
    torch = _torch()
    ours = nn.Conv2d(3, 4, 3, stride=stride, padding=padding)
    theirs = torch.nn.Conv2d(3, 4, 3, stride=stride, padding=padding)
    _copy_params(ours, theirs)
    x, xt = _pair(_randn(2, 3, 8, 7))
    y, yt = ours(x), theirs(xt)
    np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    w = _randn(*y.shape)
    (y * eager.tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    _check_grads(ours, theirs, [(x, xt)])


def test_layer_norm_matches_torch():
    torch = _torch()
    ours, theirs = nn.LayerNorm(6), torch.nn.LayerNorm(6)
    ours.weight.data[...] = _randn(6)
    ours.bias.data[...] = _randn(6)
    _copy_params(ours, theirs)
    x, xt = _pair(_randn(4, 3, 6))
    y, yt = ours(x), theirs(xt)
    np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    w = _randn(4, 3, 6)
    (y * eager.tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    _check_grads(ours, theirs, [(x, xt)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_torch(reduction):
    torch = _torch()
    (z, zt) = _pair(_randn(6, 5) * 3)
    y = np.array([0, 4, 2, 2, 1, 3])
    loss = F.cross_entropy(z, eager.tensor(y), reduction=reduction)
    lt = torch.nn.functional.cross_entropy(zt, torch.from_numpy(y), reduction=reduction)
    np.testing.assert_allclose(_np(loss), lt.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = _randn(*loss.shape)
    (loss * eager.tensor(w)).sum().backward()
    (lt * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_cross_entropy_with_probability_targets_matches_torch():
    torch = _torch()
    (z, zt) = _pair(_randn(4, 3))
    p = _sigmoid(_randn(4, 3))
    p /= p.sum(-1, keepdims=True)
    loss = F.cross_entropy(z, eager.tensor(p))
    lt = torch.nn.functional.cross_entropy(zt, torch.from_numpy(p))
    np.testing.assert_allclose(loss.item(), lt.item(), rtol=1e-5)
    loss.backward()
    lt.backward()
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-5, atol=1e-6)
