"""Fine-tuning: a pretrained model's state_dict saved to a buffer with torch.save and loaded
into a new model (load_state_dict), its feature layers frozen with requires_grad_(False), a
new head, an optimizer over filter(lambda p: p.requires_grad, ...), and a check that the
frozen weights did not move; weights copied from a seeded NumPy stream."""
import io

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(36)
x = rng.normal(size=(80, 5)).astype(np.float32)
y = (x[:, 0] * x[:, 1] > 0).astype(np.int64)


def make():
    return nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 2))


pretrained = make()
with torch.no_grad():
    for p in pretrained.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
buf = io.BytesIO()
torch.save(pretrained.state_dict(), buf)
buf.seek(0)
model = make()
model.load_state_dict(torch.load(buf))
for p in model[:4].parameters():
    p.requires_grad_(False)
model[4] = nn.Linear(32, 2)
with torch.no_grad():
    for p in model[4].parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
frozen = model[0].weight.clone()
opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1,
                      momentum=0.9)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)
for epoch in range(40):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(xt), yt)
    loss.backward()
    opt.step()
    print(f"LOSS {loss.item():.6f}")
assert torch.equal(model[0].weight, frozen) and model[0].weight.grad is None
