"""Metric learning: an embedding network trained with nn.TripletMarginLoss on anchor /
positive / negative triples, F.normalize'd outputs, F.cosine_similarity for a check, and
Adam with amsgrad; weights copied from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(35)
centers = rng.normal(scale=1.5, size=(4, 6)).astype(np.float32)


def triples(n):
    c = rng.integers(0, 4, size=n)
    other = (c + rng.integers(1, 4, size=n)) % 4
    noise = lambda: rng.normal(scale=0.7, size=(n, 6)).astype(np.float32)  # noqa: E731
    return [torch.from_numpy(centers[k] + noise()) for k in (c, c, other)]


net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
criterion = nn.TripletMarginLoss(margin=0.5, p=2)
opt = torch.optim.Adam(net.parameters(), lr=0.01, amsgrad=True)
data = [triples(32) for _ in range(4)]
for epoch in range(25):
    for a, p, n in data:
        opt.zero_grad()
        ea, ep, en = (F.normalize(net(t), dim=1) for t in (a, p, n))
        loss = criterion(ea, ep, en)
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
with torch.no_grad():
    a, p, n = data[0]
    pos = F.cosine_similarity(net(a), net(p)).mean().item()
    neg = F.cosine_similarity(net(a), net(n)).mean().item()
print(f"similarity positive {pos:.3f} negative {neg:.3f}")
