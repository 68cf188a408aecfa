"""A bidirectional LSTM tagger over variable-length sequences: pack_padded_sequence /
pad_packed_sequence, Embedding, a per-token Linear, masked cross-entropy; the tag of each
token is whether it is larger than its left neighbour."""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

rng = np.random.default_rng(7)
V, E, H = 10, 8, 8


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, E, padding_idx=0)
        self.lstm = nn.LSTM(E, H, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * H, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.emb(x), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return self.out(out)


model = Tagger()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
    model.emb.weight[0].zero_()
opt = torch.optim.Adam(model.parameters(), lr=0.03)
for step in range(80):
    lengths = rng.integers(3, 8, size=12)
    x = np.zeros((12, 7), np.int64)
    for i, n in enumerate(lengths):
        x[i, :n] = rng.integers(1, V, size=n)
    y = np.zeros_like(x)
    y[:, 1:] = x[:, 1:] > x[:, :-1]
    mask = torch.from_numpy(x != 0)
    logits = model(torch.from_numpy(x), torch.from_numpy(lengths))
    loss = nn.functional.cross_entropy(logits[mask], torch.from_numpy(y)[mask])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"LOSS {loss.item():.6f}")
