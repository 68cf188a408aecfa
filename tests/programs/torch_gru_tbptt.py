"""Sequence regression with nn.GRU (2 layers, batch_first) and truncated backpropagation
through time: the hidden state carried across chunks with .detach(), StepLR, MSELoss,
predicting the next value of noisy sine waves."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(40)
t = np.arange(400) * 0.1
waves = np.stack([np.sin(t * f + p) for f, p in rng.uniform(0.5, 1.5, size=(8, 2))])
waves = (waves + rng.normal(scale=0.05, size=waves.shape)).astype(np.float32)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(1, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x, h=None):
        out, h = self.gru(x, h)
        return self.head(out), h


model = Model()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7)
data = torch.from_numpy(waves).unsqueeze(-1)
for epoch in range(8):
    h = None
    for s in range(0, 399 - 20, 20):
        x, y = data[:, s:s + 20], data[:, s + 1:s + 21]
        pred, h = model(x, h)
        h = h.detach()
        loss = nn.functional.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
    sched.step()
