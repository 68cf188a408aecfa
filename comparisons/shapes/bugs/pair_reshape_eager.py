"""A reshape that joins examples: (N, 64) viewed as (-1, 128) makes one row of every two digits.

An MLP on the digits whose input width is written as a constant that is twice the real one.
`view(-1, FEATURES)` lets the batch dim absorb it: 32 digits become 16 rows of 128, and the
error comes later, where 16 predictions meet 32 labels.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS, FEATURES = 32, 20, 128
eager.manual_seed(0)
d = digits()

model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loss_fn(x, y):
    x = x.view(-1, FEATURES)  # BUG: a digit has 64 pixels: this joins two digits into one row
    return F.cross_entropy(model(x), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(d.x_train[idx]), eager.from_numpy(d.y_train[idx])
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
