"""Outside reference: each benchmark workload in PyTorch eager (imported only when torch is).

The models mirror comparisons/models/*_eager.py module for module — dualgrad's eager API
follows torch's, so the eager state_dict loads into these unchanged.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

GELU_C = math.sqrt(2.0 / math.pi)


# -- micro-benchmarks --------------------------------------------------------------------------
def gelu_step(x_np):
    x = torch.from_numpy(x_np)

    def run():
        return 0.5 * x * (1.0 + torch.tanh(GELU_C * (x + 0.044715 * (x * x * x))))
    return run


def layernorm_step(x_np, r_np, g_np, b_np):
    x, r, g, b = (torch.from_numpy(a) for a in (x_np, r_np, g_np, b_np))
    return lambda: F.layer_norm(x, (x.shape[-1],), g, b) + r


# -- models --------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 128), nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return self.fc(F.relu(self.conv2(h)).flatten(1))


class RowLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell, self.head = nn.LSTMCell(8, 64), nn.Linear(64, 10)

    def forward(self, x, mask):
        h, c = self.cell(x[:, 0])
        for t in range(1, x.shape[1]):
            h2, c2 = self.cell(x[:, t], (h, c))
            going = mask[:, t:t + 1] > 0
            h, c = torch.where(going, h2, h), torch.where(going, c2, c)
        return self.head(h)


class Attention(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x, mask):
        n, t, d = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(self.dh))
        s = torch.where(mask.reshape(n, 1, 1, t) > 0, s, torch.tensor(-1e9))
        y = (F.softmax(s, dim=-1) @ v).permute(0, 2, 1, 3).reshape(n, t, d)
        return self.out(y)


class Encoder(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.embed = nn.Linear(8, d)
        self.pos = nn.Parameter(torch.zeros(8, d))
        self.ln1, self.ln2, self.ln_out = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d)
        self.ff1, self.ff2 = nn.Linear(d, 64), nn.Linear(64, d)
        self.head = nn.Linear(d, 10)

    def forward(self, x, mask):
        h = self.embed(x) + self.pos[: x.shape[1]]
        h = h + self.attn(self.ln1(h), mask)
        h = h + self.ff2(F.gelu(self.ff1(self.ln2(h)), approximate="tanh"))
        m = mask.unsqueeze(-1)
        return self.head(self.ln_out((h * m).sum(1) / m.sum(1)))


def _model_and_opt(name, weights):
    from dualgrad.comparisons.models import load
    hp = load(name, "eager")
    model = {"mlp": MLP, "cnn": CNN, "rnn": RowLSTM, "transformer": Encoder}[name]()
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    if name == "transformer":
        return model, torch.optim.Adam(model.parameters(), lr=hp.LR)
    return model, torch.optim.SGD(model.parameters(), lr=hp.LR, momentum=hp.MOMENTUM)


def _inputs(name, batch):
    if name == "rnn":
        x, _lengths, mask, _y = batch
        return x, mask
    return batch[:-1]


def make_step(name, weights, batch, compiled=False):
    """A zero-arg training step on `batch` (the task's numpy arrays); returns the loss.

    compiled: the model's forward under `torch.compile` (inductor; backward through
    AOTAutograd), the loss and the optimizer eager.
    """
    torch.manual_seed(0)
    model, opt = _model_and_opt(name, weights)
    if compiled:
        model = torch.compile(model)
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in _inputs(name, batch))
    y = torch.from_numpy(batch[-1])

    def step():
        loss = F.cross_entropy(model(*args), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step
