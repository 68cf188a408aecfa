"""WGAN with gradient penalty: the critic's gradient at interpolated points from
torch.autograd.grad(create_graph=True, grad_outputs=ones), penalty (||g|| - 1)^2, several
critic steps per generator step, Adam(betas=(0.5, 0.9)). LEARNED: the generated mean's
distance to the data mean."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(32)


def init(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.from_numpy(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
    return m


G = init(nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1)))
C = init(nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 1)))
opt_g = torch.optim.Adam(G.parameters(), lr=0.005, betas=(0.5, 0.9))
opt_c = torch.optim.Adam(C.parameters(), lr=0.005, betas=(0.5, 0.9))
fixed = torch.from_numpy(rng.normal(size=(256, 2)).astype(np.float32))
with torch.no_grad():
    before = abs(G(fixed).mean().item() - 3.0)
for step in range(150):
    for _ in range(3):
        real = torch.from_numpy(rng.normal(3.0, 0.5, size=(32, 1)).astype(np.float32))
        fake = G(torch.from_numpy(rng.normal(size=(32, 2)).astype(np.float32))).detach()
        eps = torch.from_numpy(rng.uniform(size=(32, 1)).astype(np.float32))
        mid = (eps * real + (1 - eps) * fake).requires_grad_(True)
        out = C(mid)
        grad = torch.autograd.grad(out, mid, grad_outputs=torch.ones_like(out),
                                   create_graph=True)[0]
        penalty = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        c_loss = C(fake).mean() - C(real).mean() + 10.0 * penalty
        opt_c.zero_grad()
        c_loss.backward()
        opt_c.step()
    g_loss = -C(G(torch.from_numpy(rng.normal(size=(32, 2)).astype(np.float32)))).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    print(f"LOSS {c_loss.item():.6f}")
with torch.no_grad():
    after = abs(G(fixed).mean().item() - 3.0)
print(f"LEARNED {before:.6f} {after:.6f}")
