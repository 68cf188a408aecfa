"""word2vec's CBOW: the mean of a context window's nn.Embedding rows, a Linear over the
vocabulary, log_softmax and nn.NLLLoss, plain SGD over mini-batches of (context, centre)
pairs from a small synthetic corpus; the nearest neighbours by cosine similarity at the end;
weights from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(41)
V, D, W = 16, 8, 2
sentences = [np.arange(8), np.arange(8, 16)[::-1]]
corpus = np.concatenate([sentences[k] for k in rng.integers(0, 2, size=40)])
ctx = np.stack([np.concatenate([corpus[i - W:i], corpus[i + 1:i + W + 1]])
                for i in range(W, len(corpus) - W)])
centre = corpus[W:len(corpus) - W]


class CBOW(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(V, D)
        self.linear = nn.Linear(D, V)

    def forward(self, context):
        return F.log_softmax(self.linear(self.embeddings(context).mean(dim=1)), dim=1)


model = CBOW()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(p.shape)).astype(np.float32)))
loss_fn = nn.NLLLoss()
opt = torch.optim.SGD(model.parameters(), lr=1.0)
c, t = torch.from_numpy(ctx), torch.from_numpy(centre)
for epoch in range(30):
    for i in range(0, len(c) - 63, 64):
        model.zero_grad()
        loss = loss_fn(model(c[i:i + 64]), t[i:i + 64])
        loss.backward()
        opt.step()
        print(f"LOSS {loss.item():.6f}")
emb = F.normalize(model.embeddings.weight.detach(), dim=1)
near = (emb @ emb.t()).topk(3, dim=1).indices[:, 1:]
print("same half", (near // 8 == torch.arange(V)[:, None] // 8).float().mean().item())
