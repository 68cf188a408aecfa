"""A label tensor of the wrong rank for cross-entropy: class indices as a (N, 1) column.

An MLP on the digits whose labels come as a column vector, as they do from a CSV column or
a `y.reshape(-1, 1)` kept from a scikit-learn pipeline.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
eager.manual_seed(0)
d = digits()
labels = d.y_train.reshape(-1, 1)                 # (N, 1) class indices

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loss_fn(x, y):
    return F.cross_entropy(model(x), y)  # BUG: y is (BATCH, 1); cross_entropy wants (BATCH,)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(d.x_train[idx]), eager.from_numpy(labels[idx])
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
