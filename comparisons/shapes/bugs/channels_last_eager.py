"""Channel-last images given to a channel-first convolution: (N, 8, 8, 1) where Conv2d wants (N, 1, 8, 8).

A small CNN on the digits, PyTorch style, fed images laid out as a TensorFlow tutorial (or an
image library) gives them: height, width, channels. PyTorch's Conv2d reads dim 1 as channels.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS = 32, 20
eager.manual_seed(0)
d = digits()
x_train = d.x_train.reshape(-1, 8, 8, 1)          # NHWC, as the images came


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))  # BUG: x is (N, 8, 8, 1); Conv2d wants x.permute(0, 3, 1, 2)
        return self.fc(F.max_pool2d(x, 2).flatten(1))


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
