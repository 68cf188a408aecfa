"""Inner-dimension mismatch in a dense layer: the second layer is sized for 64 inputs, the first gives 32.

An MLP on the digits (64 pixels -> 32 hidden -> 10 classes), PyTorch style. The layer
sizes are written twice, once per Linear, and they disagree.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
eager.manual_seed(0)
d = digits()

model = nn.Sequential(
    nn.Linear(64, 32),
    nn.ReLU(),
    nn.Linear(64, 10),  # BUG: the hidden layer has 32 units, so this needs Linear(32, 10)
)
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loss_fn(x, y):
    return F.cross_entropy(model(x), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(d.x_train[idx]), eager.from_numpy(d.y_train[idx])
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
