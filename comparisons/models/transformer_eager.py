"""One transformer encoder block, eager (PyTorch style), on digits read as row tokens.

Each image is a sequence of up to 8 tokens (its rows, 8 pixels each; 0-3 last rows dropped
and padded). Padding is handled the way transformers always do it, in both styles: a mask,
applied to the attention scores with `where`, so padded tokens get no attention weight.

    tokens = Linear(8, 32)(rows) + position embedding
    h = tokens + MultiHeadSelfAttention(LayerNorm(tokens), mask)     (4 heads, pre-norm)
    h = h + MLP(LayerNorm(h))                                        (32 -> 64 -> GELU -> 32)
    logits = Linear(32, 10)(LayerNorm(masked mean of h over tokens))

>>> from dualgrad.comparisons.models import transformer_eager
>>> from dualgrad.comparisons.models.common import transformer_task
>>> x, mask, y = transformer_task().batches(0)[0]
>>> transformer_eager.build(seed=0).predict(x, mask).shape
(64, 10)
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from .common import compile_fn, numpy_state

LR, EPOCHS = 3e-3, 15
D_MODEL, HEADS, D_FF, TOKENS = 32, 4, 64, 8
NEG = -1e9   # the score a padded key gets: exp() makes its weight 0


class SelfAttention(nn.Module):
    def __init__(self, d=D_MODEL, heads=HEADS):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x, mask):                           # x (N, T, d), mask (N, T)
        n, t, d = x.shape
        qkv = self.qkv(x).reshape(n, t, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                  # each (N, H, T, dh)
        scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(self.dh))    # (N, H, T, T)
        keep = mask.reshape(n, 1, 1, t) > 0
        att = F.softmax(eager.where(keep, scores, NEG), dim=-1)
        y = (att @ v).permute(0, 2, 1, 3).reshape(n, t, d)
        return self.out(y)


class EncoderClassifier(nn.Module):
    def __init__(self, n_in=8, d=D_MODEL, d_ff=D_FF, n_out=10):
        super().__init__()
        self.embed = nn.Linear(n_in, d)
        self.pos = nn.Parameter(np.zeros((TOKENS, d), np.float32))
        self.ln1, self.ln2, self.ln_out = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SelfAttention(d)
        self.ff1, self.ff2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.head = nn.Linear(d, n_out)

    def forward(self, x, mask):                           # x (N, T, 8), mask (N, T) of 0/1
        h = self.embed(x) + self.pos[: x.shape[1]]
        h = h + self.attn(self.ln1(h), mask)
        h = h + self.ff2(F.gelu(self.ff1(self.ln2(h)), approximate="tanh"))
        m = mask.unsqueeze(-1)                            # (N, T, 1)
        pooled = (h * m).sum(1) / m.sum(1)                # mean over the real tokens
        return self.head(self.ln_out(pooled))


def initial_weights(seed=0) -> dict:
    eager.manual_seed(seed)
    model = EncoderClassifier()
    with eager.no_grad():
        model.pos.copy_(0.1 * eager.randn(TOKENS, D_MODEL))
    return numpy_state(model)


class Trainer:
    def __init__(self, model, lr=LR, compiled=False):
        self.model = model
        self.opt = optim.Adam(model.parameters(), lr=lr)
        self.train_step = compile_fn(self._train_step) if compiled else self._train_step

    def _train_step(self, x, mask, y):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x, mask), y)
        loss.backward()
        self.opt.step()
        return loss

    def step(self, x, mask, y):
        return self.train_step(eager.from_numpy(x), eager.from_numpy(mask),
                               eager.from_numpy(y)).item()

    def predict(self, x, mask):
        with eager.no_grad():
            return self.model(eager.from_numpy(x), eager.from_numpy(mask)).numpy()


def build(weights=None, seed=0, compiled=False, **opt):
    model = EncoderClassifier()
    model.load_state_dict(weights if weights is not None else initial_weights(seed))
    return Trainer(model, compiled=compiled, **opt)
