"""Small CNN with Conv2d, BatchNorm2d, MaxPool2d, Dropout (p=0 for determinism) and Adam,
train()/eval() switching and an accuracy line; weights copied from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(1)
x = rng.normal(size=(64, 1, 8, 8)).astype(np.float32)
y = (x[:, 0, :4].mean(axis=(1, 2)) > x[:, 0, 4:].mean(axis=(1, 2))).astype(np.int64)
x[y == 1, 0, :2] += 1.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.0)
        self.fc = nn.Linear(8 * 2 * 2, 2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


model = Net()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "bn" not in name:
            p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
for step in range(30):
    model.train()
    for i in range(0, 64, 32):
        opt.zero_grad()
        loss = F.cross_entropy(model(xt[i:i + 32]), yt[i:i + 32])
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
model.eval()
with torch.no_grad():
    acc = (model(xt).argmax(dim=1) == yt).float().mean().item()
print(f"accuracy {acc:.3f}")
