"""Module-building idioms (Sequential and ModuleList editing, ModuleDict, ParameterList,
zero_grad with and without set_to_none, Embedding padding_idx and from_pretrained,
BatchNorm1d on (N, C, L), LayerNorm over two dims, Conv1d, default Linear init bounds, the
numerically delicate activations), run on dualgrad.eager and on torch."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def modules_program(torch):
    r = {}
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    m = nn.Linear(3, 2)
    m(torch.ones(1, 3)).sum().backward()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    opt.zero_grad()
    r["grad_none_after_zero_grad"] = m.weight.grad is None
    m(torch.ones(1, 3)).sum().backward()
    m.zero_grad(set_to_none=False)
    r["grad_zero"] = m.weight.grad
    emb = nn.Embedding(5, 3, padding_idx=0)
    r["pad_row_zero"] = emb.weight[0].detach()
    out = emb(torch.tensor([[0, 1, 0, 2]]))
    out.sum().backward()
    r["pad_grad"] = emb.weight.grad
    pre = nn.Embedding.from_pretrained(torch.arange(6.0).view(3, 2))
    r["pretrained_frozen"] = pre.weight.requires_grad
    bn = nn.BatchNorm1d(3)
    x3 = torch.arange(24.0).view(2, 3, 4) / 10
    r["bn3d"] = bn(x3)
    r["bn3d_rm"] = bn.running_mean
    ln = nn.LayerNorm([3, 4])
    r["ln2"] = ln(x3)
    conv = nn.Conv1d(3, 2, kernel_size=3, padding=1)
    with torch.no_grad():
        conv.weight.copy_(torch.linspace(-1, 1, 18).view(2, 3, 3))
        conv.bias.fill_(0.1)
    r["conv1d"] = conv(x3)
    r["maxpool1d"] = F.max_pool1d(x3, 2)
    r["ce_probs"] = F.cross_entropy(torch.tensor([[1.0, 2.0, 0.5]]), torch.tensor([[0.2, 0.5, 0.3]]))
    r["ce_3d"] = F.cross_entropy(torch.arange(24.0).view(2, 3, 4) / 7, torch.tensor([[0, 1, 2, 1], [2, 2, 0, 1]]))
    r["upsample"] = nn.Upsample(scale_factor=2, mode="nearest")(torch.arange(4.0).view(1, 1, 2, 2))
    r["flatten"] = nn.Flatten()(x3).shape == (2, 12)
    r["unflatten"] = list(nn.Unflatten(1, (3, 4))(x3.reshape(2, 12)).shape)
    lin = nn.Linear(100, 50)
    r["linear_init_bound"] = bool(lin.weight.abs().max() <= 0.1) and float(lin.weight.detach().std()) > 0.04
    r["linear_bias_bound"] = bool(lin.bias.abs().max() <= 0.1)
    r["named_params"] = [n for n, _ in nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Sequential(nn.Linear(2, 1))).named_parameters()]
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    r["seq_slice"] = str(type(seq[0:2]).__name__)
    r["seq_len"] = len(seq)
    r["seq_neg"] = type(seq[-1]).__name__
    seq.append(nn.Sigmoid())
    r["seq_len2"] = len(seq)
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.extend([nn.ReLU()])
    ml.insert(0, nn.Tanh())
    ml += [nn.Sigmoid()]
    r["ml"] = [type(x).__name__ for x in ml]
    r["ml_slice"] = [type(ml[1:]).__name__, len(ml[1:])]
    ml[0] = nn.GELU()
    del ml[1]
    r["ml_after"] = [type(x).__name__ for x in ml] + [n for n, _ in ml.named_children()]
    seq.insert(1, nn.Dropout(0.0))
    popped = seq.pop(1)
    r["seq_after"] = [type(popped).__name__, len(seq)] + [n for n, _ in seq.named_children()]
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Tanh()
    md.update({"c": nn.Identity()})
    r["md"] = list(md.keys())
    pl = nn.ParameterList([nn.Parameter(torch.ones(2))])
    r["pl"] = len(list(pl.parameters()))
    r["repr_has_linear"] = "Linear(in_features=2, out_features=3, bias=True)" in repr(seq)
    r["num_params"] = sum(p.numel() for p in seq.parameters() if p.requires_grad)
    r["modules_count"] = len(list(seq.modules()))
    r["children_count"] = len(list(seq.children()))
    d = nn.Dropout2d(0.5)
    d.eval()
    r["dropout2d_eval"] = d(x3.unsqueeze(0))
    r["relu_inplace"] = nn.ReLU(inplace=True)(torch.tensor([-1.0, 2.0]))
    r["softplus_thresh"] = F.softplus(torch.tensor([30.0, -30.0, 1.0]))
    r["logsigmoid"] = F.logsigmoid(torch.tensor([-100.0, 0.0, 100.0]))
    r["bce_clamp"] = F.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0]))
    r["log_softmax_inf"] = F.log_softmax(torch.tensor([0.0, float("-inf")]), 0)
    r["softmax_allinf_nan"] = bool(torch.isnan(F.softmax(torch.tensor([float("-inf"), float("-inf")]), 0)).all())
    return r


def test_modules_program_equals_torch():
    ours, ref = modules_program(dualgrad.eager), modules_program(real_torch)
    assert_same_results(ours, ref, rtol=1e-5, atol=1e-6)
