"""A physics-informed network: u(x) with u'' = -pi^2 sin(pi x), u(0) = u(1) = 0, the
derivatives from autograd.grad(create_graph=True) twice (higher-order gradients), Adam."""
import math

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(4)
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.7, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(net.parameters(), lr=0.01)
x = torch.linspace(0.0, 1.0, 32).reshape(-1, 1).requires_grad_(True)
edges = torch.tensor([[0.0], [1.0]])
for step in range(300):
    opt.zero_grad()
    u = net(x)
    du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
    d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
    residual = d2u + math.pi ** 2 * torch.sin(math.pi * x)
    loss = (residual ** 2).mean() + 10.0 * (net(edges) ** 2).mean()
    loss.backward()
    opt.step()
    print(f"LOSS {loss.item():.6f}")
