"""A variational autoencoder: encoder to (mu, logvar), the reparameterisation trick with
noise eps drawn in NumPy, a decoder with BCEWithLogits reconstruction (reduction="sum") plus
the KL term, Adam; trained on binary patterns."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(41)
protos = (rng.uniform(size=(4, 16)) > 0.5).astype(np.float32)
data = protos[rng.integers(0, 4, size=128)]
flip = rng.uniform(size=data.shape) < 0.05
data = np.where(flip, 1 - data, data).astype(np.float32)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(16, 24)
        self.mu, self.logvar = nn.Linear(24, 2), nn.Linear(24, 2)
        self.dec1, self.dec2 = nn.Linear(2, 24), nn.Linear(24, 16)

    def forward(self, x, eps):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.dec2(F.relu(self.dec1(z))), mu, logvar


model = VAE()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x_all = torch.from_numpy(data)
for epoch in range(40):
    for i in range(0, 128, 32):
        x = x_all[i:i + 32]
        eps = torch.from_numpy(rng.normal(size=(32, 2)).astype(np.float32))
        logits, mu, logvar = model(x, eps)
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (rec + kl) / x.size(0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
