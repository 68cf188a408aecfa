"""Reshape to an incompatible size: the flat pixels are viewed as 7x7 images, but digits are 8x8.

A small CNN on the digits, fed the flat (N, 64) rows and reshaping them itself.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
eager.manual_seed(0)
d = digits()


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = x.view(-1, 1, 7, 7)  # BUG: the digits are 8x8 images: view(-1, 1, 8, 8)
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))


model = CNN()
opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


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
