"""A custom Dataset (__len__/__getitem__ returning dicts), DataLoader with a collate_fn and
drop_last, a validation split by Subset, ReduceLROnPlateau on the validation loss, gradient
accumulation over two batches, and state_dict-based early-stopping bookkeeping."""
import copy

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Subset

rng = np.random.default_rng(9)


class Points(Dataset):
    def __init__(self, n):
        self.x = rng.normal(size=(n, 4)).astype(np.float32)
        self.y = (self.x @ np.array([1.0, -1.0, 0.5, 0.0], np.float32)).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": torch.from_numpy(self.x[i]), "y": torch.tensor(self.y[i])}


def collate(items):
    return torch.stack([it["x"] for it in items]), torch.stack([it["y"] for it in items])


data = Points(96)
train = DataLoader(Subset(data, range(64)), batch_size=8, drop_last=True, collate_fn=collate)
val = DataLoader(Subset(data, range(64, 96)), batch_size=32, collate_fn=collate)
model = nn.Linear(4, 1)
with torch.no_grad():
    model.weight.zero_()
    model.bias.fill_(0.5)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
best, best_state = float("inf"), None
for epoch in range(12):
    model.train()
    for i, (xb, yb) in enumerate(train):
        loss = nn.functional.mse_loss(model(xb).squeeze(1), yb) / 2
        loss.backward()
        if i % 2 == 1:
            opt.step()
            opt.zero_grad()
        print(f"LOSS {loss.item() * 2:.6f}")
    model.eval()
    with torch.no_grad():
        v = sum(nn.functional.mse_loss(model(xb).squeeze(1), yb).item() for xb, yb in val)
    sched.step(v)
    if v < best:
        best, best_state = v, copy.deepcopy(model.state_dict())
model.load_state_dict(best_state)
print(f"best {best:.5f} lr {opt.param_groups[0]['lr']:.4f}")
