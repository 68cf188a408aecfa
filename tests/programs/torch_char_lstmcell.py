"""A character model: Embedding, an LSTMCell stepped in a Python loop, a Linear head,
LambdaLR warm-up, and greedy generation under torch.no_grad() with argmax at the end."""
import numpy as np
import torch
import torch.nn as nn

text = "hello world, hello dualgrad. " * 4
chars = sorted(set(text))
idx = {c: i for i, c in enumerate(chars)}
data = torch.tensor([idx[c] for c in text])
V, H = len(chars), 24
rng = np.random.default_rng(31)


class CharModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.cell = nn.LSTMCell(16, H)
        self.head = nn.Linear(H, V)

    def forward(self, seq, state=None):
        outs = []
        for t in range(seq.size(1)):
            state = self.cell(self.emb(seq[:, t]), state)
            outs.append(self.head(state[0]))
        return torch.stack(outs, 1), state


model = CharModel()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.2, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.02)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
for step in range(60):
    starts = rng.integers(0, len(text) - 13, size=8)
    batch = torch.stack([data[s:s + 13] for s in starts])
    logits, _ = model(batch[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"LOSS {loss.item():.6f}")
with torch.no_grad():
    seq, state, out = data[:1].unsqueeze(0), None, "h"
    for _ in range(10):
        logits, state = model(seq, state)
        seq = logits[:, -1].argmax(dim=-1, keepdim=True)
        out += chars[seq.item()]
print("sample", repr(out))
