"""A mask of the wrong shape: a (N, steps) padding mask is added to (N, heads, steps, steps) scores.

A one-block transformer classifier on the digits read as sequences of 5 to 8 rows, padded
to 8 with a mask. The mask needs two new axes, mask[:, None, None, :], to reach the scores.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits, row_sequences

BATCH, STEPS, WIDTH, HEADS = 32, 20, 32, 4
eager.manual_seed(0)
d = digits()
seqs = row_sequences(d.x_train, seed=0)          # .x (N, 8, 8) zero padded, .mask (N, 8)


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def split_heads(self, t):
        n, steps, width = t.shape
        return t.reshape(n, steps, self.heads, width // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = eager.split(self.qkv(x), x.shape[-1], dim=-1)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5   # (N, heads, steps, steps)
        scores = scores + (1.0 - mask) * -1e9  # BUG: mask is (N, steps); use mask[:, None, None, :]
        out = (F.softmax(scores, dim=-1) @ v).permute(0, 2, 1, 3).reshape(x.shape)
        return self.proj(out)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, WIDTH)
        self.attn = Attention(WIDTH, HEADS)
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, seq, mask):
        x = self.embed(seq)
        x = self.norm(x + self.attn(x, mask))
        return self.head(x.mean(dim=1))


model = Classifier()
opt = optim.Adam(model.parameters(), lr=1e-2)


def loss_fn(seq, mask, y):
    return F.cross_entropy(model(seq, mask), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    seq, mask = eager.from_numpy(seqs.x[idx]), eager.from_numpy(seqs.mask[idx])
    loss = loss_fn(seq, mask, eager.from_numpy(d.y_train[idx]))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
