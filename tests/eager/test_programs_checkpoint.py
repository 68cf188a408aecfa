"""The model-lifecycle idioms of tutorials: weight init with model.apply and nn.init,
BatchNorm and Dropout switching with train()/eval(), a checkpoint dict with model and
optimizer state saved and loaded (safetensors here, never pickle), load_state_dict with
strict=False, freezing, tied weights; run on dualgrad.eager and on torch."""
from __future__ import annotations

import os

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def net(torch):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4, 2)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv(x)))
            return self.fc(self.drop(x.mean(dim=(2, 3))))
    return Net()


def init_weights(torch, m):
    nn = torch.nn
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.constant_(m.weight, 1)
        nn.init.constant_(m.bias, 0)
    elif isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight, gain=nn.init.calculate_gain("tanh"))
        m.bias.data.fill_(0.01)


def checkpoint_program(torch, path):
    r = {}
    model = net(torch)
    model.apply(lambda m: init_weights(torch, m))
    r["fc.bias"], r["bn.weight"] = model.fc.bias.detach().clone(), model.bn.weight.detach().clone()
    with torch.no_grad():   # NOTE: the same weights in both libraries from here on
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))
    x = torch.linspace(-1, 1, 72).reshape(2, 1, 6, 6)
    model.train()
    r["train_out"] = model.fc(torch.relu(model.bn(model.conv(x))).mean(dim=(2, 3)))
    r["running_mean"], r["running_var"] = model.bn.running_mean, model.bn.running_var
    r["num_batches_tracked"] = model.bn.num_batches_tracked
    model.eval()
    with torch.no_grad():
        r["eval_out"] = model(x)
    r["flags"] = [model.training, model.bn.training, model.drop.training]
    model.train()
    dropped = model.drop(torch.ones(1000))
    r["dropout_values"] = sorted(set(dropped.tolist()))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.eval()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    torch.save({"epoch": 3, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": opt.state_dict(), "loss": loss.item()}, path)
    ckpt = torch.load(path, weights_only=True)
    restored = net(torch)
    opt2 = torch.optim.Adam(restored.parameters(), lr=1e-3)
    restored.load_state_dict(ckpt["model_state_dict"])
    opt2.load_state_dict(ckpt["optimizer_state_dict"])
    restored.eval()
    with torch.no_grad():
        r["restored_equal"] = torch.equal(restored(x), model(x))
    r["epoch"], r["loss"] = ckpt["epoch"], ckpt["loss"]
    r["keys"] = list(restored.state_dict().keys())
    r["adam_state"] = sorted(opt2.state_dict()["state"][0])
    r["adam_exp_avg"] = opt2.state_dict()["state"][0]["exp_avg"]
    partial = model.state_dict()
    partial.pop("fc.bias")
    partial["extra.weight"] = torch.zeros(1)
    result = restored.load_state_dict(partial, strict=False)
    r["missing"], r["unexpected"] = result.missing_keys, result.unexpected_keys
    for p in restored.conv.parameters():
        p.requires_grad = False
    r["trainable"] = sum(p.numel() for p in restored.parameters() if p.requires_grad)
    r["children"] = [n for n, _ in restored.named_children()]
    return r


def tied_program(torch):
    nn = torch.nn

    class TiedLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.head = nn.Linear(3, 5, bias=False)
            self.head.weight = self.emb.weight
            self.register_buffer("scratch", torch.zeros(1), persistent=False)
            self.norm = nn.LayerNorm(3)

    m = TiedLM()
    return {"keys": list(m.state_dict()), "n_params": len(list(m.parameters())),
            "prefixed": list(m.state_dict(prefix="model."))[0],
            "keep_vars": m.state_dict(keep_vars=True)["head.weight"].requires_grad}


def test_checkpoint_program_equals_torch(tmp_path):
    ours = checkpoint_program(dualgrad.eager, os.fspath(tmp_path / "ours.pt"))
    ref = checkpoint_program(real_torch, os.fspath(tmp_path / "ref.pt"))
    assert_same_results(ours, ref)


def test_state_dict_order_and_tied_weights_equal_torch():
    assert_same_results(tied_program(dualgrad.eager), tied_program(real_torch))


def test_a_torch_state_dict_with_tied_weights_loads_strictly():
    ref = real_torch.nn.Sequential(real_torch.nn.Embedding(4, 2), real_torch.nn.Linear(2, 4))
    ref[1].weight = ref[0].weight
    ours = dualgrad.eager.nn.Sequential(dualgrad.eager.nn.Embedding(4, 2),
                                        dualgrad.eager.nn.Linear(2, 4))
    sd = ref.state_dict()
    assert list(sd) == ["0.weight", "1.weight", "1.bias"]
    ours.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})
    np.testing.assert_array_equal(ours[1].weight.detach().numpy(), ref[1].weight.detach().numpy())
