"""A sequence-length mismatch in a recurrent model: 8 predictions are scored against 7 targets.

A GRU reads each digit row by row (8 steps of 8 pixels) and, after every row, predicts the
next row. Only rows 1-7 have a "next row" to compare with, but the loop runs over all 8.
"""
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

from dualgrad.comparisons.data import digits

BATCH, STEPS, HIDDEN = 32, 20, 32
eager.manual_seed(0)
d = digits()
rows = d.x_train.reshape(-1, 8, 8)                # (N, steps, pixels)


class NextRow(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, HIDDEN)
        self.out = nn.Linear(HIDDEN, 8)

    def forward(self, seq):
        h, preds = None, []
        for t in range(seq.shape[1]):
            h = self.cell(seq[:, t], h)
            preds.append(self.out(h))
        return eager.stack(preds, dim=1)          # (N, 8, 8)


model = NextRow()
opt = optim.Adam(model.parameters(), lr=1e-2)


def loss_fn(seq):
    preds = model(seq)
    return F.mse_loss(preds, seq[:, 1:])  # BUG: 8 predictions, 7 next rows: use preds[:, :-1]

for step in range(STEPS):
    seq = eager.from_numpy(rows[step * BATCH:(step + 1) * BATCH])
    loss = loss_fn(seq)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3f}")
