"""A hand-written causal self-attention language model: torch.einsum for the scores, a
torch.tril mask kept with register_buffer and applied with masked_fill, softmax, a residual
LayerNorm block with GELU, next-token cross entropy over a repeating token pattern, Adam with
a SequentialLR (LinearLR warmup, then ConstantLR); weights from a seeded NumPy stream."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(38)
V, T, D = 7, 12, 16
pattern = np.array([1, 4, 2, 6, 3, 5, 0])
starts = rng.integers(0, 7, size=24)
seqs = np.stack([pattern[(s + np.arange(T + 1)) % 7] for s in starts])


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).bool())

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.einsum("btd,bsd->bts", q, k) / math.sqrt(D)
        scores = scores.masked_fill(~self.mask[:x.size(1), :x.size(1)], float("-inf"))
        return self.proj(torch.einsum("bts,bsd->btd", scores.softmax(dim=-1), v))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.attn, self.norm1 = Attention(), nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 32), nn.GELU(), nn.Linear(32, D))
        self.norm2, self.out = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(self, tok):
        h = self.emb(tok) + self.pos[:tok.size(1)]
        h = self.norm1(h + self.attn(h))
        return self.out(self.norm2(h + self.ff(h)))


model = LM()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" not in name:
            p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.SequentialLR(
    opt, [torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.2, total_iters=5),
          torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=1)], milestones=[5])
data = torch.from_numpy(seqs)
for step in range(40):
    opt.zero_grad()
    logits = model(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), data[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    sched.step()
    print(f"LOSS {loss.item():.6f}")
