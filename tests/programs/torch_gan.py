"""1-D GAN: generator and discriminator MLPs, BCEWithLogitsLoss, two Adam optimizers,
detach() for the discriminator step; noise and data from a seeded NumPy stream. Prints each
step's discriminator + generator loss, and LEARNED: the distance of the generated mean to
the data mean, before and after."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(2)


def init(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.normal(scale=0.5, size=tuple(p.shape)).astype(np.float32)))
    return module


G = init(nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)))
D = init(nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)))
criterion = nn.BCEWithLogitsLoss()
opt_g = torch.optim.Adam(G.parameters(), lr=0.01, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=0.01, betas=(0.5, 0.999))
ones, zeros = torch.ones(32, 1), torch.zeros(32, 1)
fixed_z = torch.from_numpy(rng.normal(size=(256, 2)).astype(np.float32))
with torch.no_grad():
    before = abs(G(fixed_z).mean().item() - 4.0)
for step in range(300):
    real = torch.from_numpy(rng.normal(4.0, 0.5, size=(32, 1)).astype(np.float32))
    z = torch.from_numpy(rng.normal(size=(32, 2)).astype(np.float32))
    fake = G(z)
    opt_d.zero_grad()
    d_loss = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = criterion(D(fake), ones)
    g_loss.backward()
    opt_g.step()
    print(f"LOSS {d_loss.item() + g_loss.item():.6f}")
with torch.no_grad():
    after = abs(G(fixed_z).mean().item() - 4.0)
print(f"LEARNED {before:.6f} {after:.6f}")
