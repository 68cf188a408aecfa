"""A wrong flatten size before the classifier: the CNN forgets that pooling halved 8x8 to 4x4.

Conv(1->8, 3x3, pad 1) -> ReLU -> MaxPool(2) gives (N, 8, 4, 4) = 128 features per image,
but the flatten and the classifier are written for 8 * 8 * 8 = 512. The tutorial idiom
`x.view(-1, size)` lets the batch dimension absorb the difference.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits, images

BATCH, STEPS = 32, 20
eager.manual_seed(0)
d = digits()
x_train = images(d.x_train)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv(x)))
        x = x.view(-1, 8 * 8 * 8)  # BUG: after pooling a map is 4x4: the size is 8 * 4 * 4
        return self.fc(x)


model = CNN()
opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def loss_fn(x, y):
    return F.cross_entropy(model(x), y)

for step in range(STEPS):
    idx = slice(step * BATCH, (step + 1) * BATCH)
    x, y = eager.from_numpy(x_train[idx]), eager.from_numpy(d.y_train[idx])
    loss = loss_fn(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
