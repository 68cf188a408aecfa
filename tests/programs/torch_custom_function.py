"""A custom autograd.Function (a clipped ReLU whose backward passes the gradient only inside
the clip range, with ctx.save_for_backward) used inside an nn.Module, trained with SGD."""
import numpy as np
import torch
import torch.nn as nn


class ClippedReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, top):
        ctx.save_for_backward(x)
        ctx.top = top
        return x.clamp(min=0.0, max=top)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inside = ((x > 0) & (x < ctx.top)).to(grad.dtype)
        return grad * inside, None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(3, 12), nn.Linear(12, 1)

    def forward(self, x):
        return self.l2(ClippedReLU.apply(self.l1(x), 4.0))


rng = np.random.default_rng(3)
x = torch.from_numpy(rng.uniform(-1, 1, size=(128, 3)).astype(np.float32))
y = (x ** 2).sum(dim=1, keepdim=True)
net = Net()
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.from_numpy(rng.normal(scale=0.5, size=tuple(p.shape)).astype(np.float32)))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for step in range(200):
    opt.zero_grad()
    loss = nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
    print(f"LOSS {loss.item():.6f}")
