"""Save and resume: train, torch.save the model's and the optimizer's state_dict, build a new
model and optimizer, load_state_dict both and go on; the resumed run must continue exactly."""
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(5)
x = torch.from_numpy(rng.normal(size=(64, 5)).astype(np.float32))
y = torch.from_numpy((rng.normal(size=(64, 1)) + x.numpy()[:, :1] * 2).astype(np.float32))
init = [rng.normal(scale=0.3, size=s).astype(np.float32) for s in ((8, 5), (8,), (1, 8), (1,))]


def build():
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
    with torch.no_grad():
        for p, v in zip(model.parameters(), init):
            p.copy_(torch.from_numpy(v))
    return model, torch.optim.Adam(model.parameters(), lr=0.02)


def train(model, opt, steps):
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


model, opt = build()
first = train(model, opt, 20)
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": 20}, path)
straight = train(model, opt, 20)
model2, opt2 = build()
ckpt = torch.load(path)
model2.load_state_dict(ckpt["model"])
opt2.load_state_dict(ckpt["optim"])
resumed = train(model2, opt2, 20)
for v in first + resumed:
    print(f"LOSS {v:.6f}")
if not np.allclose(straight, resumed, rtol=1e-6):
    sys.exit("resumed run differs from the uninterrupted one")
