"""nn.ModuleList of residual blocks, register_buffer for input normalisation statistics,
a train / test split by Subset over a NumPy permutation (random_split draws from torch's own
generator, which no other library reproduces), DataLoader, nn.DataParallel (a passthrough without
GPUs, state dict keys under module.), Adagrad, and evaluation under torch.no_grad()."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset

rng = np.random.default_rng(33)
x = (rng.normal(size=(120, 6)) * 3 + 5).astype(np.float32)
y = (np.sin(x[:, 0]) + 0.1 * x[:, 1]).astype(np.float32)[:, None]


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, h):
        return h + torch.tanh(self.fc(h))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mu", torch.from_numpy(x.mean(0)))
        self.register_buffer("sd", torch.from_numpy(x.std(0)))
        self.inp = nn.Linear(6, 16)
        self.blocks = nn.ModuleList([Block(16) for _ in range(3)])
        self.out = nn.Linear(16, 1)

    def forward(self, v):
        h = self.inp((v - self.mu) / self.sd)
        for b in self.blocks:
            h = b(h)
        return self.out(h)


net = Net()
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.2, size=tuple(p.shape)).astype(np.float32)))
model = nn.DataParallel(net)
assert list(model.state_dict())[0] == "module.mu"
perm = rng.permutation(120).tolist()
full = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
train, test = Subset(full, perm[:100]), Subset(full, perm[100:])
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
for epoch in range(15):
    for xb, yb in DataLoader(train, batch_size=25):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
with torch.no_grad():
    xt, yt = next(iter(DataLoader(test, batch_size=20)))
    print(f"test {nn.functional.mse_loss(model(xt), yt).item():.4f}")
