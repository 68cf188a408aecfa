"""The four models at the sizes people train, written once against a `torch`-like module.

The same text runs on real PyTorch (`torch`) and on dualgrad's eager engine (`dualgrad.eager`),
so the two columns time the same program. Sizes are issue 35's:

    mlp   784-1024-1024-10, batch 256
    cnn   3 convs 32-64-128 (3x3, pad 1, each followed by ReLU and 2x2 max-pool) on 3x32x32,
          then Linear(2048, 10); batch 64
    gpt   2 pre-norm blocks, d 256, 4 heads, causal attention, T 128, vocab 1000, batch 16
    lstm  nn.LSTM 128 -> 256 over T 50, Linear(256, 10) on the last state; batch 64

Every model trains with Adam (lr 1e-3) on a cross-entropy loss. `make_step(name, torch, compiled)`
returns a zero-argument callable that runs one training step on a fixed batch, and
`flops(name)` the multiply-adds of one step (forward, and twice that backward) counted over the
matrix products and convolutions, which is what the sgemm-rate share divides.

>>> import dualgrad.eager as deager
>>> step = make_step("mlp", deager, scale=0.05)
>>> step() > 0
True
"""
from __future__ import annotations

import numpy as np

SIZES = {"mlp": dict(batch=256, d_in=784, hidden=1024, n_out=10),
         "cnn": dict(batch=64, chans=(3, 32, 64, 128), hw=32, n_out=10),
         "gpt": dict(batch=16, d=256, heads=4, T=128, vocab=1000, blocks=2),
         "lstm": dict(batch=64, d_in=128, hidden=256, T=50, n_out=10)}


def _models(torch):
    nn, F = torch.nn, torch.nn.functional

    class MLP(nn.Module):
        def __init__(self, d_in, hidden, n_out):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                     nn.ReLU(), nn.Linear(hidden, n_out))

        def forward(self, x):
            return self.net(x)

    class CNN(nn.Module):
        def __init__(self, chans, hw, n_out):
            super().__init__()
            self.convs = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1)
                                       for a, b in zip(chans[:-1], chans[1:]))
            self.fc = nn.Linear(chans[-1] * (hw // 2 ** (len(chans) - 1)) ** 2, n_out)

        def forward(self, x):
            for conv in self.convs:
                x = F.max_pool2d(F.relu(conv(x)), 2)
            return self.fc(x.flatten(1))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self, d, heads, T, vocab, blocks):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(T, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(blocks))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))

    class LSTMHead(nn.Module):
        def __init__(self, d_in, hidden, n_out):
            super().__init__()
            self.lstm = nn.LSTM(d_in, hidden, batch_first=True)
            self.fc = nn.Linear(hidden, n_out)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])

    return {"mlp": MLP, "cnn": CNN, "gpt": GPT, "lstm": LSTMHead}


def _scaled(name, scale):
    """The model's sizes, batch and widths cut by `scale` (tests use a tiny scale)."""
    s = dict(SIZES[name])
    if scale == 1:
        return s
    cut = lambda v: max(2, int(v * scale))   # noqa: E731
    for k in ("batch", "hidden", "d_in", "T"):
        if k in s:
            s[k] = cut(s[k])
    if name == "gpt":
        s["d"] = s["heads"] * max(2, int(s["d"] // s["heads"] * scale))
    if name == "cnn":
        s["chans"] = (3,) + tuple(cut(c) for c in s["chans"][1:])
    return s


def _batch(name, s, rng):
    if name == "mlp":
        return (rng.standard_normal((s["batch"], s["d_in"]), np.float32),
                rng.integers(0, s["n_out"], s["batch"]))
    if name == "cnn":
        return (rng.standard_normal((s["batch"], 3, s["hw"], s["hw"]), np.float32),
                rng.integers(0, s["n_out"], s["batch"]))
    if name == "gpt":
        idx = rng.integers(0, s["vocab"], (s["batch"], s["T"] + 1))
        return idx[:, :-1].copy(), idx[:, 1:].copy()
    return (rng.standard_normal((s["batch"], s["T"], s["d_in"]), np.float32),
            rng.integers(0, s["n_out"], s["batch"]))


def make_step(name, torch, compiled=False, scale=1, seed=0):
    """A callable running one Adam training step of model `name` on `torch` (a module)."""
    s = _scaled(name, scale)
    torch.manual_seed(seed)
    args = {k: v for k, v in s.items() if k != "batch" and (k != "T" or name == "gpt")}
    model = _models(torch)[name](**args)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = (torch.from_numpy(a) for a in _batch(name, s, np.random.default_rng(seed)))
    flat = name == "gpt"

    def train_step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]) if flat else out,
                                                 y.reshape(-1) if flat else y)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        from dualgrad import compiler
        train_step = compiler.compile(train_step)
    return lambda: float(train_step(x, y).item())


def flops(name, scale=1):
    """Floating-point operations of one training step in its matrix products and convolutions
    (2 per multiply-add; backward counted as twice the forward, as is usual)."""
    s = _scaled(name, scale)
    b = s["batch"]
    if name == "mlp":
        fwd = b * (s["d_in"] * s["hidden"] + s["hidden"] ** 2 + s["hidden"] * s["n_out"])
    elif name == "cnn":
        fwd, hw = 0, s["hw"]
        for a, c in zip(s["chans"][:-1], s["chans"][1:]):
            fwd += b * hw * hw * a * c * 9
            hw //= 2
        fwd += b * s["chans"][-1] * hw * hw * s["n_out"]
    elif name == "gpt":
        d, T = s["d"], s["T"]
        per_block = T * (3 * d * d + d * d + 8 * d * d) + 2 * T * T * d
        fwd = b * (s["blocks"] * per_block + T * d * s["vocab"])
    else:
        h = s["hidden"]
        fwd = b * (s["T"] * 4 * h * (s["d_in"] + h) + h * s["n_out"])
    return 2 * 3 * fwd
