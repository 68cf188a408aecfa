"""Gradient accumulation over micro-batches (loss / steps, backward each, one optimizer step),
parameter groups with their own learning rates and weight decay, clip_grad_value_,
Adagrad, and a MultiStepLR schedule; weights copied from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(34)
x = rng.uniform(-1, 1, size=(96, 4)).astype(np.float32)
y = (np.sin(2 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype(np.float32)

body = nn.Sequential(nn.Linear(4, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh())
head = nn.Linear(24, 1)
with torch.no_grad():
    for p in list(body.parameters()) + list(head.parameters()):
        p.copy_(torch.from_numpy(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adagrad([{"params": body.parameters(), "weight_decay": 1e-3},
                           {"params": head.parameters(), "lr": 0.05}], lr=0.1)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[10, 20], gamma=0.5)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
ACCUM = 3
for epoch in range(30):
    opt.zero_grad()
    total = 0.0
    for k in range(ACCUM):
        xb, yb = xt[k * 32:(k + 1) * 32], yt[k * 32:(k + 1) * 32]
        loss = nn.functional.mse_loss(head(body(xb)), yb) / ACCUM
        loss.backward()
        total += loss.item()
    torch.nn.utils.clip_grad_value_(list(body.parameters()) + list(head.parameters()), 0.5)
    opt.step()
    sched.step()
    print(f"LOSS {total:.6f}")
