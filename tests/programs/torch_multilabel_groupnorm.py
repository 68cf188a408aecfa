"""Multi-label classification: a GroupNorm + PReLU network with a sigmoid output and
nn.BCELoss(weight=...) over 4 independent labels, Adam with ReduceLROnPlateau on the
epoch's mean loss, and a thresholded exact-match score; weights from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(43)
x = rng.normal(size=(96, 6)).astype(np.float32)
y = np.stack([x[:, 0] > 0, x[:, 1] + x[:, 2] > 0, x[:, 3] * x[:, 4] > 0, x[:, 5] > 0.5],
             axis=1).astype(np.float32)

model = nn.Sequential(nn.Linear(6, 32), nn.GroupNorm(4, 32), nn.PReLU(), nn.Linear(32, 4),
                      nn.Sigmoid())
with torch.no_grad():
    for name, p in model.named_parameters():
        if not name.startswith(("1.", "2.")):
            p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
criterion = nn.BCELoss(weight=torch.tensor([1.0, 1.0, 2.0, 1.0]))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
for epoch in range(30):
    total = 0.0
    for i in range(0, 96, 32):
        opt.zero_grad()
        loss = criterion(model(xt[i:i + 32]), yt[i:i + 32])
        loss.backward()
        opt.step()
        total += loss.item()
        print(f"LOSS {loss.item():.6f}")
    sched.step(total / 3)
with torch.no_grad():
    exact = ((model(xt) > 0.5).float() == yt).all(dim=1).float().mean().item()
print(f"exact match {exact:.3f}")
