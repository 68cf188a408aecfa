"""LeNet in the tutorial's form: nn.Conv2d / nn.MaxPool2d / nn.Flatten modules, ReLU,
log_softmax with F.nll_loss, Adadelta and CosineAnnealingWarmRestarts stepped per batch with
a fractional epoch; images drawn from NumPy, weights from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(42)
x = rng.normal(scale=0.5, size=(64, 1, 14, 14)).astype(np.float32)
y = rng.integers(0, 3, size=64)
for k in range(3):
    x[y == k, 0, 4 * k:4 * k + 4, :] += 1.0


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(4, 8, 3), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8 * 2 * 2, 16), nn.ReLU(),
                                        nn.Linear(16, 3))

    def forward(self, x):
        return F.log_softmax(self.classifier(self.features(x)), dim=1)


model = LeNet()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=5, T_mult=2)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
batches = 4
for epoch in range(15):
    for b in range(batches):
        sl = slice(16 * b, 16 * (b + 1))
        opt.zero_grad()
        loss = F.nll_loss(model(xt[sl]), yt[sl])
        loss.backward()
        opt.step()
        sched.step(epoch + b / batches)
        print(f"LOSS {loss.item():.6f}")
