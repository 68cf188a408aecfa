"""Knowledge distillation: a fixed teacher in eval() under torch.no_grad(), a student trained
on nn.KLDivLoss(reduction="batchmean") between temperature-softened log_softmax / softmax
plus a hard-label cross entropy, Adam with a LambdaLR warmup; weights from a seeded NumPy
stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(37)
x = torch.from_numpy(rng.normal(size=(96, 8)).astype(np.float32))


def seeded(module, scale):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.normal(scale=scale, size=tuple(p.shape)).astype(np.float32)))
    return module


teacher = seeded(nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 5)), 0.6).eval()
student = seeded(nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 5)), 0.3)
with torch.no_grad():
    soft_targets = teacher(x)
    hard = soft_targets.argmax(dim=1)
T = 2.0
kl = nn.KLDivLoss(reduction="batchmean")
opt = torch.optim.Adam(student.parameters(), lr=0.02)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 5))
for step in range(60):
    opt.zero_grad()
    logits = student(x)
    loss = kl(F.log_softmax(logits / T, dim=1), F.softmax(soft_targets / T, dim=1)) * T * T \
        + 0.5 * F.cross_entropy(logits, hard)
    loss.backward()
    opt.step()
    sched.step()
    print(f"LOSS {loss.item():.6f}")
