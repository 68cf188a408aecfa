"""The tutorial training loop: TensorDataset and DataLoader (batch_size, shuffle=False,
drop_last), a Sequential with BatchNorm1d, LeakyReLU and Dropout(p=0), SGD with weight
decay, a per-epoch evaluation under model.eval() and torch.no_grad() accumulating a summed
loss and correct count; weights from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(40)
centers = rng.normal(scale=1.5, size=(3, 6))
labels = rng.integers(0, 3, size=200)
feats = (centers[labels] + rng.normal(size=(200, 6))).astype(np.float32)
train = TensorDataset(torch.from_numpy(feats[:160]), torch.from_numpy(labels[:160]))
test = TensorDataset(torch.from_numpy(feats[160:]), torch.from_numpy(labels[160:]))
train_loader = DataLoader(train, batch_size=32, shuffle=False, drop_last=True)
test_loader = DataLoader(test, batch_size=16)

model = nn.Sequential(nn.Linear(6, 24), nn.BatchNorm1d(24), nn.LeakyReLU(0.1),
                      nn.Dropout(p=0.0), nn.Linear(24, 3))
with torch.no_grad():
    for name, p in model.named_parameters():
        if not name.startswith("1."):
            p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
for epoch in range(8):
    model.train()
    for xb, yb in train_loader:
        opt.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
    model.eval()
    total, correct = 0.0, 0
    with torch.no_grad():
        for xb, yb in test_loader:
            out = model(xb)
            total += criterion(out, yb).item() * len(yb)
            correct += (out.argmax(1) == yb).sum().item()
    print(f"epoch {epoch} test loss {total / len(test):.4f} accuracy {correct / len(test):.3f}")
