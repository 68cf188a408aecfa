"""TensorBoard logging with SummaryWriter (add_scalar per step, add_histogram of weights,
flush/close into a temporary folder), OneCycleLR, and torch.no_grad evaluation."""
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

rng = np.random.default_rng(10)
x = torch.from_numpy(rng.normal(size=(128, 6)).astype(np.float32))
y = torch.from_numpy((x.numpy()[:, :3].sum(1) > 0).astype(np.float32)).unsqueeze(1)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=80)
writer = SummaryWriter(tempfile.mkdtemp())
crit = nn.BCEWithLogitsLoss()
for step in range(80):
    opt.zero_grad()
    loss = crit(model(x), y)
    loss.backward()
    opt.step()
    sched.step()
    writer.add_scalar("train/loss", loss.item(), step)
    writer.add_scalar("train/lr", sched.get_last_lr()[0], step)
    print(f"LOSS {loss.item():.6f}")
writer.add_histogram("weights/0", model[0].weight, 80)
writer.flush()
writer.close()
with torch.no_grad():
    print(f"accuracy {((model(x) > 0).float() == y).float().mean().item():.3f}")
