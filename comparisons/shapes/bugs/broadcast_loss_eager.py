"""A broadcasting bug that raises nothing: predictions (N, 1) against targets (N,) become (N, N) in the loss.

A small regression MLP that predicts the digit's value (0-9) from its pixels, with MSE. The
model's output has a trailing dimension of 1, the targets do not, so `pred - y` broadcasts to
(N, N) and the loss compares every prediction with every target: it trains towards the mean.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 30
eager.manual_seed(0)
d = digits()
targets = d.y_train.astype("float32")          # (N,) digit values as regression targets

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))
opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def loss_fn(x, y):
    pred = model(x)                               # (BATCH, 1)
    return F.mse_loss(pred, y)  # BUG: pred is (BATCH, 1), y is (BATCH,): the loss is over (BATCH, BATCH)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(d.x_train[idx]), eager.from_numpy(targets[idx])
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
