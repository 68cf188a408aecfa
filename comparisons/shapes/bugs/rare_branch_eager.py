"""A bug on a rarely taken branch: every 10th step adds pixel jitter, and the jitter has the wrong width.

An MLP on the digits. Data augmentation runs only on some steps, so the wrong line does not
run at all until step 10.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS, JITTER_EVERY = 32, 20, 10
eager.manual_seed(0)
d = digits()

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loss_fn(x, y, augment):
    if augment:
        x = x + 0.05 * eager.randn(1, 32)  # BUG: the images have 64 pixels, not 32
    return F.cross_entropy(model(x), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(d.x_train[idx]), eager.from_numpy(d.y_train[idx])
    loss = loss_fn(x, y, step % JITTER_EVERY == JITTER_EVERY - 1)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
