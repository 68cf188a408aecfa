"""Seq2seq with attention: an Embedding + GRU encoder, a GRU decoder with dot-product
attention over the encoder outputs, teacher forcing, CrossEntropyLoss(ignore_index=PAD),
clip_grad_norm_; the task is reversing short digit sequences."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(6)
PAD, BOS, V, H, T = 0, 1, 8, 16, 5


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H, padding_idx=PAD)
        self.enc = nn.GRU(H, H, batch_first=True)
        self.dec = nn.GRUCell(H, H)
        self.out = nn.Linear(2 * H, V)

    def forward(self, src, tgt_in):
        enc_out, h = self.enc(self.emb(src))          # (B, T, H), (1, B, H)
        h = h[0]
        logits = []
        for t in range(tgt_in.size(1)):
            h = self.dec(self.emb(tgt_in[:, t]), h)
            scores = torch.bmm(enc_out, h.unsqueeze(2)).squeeze(2)     # (B, T)
            context = torch.bmm(F.softmax(scores, dim=1).unsqueeze(1), enc_out).squeeze(1)
            logits.append(self.out(torch.cat([h, context], dim=1)))
        return torch.stack(logits, dim=1)


model = Seq2Seq()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
    model.emb.weight[PAD].zero_()
opt = torch.optim.Adam(model.parameters(), lr=0.02)
crit = nn.CrossEntropyLoss(ignore_index=PAD)
for step in range(150):
    src = rng.integers(2, V, size=(16, T))
    src[:8, -1] = PAD
    tgt = np.where(src == PAD, PAD, src)[:, ::-1].copy()
    tgt_in = np.concatenate([np.full((16, 1), BOS), tgt[:, :-1]], axis=1)
    src_t, tgt_t, tgt_in_t = (torch.from_numpy(a.astype(np.int64)) for a in (src, tgt, tgt_in))
    opt.zero_grad()
    logits = model(src_t, tgt_in_t)
    loss = crit(logits.reshape(-1, V), tgt_t.reshape(-1))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    print(f"LOSS {loss.item():.6f}")
