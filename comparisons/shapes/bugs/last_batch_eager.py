"""A hard-coded batch size: fine for every full batch, wrong for the last, shorter batch of the epoch.

A small CNN on 300 digits in batches of 32: nine full batches, then one of 12. The
forward pass flattens with the constant BATCH instead of the batch it was given.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits, images

BATCH, N_TRAIN, EPOCHS = 32, 300, 2
eager.manual_seed(0)
d = digits()
x_train, y_train = images(d.x_train[:N_TRAIN]), d.y_train[:N_TRAIN]


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv(x)))
        x = x.view(BATCH, -1)  # BUG: the last batch has 12 images, not BATCH; use x.shape[0]
        return self.fc(x)


model = CNN()
opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def loss_fn(x, y):
    return F.cross_entropy(model(x), y)

for epoch in range(EPOCHS):
    for start in range(0, N_TRAIN, BATCH):          # the last batch is shorter
        x = eager.from_numpy(x_train[start:start + BATCH])
        y = eager.from_numpy(y_train[start:start + BATCH])
        loss = loss_fn(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print(f"final loss {loss.item():.3f}")
