"""A transposed weight: the output weight is stored (out, in) but multiplied as if it were (in, out).

A two-layer classifier on the digits written with raw Parameters, PyTorch style: the
weights follow torch's (out_features, in_features) layout, so the product needs `.T`.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS, HIDDEN = 32, 20, 48
eager.manual_seed(0)
d = digits()


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(eager.randn(HIDDEN, 64) * 0.1)    # (out, in)
        self.b1 = nn.Parameter(eager.zeros(HIDDEN))
        self.w2 = nn.Parameter(eager.randn(10, HIDDEN) * 0.1)    # (out, in)
        self.b2 = nn.Parameter(eager.zeros(10))

    def forward(self, x):
        h = F.relu(x @ self.w1.T + self.b1)
        return h @ self.w2 + self.b2  # BUG: w2 is (10, 48), (out, in); this needs self.w2.T


model = TwoLayer()
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
