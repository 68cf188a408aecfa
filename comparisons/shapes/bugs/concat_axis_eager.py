"""Concatenation on the wrong axis: extra features are joined along the batch axis.

An MLP on the digits that also gets 8 row sums per image: the 64 pixels and the 8 row sums
should be joined into 72 features per example (dim 1), not stacked as more examples (dim 0).
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
eager.manual_seed(0)
d = digits()

model = nn.Sequential(nn.Linear(64 + 8, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loss_fn(x, y):
    row_sums = x.reshape(-1, 8, 8).sum(dim=2)     # (BATCH, 8)
    feats = eager.cat([x, row_sums], dim=0)  # BUG: features are joined along dim=1
    return F.cross_entropy(model(feats), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(d.x_train[idx]), eager.from_numpy(d.y_train[idx])
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
