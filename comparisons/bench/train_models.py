"""The realistic tier's four models, written once over a `torch` module.

The same text runs on real PyTorch and on `dualgrad.eager` (whose names and behaviour follow
PyTorch's): `models(torch)` returns the model classes built on that module, `build(torch,
name, size)` a model with the shared initial weights, its Adam optimiser and a step. The
graph (TF1-style) and jax.jit twins live in train_graph.py and train_jax.py and load the
same weights (`initial_weights`, PyTorch layouts).

Sizes (`SIZES`, the issue's "sizes people train"; `TINY` shrinks every dimension for tests):

    mlp   784-1024-1024-10, batch 256
    cnn   3x3 convs 32-64-128 (each + ReLU + 2x2 max-pool) on 3x32x32, dense to 10, batch 64
    gpt   2 pre-norm blocks, d 256, 4 heads (causal), T 128, vocab 1000, batch 16
    lstm  LSTM 128 -> 256 over T 50, dense to 10 on the last state, batch 64

>>> from dualgrad import eager
>>> step = build(eager, "mlp", TINY["mlp"])
>>> loss = step()
>>> loss > 0
True
"""
from __future__ import annotations

import numpy as np

LR = 1e-3
SIZES = {
    "mlp": {"batch": 256, "n_in": 784, "hidden": 1024, "n_out": 10},
    "cnn": {"batch": 64, "chans": (32, 64, 128), "image": 32, "n_out": 10},
    "gpt": {"batch": 16, "d": 256, "heads": 4, "blocks": 2, "tokens": 128, "vocab": 1000},
    "lstm": {"batch": 64, "n_in": 128, "hidden": 256, "steps": 50, "n_out": 10},
}
TINY = {
    "mlp": {"batch": 4, "n_in": 12, "hidden": 16, "n_out": 3},
    "cnn": {"batch": 2, "chans": (2, 3, 4), "image": 8, "n_out": 3},
    "gpt": {"batch": 2, "d": 8, "heads": 2, "blocks": 1, "tokens": 6, "vocab": 11},
    "lstm": {"batch": 3, "n_in": 5, "hidden": 6, "steps": 4, "n_out": 3},
}
NAMES = tuple(SIZES)


def models(torch):
    """The four model classes on `torch` (PyTorch itself or dualgrad.eager)."""
    nn, F = torch.nn, torch.nn.functional

    class MLP(nn.Module):
        def __init__(self, n_in, hidden, n_out, **_):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(n_in, hidden), nn.Linear(hidden, hidden)
            self.fc3 = nn.Linear(hidden, n_out)

        def forward(self, x):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    class CNN(nn.Module):
        def __init__(self, chans, image, n_out, **_):
            super().__init__()
            ins = (3,) + tuple(chans[:-1])
            self.convs = nn.ModuleList([nn.Conv2d(i, o, 3, padding=1) for i, o in zip(ins, chans)])
            side = image // 2 ** len(chans)
            self.fc = nn.Linear(chans[-1] * side * side, n_out)

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
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            n, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(n, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(n, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self, d, heads, blocks, tokens, vocab, **_):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(tokens, d)
            self.blocks = nn.ModuleList([Block(d, heads) for _ in range(blocks)])
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            h = self.tok(idx) + self.pos.weight[: idx.shape[1]]
            for block in self.blocks:
                h = block(h)
            return self.head(self.ln_f(h))

    class LSTM(nn.Module):
        def __init__(self, n_in, hidden, n_out, **_):
            super().__init__()
            self.rnn = nn.LSTM(n_in, hidden, batch_first=True)
            self.head = nn.Linear(hidden, n_out)

        def forward(self, x):
            _, (h, _) = self.rnn(x)
            return self.head(h[-1])

    return {"mlp": MLP, "cnn": CNN, "gpt": GPT, "lstm": LSTM}


def batch(name, size, seed=0):
    """(inputs, targets) as numpy arrays, the same for every column."""
    rng = np.random.default_rng(seed)
    n = size["batch"]
    if name == "mlp":
        x = rng.standard_normal((n, size["n_in"]), dtype=np.float32)
    elif name == "cnn":
        x = rng.standard_normal((n, 3, size["image"], size["image"]), dtype=np.float32)
    elif name == "lstm":
        x = rng.standard_normal((n, size["steps"], size["n_in"]), dtype=np.float32)
    else:
        x = rng.integers(0, size["vocab"], (n, size["tokens"] + 1))
        return x[:, :-1].copy(), x[:, 1:].reshape(-1).copy()
    return x, rng.integers(0, size["n_out"], n)


def initial_weights(name, size, seed=0) -> dict:
    """The shared starting point: dualgrad.eager's PyTorch-style init under `manual_seed`,
    as numpy arrays in PyTorch layouts (state_dict names)."""
    from dualgrad import eager
    eager.manual_seed(seed)
    model = models(eager)[name](**size)
    return {k: np.array(v.numpy(), copy=True) for k, v in model.state_dict().items()}


def build(torch, name, size, weights=None, compiled=False):
    """A zero-argument training step (forward, cross-entropy, backward, Adam) on a fixed batch,
    returning the loss as a float. compiled: the step through `dualgrad.compiler.compile`."""
    model = models(torch)[name](**size)
    weights = initial_weights(name, size) if weights is None else weights
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    F = torch.nn.functional
    x_np, y_np = batch(name, size)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def train_step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y)
        loss.backward()
        opt.step()
        return loss
    if compiled:
        from dualgrad import compiler
        train_step = compiler.compile(train_step)
    return lambda: train_step(x, y).item()


def flops(name, size) -> float:
    """Multiply-adds x 2 of one training step's matmuls and convolutions (forward x 3: the
    backward pass computes two products per forward one); elementwise work is left out."""
    n = size["batch"]
    if name == "mlp":
        h = size["hidden"]
        fwd = n * (size["n_in"] * h + h * h + h * size["n_out"])
    elif name == "cnn":
        fwd, side, c_in = 0, size["image"], 3
        for c in size["chans"]:
            fwd += n * side * side * c * c_in * 9
            side, c_in = side // 2, c
        fwd += n * c_in * side * side * size["n_out"]
    elif name == "gpt":
        d, t = size["d"], size["tokens"]
        per_block = t * (12 * d * d) + 2 * t * t * d // 2   # projections + causal half of QK, AV
        fwd = n * (size["blocks"] * per_block + t * d * size["vocab"])
    else:
        h, s = size["hidden"], size["steps"]
        fwd = n * (s * 4 * h * (size["n_in"] + h) + h * size["n_out"])
    # NOTE: the first layer needs no input gradient, which this ignores (a few per cent)
    return 2.0 * 3 * fwd

