"""A bidirectional two-layer nn.GRU (batch_first) over equal-length sequences, the last
step's forward and first step's backward states concatenated, a Linear head, BCEWithLogitsLoss
with pos_weight, RMSprop and ExponentialLR; weights copied from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(33)
x = rng.normal(size=(64, 7, 3)).astype(np.float32)
y = (x[:, :, 0].sum(1) > 0).astype(np.float32)[:, None]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        out, h = self.rnn(x)                      # h: (layers * 2, N, 8)
        return self.head(torch.cat([h[-2], h[-1]], dim=1))


model = Net()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.RMSprop(model.parameters(), lr=0.005)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.97)
criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.5]))
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
for epoch in range(25):
    for i in range(0, 64, 32):
        opt.zero_grad()
        loss = criterion(model(xt[i:i + 32]), yt[i:i + 32])
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
    sched.step()
