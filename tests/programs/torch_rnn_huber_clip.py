"""Sequence regression with nn.RNN (tanh, batch_first=False, an explicit zero h0),
nn.HuberLoss, clip_grad_norm_ before every step, and Adam with PolynomialLR; predicting the
running sum of a noisy signal; weights from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(39)
T, N = 9, 48
x = rng.normal(scale=0.5, size=(T, N, 2)).astype(np.float32)
y = np.cumsum(x[:, :, :1] - 0.5 * x[:, :, 1:], axis=0).astype(np.float32)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(2, 12, nonlinearity="tanh")
        self.head = nn.Linear(12, 1)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(1), 12)
        out, _ = self.rnn(x, h0)
        return self.head(out)


model = Net()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.02)
sched = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=60, power=1.0)
criterion = nn.HuberLoss(delta=0.5)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
for step in range(60):
    opt.zero_grad()
    loss = criterion(model(xt), yt)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    sched.step()
    print(f"LOSS {loss.item():.6f}")
