"""MLP classifier: DataLoader, SGD with momentum, StepLR, gradient clipping; weights set from a
seeded NumPy generator so every library starts from the same point. Prints LOSS lines."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)
x = torch.tensor(rng.normal(size=(64, 4)).astype(np.float32))
y = torch.tensor((rng.normal(size=64) + x.numpy().sum(1) > 0).astype(np.int64))
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=False)
for epoch in range(15):
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(f"LOSS {loss.item():.6f}")
    sched.step()
