"""A convolutional autoencoder: Conv2d encoder, ConvTranspose2d decoder, Sigmoid output,
MSELoss, RMSprop, weights set by model.apply(init) with isinstance checks (the usual
initialisation idiom), values from a seeded NumPy stream."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(30)
imgs = np.zeros((32, 1, 8, 8), np.float32)
for i in range(32):
    r, c = rng.integers(0, 5, size=2)
    imgs[i, 0, r:r + 3, c:c + 3] = 1.0

model = nn.Sequential(
    nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(),
    nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU(),
    nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1), nn.ReLU(),
    nn.ConvTranspose2d(4, 1, 4, stride=2, padding=1), nn.Sigmoid())


def init(m):
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(rng.normal(scale=0.3, size=tuple(m.weight.shape))
                                            .astype(np.float32)))
            m.bias.zero_()


model.apply(init)
opt = torch.optim.RMSprop(model.parameters(), lr=0.01)
x = torch.from_numpy(imgs)
for step in range(120):
    opt.zero_grad()
    loss = nn.MSELoss()(model(x), x)
    loss.backward()
    opt.step()
    print(f"LOSS {loss.item():.6f}")
