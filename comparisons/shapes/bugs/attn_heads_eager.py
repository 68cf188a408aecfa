"""Attention heads that do not divide the model width: 4 heads of a 30-wide model.

A one-block transformer classifier on the digits read as 8 rows (tokens) of 8 pixels. The
head size is computed with integer division, so 30 // 4 = 7 heads' worth of width is lost.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS, WIDTH, HEADS = 32, 20, 30, 4
eager.manual_seed(0)
d = digits()
rows = d.x_train.reshape(-1, 8, 8)


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def split_heads(self, t):
        n, steps, width = t.shape
        t = t.reshape(n, steps, self.heads, width // self.heads)  # BUG: 30 is not a multiple of 4
        return t.permute(0, 2, 1, 3)              # (N, heads, steps, head width)

    def forward(self, x):
        q, k, v = eager.split(self.qkv(x), x.shape[-1], dim=-1)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        att = F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        out = (att @ v).permute(0, 2, 1, 3).reshape(x.shape)
        return self.proj(out)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, WIDTH)
        self.attn = Attention(WIDTH, HEADS)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, seq):
        x = self.embed(seq)
        x = self.norm(x + self.attn(x))
        return self.head(x.mean(dim=1))


model = Classifier()
opt = optim.Adam(model.parameters(), lr=1e-2)


def loss_fn(seq, y):
    return F.cross_entropy(model(seq), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    seq, y = eager.from_numpy(rows[idx]), eager.from_numpy(d.y_train[idx])
    loss = loss_fn(seq, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
