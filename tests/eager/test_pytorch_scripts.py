"""Typical public PyTorch programs, written once against a module named `torch`, run with
dualgrad.eager as that module and with PyTorch itself: each must learn, and both libraries
must agree step by step from the same weights and batches."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dualgrad.eager

real_torch = pytest.importorskip("torch")
LIBS = {"dualgrad": dualgrad.eager, "torch": real_torch}


def _same_weights(models):
    """Load torch's initial weights into the dualgrad model (the state_dict names agree)."""
    ours, ref = models["dualgrad"], models["torch"]
    ours.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})


# -- 1. a device-agnostic classifier loop: DataLoader, scheduler, .to(device) -----------------
def net(torch):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 32)
            self.drop = nn.Dropout(0.0)
            self.fc2 = nn.Linear(32, 3)

        def forward(self, x):
            return self.fc2(self.drop(torch.relu(self.fc1(x))))
    return Net()


def classifier_script(torch, model, x, y, epochs=6, shuffle=False):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device)
    ds = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=shuffle, drop_last=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    criterion = torch.nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        model.train()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
    model.eval()
    with torch.no_grad():
        acc = (model(torch.tensor(x)).argmax(dim=1) == torch.tensor(y)).float().mean().item()
    return losses, acc


def _blobs(n=96, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centers = rng.standard_normal((3, 8)) * 2
    return (centers[y] + rng.standard_normal((n, 8))).astype(np.float32), y


def test_classifier_loop_learns_with_a_shuffling_loader():
    x, y = _blobs()
    dualgrad.eager.manual_seed(0)
    losses, acc = classifier_script(dualgrad.eager, net(dualgrad.eager), x, y, shuffle=True)
    assert losses[-1] < losses[0] / 5 and acc > 0.9


def test_classifier_loop_equals_torch_step_by_step():
    x, y = _blobs()
    real_torch.manual_seed(0)
    models = {"torch": net(real_torch), "dualgrad": net(dualgrad.eager)}
    _same_weights(models)
    ours = classifier_script(dualgrad.eager, models["dualgrad"], x, y)
    ref = classifier_script(real_torch, models["torch"], x, y)
    np.testing.assert_allclose(ours[0], ref[0], rtol=2e-4, atol=1e-5)
    assert ours[1] == pytest.approx(ref[1])


# -- 2. manual SGD with -= under no_grad (the autograd tutorial) ------------------------------
def polynomial_script(torch, a0, steps=400):
    x = torch.linspace(-math.pi, math.pi, 500)
    y = torch.sin(x)
    a, b, c, d = (torch.tensor(v, requires_grad=True) for v in a0)
    lr, losses = 1e-6, []
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= lr * a.grad
            b -= lr * b.grad
            c -= lr * c.grad
            d -= lr * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return losses, [v.item() for v in (a, b, c, d)]


def test_manual_sgd_script_learns_and_equals_torch():
    a0 = [0.3, -0.2, 0.5, -0.1]
    ours, ref = polynomial_script(dualgrad.eager, a0), polynomial_script(real_torch, a0)
    assert ours[0][-1] < ours[0][0] / 20
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-4)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-4, atol=1e-6)


# -- 3. a GPT-style block: register_buffer + masked_fill, AdamW, cosine schedule --------------
def gpt(torch, vocab=11, block=8, n_embd=16, n_head=2):
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", torch.tril(torch.ones(block, block))
                                 .view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),
                                          c_proj=nn.Linear(4 * n_embd, n_embd), act=nn.GELU()))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            m = self.mlp
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(2)])
            self.ln_f, self.lm_head = nn.LayerNorm(n_embd), nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            logits = self.lm_head(self.ln_f(x))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
            return logits, loss
    return GPT()


def gpt_script(torch, model, data, steps=60):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses = []
    for it in range(steps):
        i = it % (len(data) - 1)
        x = torch.tensor(data[i][:-1]).unsqueeze(0).repeat(4, 1)
        y = torch.tensor(data[i][1:]).unsqueeze(0).repeat(4, 1)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def test_gpt_block_learns_and_equals_torch():
    rng = np.random.default_rng(0)
    data = [rng.integers(0, 11, 9) for _ in range(3)]
    real_torch.manual_seed(0)
    models = {"torch": gpt(real_torch), "dualgrad": gpt(dualgrad.eager)}
    _same_weights(models)
    assert "h.0.attn.bias" in models["dualgrad"].state_dict()
    ours = gpt_script(dualgrad.eager, models["dualgrad"], data)
    ref = gpt_script(real_torch, models["torch"], data)
    assert ours[-1] < ours[0] / 2
    np.testing.assert_allclose(ours, ref, rtol=2e-3, atol=2e-4)


# -- 4. an nn.LSTM sequence model (time-series prediction) ------------------------------------
def lstm_model(torch):
    nn = torch.nn

    class Predictor(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(input_size=1, hidden_size=12, num_layers=2, batch_first=True)
            self.head = nn.Linear(12, 1)

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            return self.head(out[:, -1, :])
    return Predictor()


def lstm_script(torch, model, xs, ys, steps=40):
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=3)
    loss_fn = torch.nn.MSELoss()
    x, y = torch.from_numpy(xs), torch.from_numpy(ys)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        sched.step(loss.item())
        losses.append(loss.item())
    return losses


def test_lstm_sequence_model_learns_and_equals_torch():
    t = np.linspace(0, 8 * np.pi, 400)
    wave = np.sin(t).astype(np.float32)
    starts = np.arange(0, 360, 9)
    xs = np.stack([wave[s:s + 20] for s in starts])[..., None]
    ys = np.stack([wave[s + 20:s + 21] for s in starts])
    real_torch.manual_seed(0)
    models = {"torch": lstm_model(real_torch), "dualgrad": lstm_model(dualgrad.eager)}
    _same_weights(models)
    ours = lstm_script(dualgrad.eager, models["dualgrad"], xs, ys)
    ref = lstm_script(real_torch, models["torch"], xs, ys)
    assert ours[-1] < ours[0] / 5
    np.testing.assert_allclose(ours, ref, rtol=2e-3, atol=1e-5)
