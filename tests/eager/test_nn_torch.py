"""nn layers, losses, init and utilities that PyTorch scripts use, against torch itself."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn
from dualgrad.eager.nn import functional as F

torch = pytest.importorskip("torch")


def _copy(ours, ref):
    """Give `ours` the weights of the torch module `ref` (same names, as torch's)."""
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})


def _check(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                               b.detach().numpy(), rtol=rtol, atol=atol)


def _input(*shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


RNN_CASES = [
    ("LSTM", dict(num_layers=1), (5, 3, 4), False),
    ("LSTM", dict(num_layers=2, batch_first=True), (3, 5, 4), False),
    ("LSTM", dict(num_layers=2, bidirectional=True), (5, 3, 4), True),
    ("LSTM", dict(bias=False), (6, 4), False),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True), (3, 5, 4), True),
    ("GRU", dict(), (5, 2, 4), False),
    ("RNN", dict(nonlinearity="relu", num_layers=2), (5, 2, 4), True),
    ("RNN", dict(bidirectional=True), (4, 2, 4), False),
]


@pytest.mark.parametrize("name,kw,shape,with_state", RNN_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(RNN_CASES)])
def test_recurrent_layers_match_torch(name, kw, shape, with_state):
    ref = getattr(torch.nn, name)(4, 6, **kw)
    ours = getattr(nn, name)(4, 6, **kw)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    _copy(ours, ref)
    x, tx = _input(*shape)
    state = tstate = None
    if with_state:
        d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
        n = shape[0] if kw.get("batch_first") else shape[1]
        h, th = _input(d, n, 6, seed=1)
        if name == "LSTM":
            c, tc = _input(d, n, 6, seed=2)
            state, tstate = (h, c), (th, tc)
        else:
            state, tstate = h, th
    out, hn = ours(x, state)
    tout, thn = ref(tx, tstate)
    _check(out, tout)
    for a, b in zip(hn if name == "LSTM" else (hn,), thn if name == "LSTM" else (thn,)):
        _check(a, b)
    loss, tloss = (out ** 2).sum(), (tout ** 2).sum()
    loss.backward()
    tloss.backward()
    _check(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
    for (n, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=n)


def test_lstm_dropout_between_layers_only_in_training():
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = eager.randn(5, 2, 3)
    lstm.eval()
    a, _ = lstm(x)
    b, _ = lstm(x)
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=2)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask", ["none", "causal_bool", "float", "padding"])
def test_multihead_attention_matches_torch(batch_first, mask):
    E, H, L, N = 8, 2, 5, 3
    ref = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
    ours = nn.MultiheadAttention(E, H, batch_first=batch_first)
    _copy(ours, ref)
    x, tx = _input(*((N, L, E) if batch_first else (L, N, E)))
    kw, tkw = {}, {}
    if mask == "causal_bool":
        m = np.triu(np.ones((L, L), bool), 1)
        kw, tkw = {"attn_mask": eager.tensor(m)}, {"attn_mask": torch.tensor(m)}
    elif mask == "float":
        m = np.random.default_rng(3).standard_normal((L, L)).astype(np.float32)
        kw, tkw = {"attn_mask": eager.tensor(m)}, {"attn_mask": torch.tensor(m)}
    elif mask == "padding":
        m = np.zeros((N, L), bool)
        m[0, -2:] = True
        kw, tkw = {"key_padding_mask": eager.tensor(m)}, {"key_padding_mask": torch.tensor(m)}
    out, w = ours(x, x, x, **kw)
    tout, tw = ref(tx, tx, tx, **tkw)
    _check(out, tout)
    _check(w, tw)
    out.sum().backward()
    tout.sum().backward()
    _check(x.grad, tx.grad, rtol=1e-4, atol=1e-5)
    _check(ours.in_proj_weight.grad, ref.in_proj_weight.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float", "scale"])
def test_scaled_dot_product_attention_matches_torch(kind):
    (q, tq), (k, tk), (v, tv) = (_input(2, 3, 4, 5, seed=s) for s in range(3))
    kw, tkw = {}, {}
    if kind == "causal":
        kw = tkw = {"is_causal": True}
    elif kind == "bool":
        m = np.random.default_rng(5).random((4, 4)) > 0.3
        m[:, 0] = True
        kw, tkw = {"attn_mask": eager.tensor(m)}, {"attn_mask": torch.tensor(m)}
    elif kind == "float":
        m = np.random.default_rng(5).standard_normal((4, 4)).astype(np.float32)
        kw, tkw = {"attn_mask": eager.tensor(m)}, {"attn_mask": torch.tensor(m)}
    elif kind == "scale":
        kw = tkw = {"scale": 0.3}
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **tkw)
    _check(out, tout)
    out.sum().backward()
    tout.sum().backward()
    _check(q.grad, tq.grad, rtol=1e-4, atol=1e-5)


CE_CASES = [
    dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2),
    dict(label_smoothing=0.1), dict(weight=[1.0, 2.0, 0.5, 1.5]),
    dict(weight=[1.0, 2.0, 0.5, 1.5], ignore_index=1, label_smoothing=0.2),
    dict(weight=[1.0, 2.0, 0.5, 1.5], reduction="none"),
]


@pytest.mark.parametrize("kw", CE_CASES, ids=[str(k) for k in CE_CASES])
@pytest.mark.parametrize("layout", ["2d", "nd", "probs"])
def test_cross_entropy_options_match_torch(kw, layout):
    rng = np.random.default_rng(0)
    shape = (6, 4) if layout != "nd" else (3, 4, 5)
    x, tx = _input(*shape)
    if layout == "probs":
        if "ignore_index" in kw:
            pytest.skip("ignore_index applies to class indices only")
        p = rng.random(shape).astype(np.float32)
        y, ty = eager.tensor(p / p.sum(1, keepdims=True)), torch.tensor(p / p.sum(1, keepdims=True))
    else:
        t = rng.integers(0, 4, (6,) if layout == "2d" else (3, 5))
        y, ty = eager.tensor(t), torch.tensor(t)
    kw2 = dict(kw)
    tkw = dict(kw)
    if "weight" in kw:
        kw2["weight"] = eager.tensor(kw["weight"])
        tkw["weight"] = torch.tensor(kw["weight"])
    loss = F.cross_entropy(x, y, **kw2)
    tloss = torch.nn.functional.cross_entropy(tx, ty, **tkw)
    _check(loss, tloss)
    loss.sum().backward()
    tloss.sum().backward()
    _check(x.grad, tx.grad)
    module = nn.CrossEntropyLoss(**kw2)
    _check(module(x, y), tloss)


def test_nll_loss_with_weight_and_ignore_index():
    x, tx = _input(5, 3)
    t = np.array([0, 2, 1, 1, 0])
    lp, tlp = F.log_softmax(x, 1), torch.log_softmax(tx, 1)
    w = [0.2, 1.0, 3.0]
    _check(F.nll_loss(lp, eager.tensor(t), weight=eager.tensor(w), ignore_index=1),
           torch.nn.functional.nll_loss(tlp, torch.tensor(t), weight=torch.tensor(w),
                                        ignore_index=1))


def test_init_functions():
    eager.manual_seed(0)
    w = nn.Parameter(eager.zeros(200, 300))
    bound = (6 / 500) ** 0.5
    nn.init.xavier_uniform_(w)
    assert abs(w).max().item() <= bound and abs(w).max().item() > 0.9 * bound
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.std().item() - (2 / 200) ** 0.5) < 0.005
    nn.init.kaiming_uniform_(w, a=5 ** 0.5)
    assert abs(w).max().item() <= 1 / 300 ** 0.5 + 1e-6
    nn.init.xavier_normal_(w, gain=nn.init.calculate_gain("tanh"))
    assert abs(w.std().item() - 5 / 3 * (2 / 500) ** 0.5) < 0.005
    nn.init.normal_(w, 1.0, 0.02)
    assert abs(w.mean().item() - 1.0) < 0.01
    nn.init.uniform_(w, -0.1, 0.1)
    assert abs(w).max().item() <= 0.1
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert abs(w).max().item() <= 0.5
    nn.init.zeros_(w)
    assert w.sum().item() == 0
    nn.init.ones_(w)
    nn.init.constant_(w, 0.5)
    assert w.mean().item() == 0.5 and w.requires_grad and w.is_leaf
    q = nn.Parameter(eager.zeros(4, 6))
    nn.init.orthogonal_(q)
    np.testing.assert_allclose(q.data @ q.data.T, np.eye(4), atol=1e-5)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.2)


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((6, 3, 3, 5), 3),
                                          ((2, 4, 3, 3, 3), 1), ((3, 5, 2, 2), 1)])
def test_dirac_init_as_torch(shape, groups):
    theirs = torch.nn.init.dirac_(torch.empty(shape), groups=groups).numpy()
    ours = nn.init.dirac_(nn.Parameter(eager.empty(shape)), groups=groups)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs)
    assert ours.requires_grad and ours.is_leaf
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        nn.init.dirac_(eager.empty(3, 3))


def test_sparse_init_zeros_per_column():
    eager.manual_seed(0)
    w = nn.init.sparse_(eager.empty(50, 40), sparsity=0.3, std=0.05)
    zeros = (w == 0).sum(0).numpy()
    assert (zeros == np.ceil(0.3 * 50)).all()          # torch's count, in every column
    assert abs(float(w[w != 0].std()) - 0.05) < 0.01
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse_(eager.empty(3, 3, 3), 0.1)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_and_value_match_torch(norm_type):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in ((3, 4), (5,))]
    ps = [nn.Parameter(eager.zeros(*g.shape)) for g in grads]
    tps = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in grads]
    for p, tp, g in zip(ps, tps, grads):
        p.grad, tp.grad = eager.tensor(g), torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, 1.5, norm_type=norm_type)
    _check(total, ttotal)
    for p, tp in zip(ps, tps):
        _check(p.grad, tp.grad)
    nn.utils.clip_grad_value_(ps, 0.1)
    torch.nn.utils.clip_grad_value_(tps, 0.1)
    for p, tp in zip(ps, tps):
        _check(p.grad, tp.grad)


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True, padding_value=-1.0),
                                dict(batch_first=True, padding_side="left")])
def test_pad_sequence_matches_torch(kw):
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) for n in (3, 1, 4)]
    ours = nn.utils.rnn.pad_sequence([eager.tensor(s) for s in seqs], **kw)
    ref = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], **kw)
    _check(ours, ref)


def test_containers_and_module_api():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.Identity(7, x=1)})
            self.scales = nn.ParameterList([nn.Parameter(eager.ones(3)), eager.zeros(3)])
            self.extra = nn.ParameterDict({"bias": nn.Parameter(eager.zeros(3))})
            self.register_buffer("mask", eager.tril(eager.ones(3, 3)))
            self.register_buffer("cache", eager.zeros(2), persistent=False)

        def forward(self, x):
            return self.heads["a"](x) * self.scales[0] + self.extra["bias"]

    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["heads.a.weight", "heads.a.bias", "scales.0", "scales.1", "extra.bias"]
    assert set(net.state_dict()) == set(names) | {"mask"}      # non-persistent buffers stay out
    assert [n for n, _ in net.named_buffers()] == ["mask", "cache"]
    net.mask = eager.ones(3, 3)                                 # still a buffer
    assert "mask" in net.state_dict() and net.mask.sum().item() == 9
    assert [n for n, _ in net.named_children()] == ["heads", "scales", "extra"]
    assert len(list(net.children())) == 3
    assert [n for n, _ in net.named_modules()][:3] == ["", "heads", "heads.a"]
    assert len(list(net.modules())) == 6
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and "Linear" in seen
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_(True)
    net(eager.ones(4, 2)).sum().backward()
    assert net.heads["a"].weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert "in_features=2" in repr(net) and net.heads["b"](5) == 5
    assert len(net.heads) == 2 and "a" in net.heads and list(net.heads.keys()) == ["a", "b"]
    assert len(net.scales) == 2 and len(net.extra) == 1


def test_container_lookups_of_missing_entries_raise_as_torch():
    """A missing key or index raises torch's exception type in every container: a
    ParameterDict's `[]` and `pop` raise AttributeError there (they read attributes), `del`
    KeyError; `try: ... except KeyError` takes the branch it takes under torch."""
    def calls(lib):
        nn = lib.nn
        return {
            "ParameterDict[]": lambda: nn.ParameterDict({"a": nn.Parameter(lib.ones(1))})["b"],
            "ParameterDict.pop": lambda: nn.ParameterDict().pop("b"),
            "del ParameterDict[]": lambda: nn.ParameterDict().__delitem__("b"),
            "ModuleDict[]": lambda: nn.ModuleDict({"a": nn.Identity()})["b"],
            "ModuleDict.pop": lambda: nn.ModuleDict().pop("b"),
            "del ModuleDict[]": lambda: nn.ModuleDict().__delitem__("b"),
            "ModuleList[]": lambda: nn.ModuleList([nn.Identity()])[3],
            "ParameterList[]": lambda: nn.ParameterList([nn.Parameter(lib.ones(1))])[3],
            "Sequential[]": lambda: nn.Sequential(nn.Identity())[3],
        }

    def raised(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e).__name__
        return None
    want, got = calls(torch), calls(eager)
    for name in want:
        assert raised(got[name]) == raised(want[name]), name
