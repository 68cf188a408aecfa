"""A TransformerEncoder (batch_first, norm_first) over token embeddings plus learned
positions, mean-pooled with a key padding mask, AdamW with weight decay and a LinearLR
warm-up then CosineAnnealingLR (SequentialLR); the class is whether token 3 occurs."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(8)
V, D, T = 12, 16, 8


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(1, T, D))
        layer = nn.TransformerEncoderLayer(D, 2, dim_feedforward=32, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(D, 2)

    def forward(self, x, pad):
        h = self.encoder(self.emb(x) + self.pos, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return self.head((h * keep).sum(1) / keep.sum(1))


model = Classifier()
with torch.no_grad():
    for name, p in model.named_parameters():
        value = rng.normal(scale=0.2, size=tuple(p.shape)).astype(np.float32)
        p.copy_(torch.from_numpy(value + 1.0 if "norm" in name and "weight" in name else value))
opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
sched = torch.optim.lr_scheduler.SequentialLR(opt, [
    torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=10),
    torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=90)], milestones=[10])
for step in range(100):
    x = rng.integers(1, V, size=(16, T))
    x[::2, rng.integers(0, T)] = 3
    pad = np.zeros((16, T), bool)
    pad[:, 6:] = rng.uniform(size=(16, 2)) < 0.5
    x[pad] = 0
    y = torch.from_numpy((x == 3).any(axis=1).astype(np.int64))
    loss = nn.functional.cross_entropy(model(torch.from_numpy(x), torch.from_numpy(pad)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    print(f"LOSS {loss.item():.6f}")
