"""A text CNN: nn.Embedding with padding_idx, Conv1d filters of two widths, max over time,
concatenation, nn.CrossEntropyLoss with label_smoothing, SGD with Nesterov momentum and
StepLR; token sequences drawn from NumPy, weights copied from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(32)
V, T, N = 20, 10, 64
tokens = rng.integers(1, V, size=(N, T))
labels = (tokens[:, :5] < 8).sum(1) > (tokens[:, 5:] < 8).sum(1)
tokens[:, -2:] = 0   # padding


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 8, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(8, 6, k) for k in (2, 3)])
        self.out = nn.Linear(12, 2)

    def forward(self, tok):
        e = self.emb(tok).transpose(1, 2)             # (N, C, T)
        feats = [torch.relu(c(e)).max(dim=2)[0] for c in self.convs]
        return self.out(torch.cat(feats, dim=1))


model = TextCNN()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
    model.emb.weight[0].fill_(0)
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
tok, lab = torch.from_numpy(tokens), torch.from_numpy(labels.astype(np.int64))
for epoch in range(40):
    for i in range(0, N, 32):
        opt.zero_grad()
        loss = criterion(model(tok[i:i + 32]), lab[i:i + 32])
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
    sched.step()
