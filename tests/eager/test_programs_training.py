"""Training programs as tutorials write them, run on dualgrad.eager and on torch from the
same weights: an MNIST-style CNN with a Dataset subclass and a DataLoader (BatchNorm,
dropout, Adam, StepLR, evaluation under inference_mode with argmax/eq/sum/item), an MLP
with ModuleList/ModuleDict, weight-decay parameter groups, every common optimizer and
scheduler and both gradient clippings, a VAE, and a DCGAN-style GAN step."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results, load, state

real_torch = pytest.importorskip("torch")


# -- an MNIST-style CNN ------------------------------------------------------------------------
def digits_net(torch):
    nn, F = torch.nn, torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 8, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.fc1 = nn.Linear(8 * 2 * 2, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            x = self.dropout1(F.relu(self.conv2(x)))
            x = F.relu(self.fc1(torch.flatten(x, 1)))
            return F.log_softmax(self.fc2(x), dim=1)
    return Net()


def digits_program(torch, weights, images, labels):
    class Digits(torch.utils.data.Dataset):
        def __init__(self, x, y, transform=None):
            self.x, self.y, self.transform = x, y, transform

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            img = torch.from_numpy(self.x[i]).float().unsqueeze(0)
            return (self.transform(img) if self.transform else img), int(self.y[i])

    model = digits_net(torch)
    load(torch, model, weights)
    model.dropout1.p = 0.0   # NOTE: the two libraries draw different masks
    loader = torch.utils.data.DataLoader(Digits(images, labels, lambda t: (t - 0.5) / 0.5),
                                         batch_size=16, shuffle=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    losses = []
    for _ in range(2):
        model.train()
        for data, target in loader:
            opt.zero_grad()
            loss = torch.nn.functional.nll_loss(model(data), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.inference_mode():
        for data, target in loader:
            output = model(data)
            test_loss += torch.nn.functional.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return {"losses": losses, "test_loss": test_loss, "correct": correct, **state(model)}


def test_digits_cnn_equals_torch():
    rng = np.random.default_rng(0)
    images, labels = rng.random((48, 8, 8)).astype(np.float32), rng.integers(0, 10, 48)
    real_torch.manual_seed(0)
    weights = state(digits_net(real_torch))
    assert_same_results(digits_program(dualgrad.eager, weights, images, labels),
                        digits_program(real_torch, weights, images, labels),
                        rtol=1e-4, atol=1e-5)


# -- optimizers, parameter groups, schedulers, clipping ----------------------------------------
def mlp(torch, sizes=(6, 12, 12, 3)):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])
            self.acts = nn.ModuleDict({"relu": nn.ReLU(), "lrelu": nn.LeakyReLU(0.1)})
            self.norms = nn.ModuleList(nn.BatchNorm1d(s) for s in sizes[1:-1])

        def forward(self, x):
            for i, layer in enumerate(self.layers[:-1]):
                x = self.norms[i](self.acts["lrelu"](layer(x)))
            return self.layers[-1](x)
    return MLP()


def _optimizer(torch, name, groups):
    optim, sched = torch.optim, torch.optim.lr_scheduler
    if name == "sgd":
        opt = optim.SGD(groups, lr=0.05, momentum=0.9, nesterov=True)
        return opt, sched.CosineAnnealingLR(opt, T_max=5, eta_min=1e-4)
    if name == "adamw":
        opt = optim.AdamW(groups, lr=1e-2)
        return opt, sched.LambdaLR(opt, lambda epoch: 0.95 ** epoch)
    if name == "rmsprop":
        opt = optim.RMSprop(groups, lr=1e-3, alpha=0.9, momentum=0.5, centered=True)
        return opt, sched.OneCycleLR(opt, max_lr=[0.01, 0.02], total_steps=12)
    if name == "adam":
        opt = optim.Adam(groups, lr=1e-2, betas=(0.8, 0.99), eps=1e-6)
        return opt, sched.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=0)
    opt = optim.Adagrad(groups, lr=1e-2)
    return opt, sched.MultiStepLR(opt, [2, 4], 0.1)


def optimizer_program(torch, weights, name, x, y):
    model = mlp(torch)
    load(torch, model, weights)
    model.double()   # NOTE: float64, so that adaptive steps do not amplify rounding noise
    x, y = torch.tensor(x).double(), torch.tensor(y)
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if n.endswith("bias") or "norms" in n else decay).append(p)
    opt, sched = _optimizer(torch, name, [{"params": decay, "weight_decay": 1e-2},
                                          {"params": no_decay, "weight_decay": 0.0, "lr": 5e-3}])
    criterion = torch.nn.CrossEntropyLoss()
    losses, lrs = [], []
    for step in range(12):
        model.train()
        batch = slice(step % 4 * 8, (step % 4 + 1) * 8)
        loss = criterion(model(x[batch]), y[batch])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1)
        opt.step()
        if name == "adam":
            sched.step(loss.item() if step < 4 else 10.0)
        else:
            sched.step()
        losses.append(loss.item())
        lrs.append([g["lr"] for g in opt.param_groups])
    model.eval()
    with torch.no_grad():
        evaluated = model(x)
    return {"losses": losses, "lrs": lrs, "eval": evaluated, **state(model)}


@pytest.mark.parametrize("name", ["sgd", "adamw", "rmsprop", "adam", "adagrad"])
def test_optimizers_and_schedulers_equal_torch(name):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((32, 6)).astype(np.float32), rng.integers(0, 3, 32)
    real_torch.manual_seed(0)
    weights = state(mlp(real_torch))
    assert_same_results(optimizer_program(dualgrad.eager, weights, name, x, y),
                        optimizer_program(real_torch, weights, name, x, y), rtol=1e-7, atol=1e-9)


# -- a VAE -------------------------------------------------------------------------------------
def vae(torch):
    nn, F = torch.nn, torch.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc21, self.fc22 = nn.Linear(12, 8), nn.Linear(8, 2), nn.Linear(8, 2)
            self.fc3, self.fc4 = nn.Linear(2, 8), nn.Linear(8, 12)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar, eps):
            return mu + eps * torch.exp(0.5 * logvar)

        def decode(self, z):
            return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

        def forward(self, x, eps):
            mu, logvar = self.encode(x.view(-1, 12))
            return self.decode(self.reparameterize(mu, logvar, eps)), mu, logvar
    return VAE()


def vae_program(torch, weights, x, eps):
    F = torch.nn.functional
    model = vae(torch)
    load(torch, model, weights)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for i in range(4):
        data = torch.from_numpy(x[i % 2])
        opt.zero_grad()
        recon, mu, logvar = model(data, torch.from_numpy(eps[i]))
        bce = F.binary_cross_entropy(recon, data.view(-1, 12), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        sample = model.decode(torch.from_numpy(eps[0]))
    return {"losses": losses, "sample": sample, **state(model)}


def test_vae_equals_torch():
    rng = np.random.default_rng(0)
    x = (rng.random((2, 6, 12)) > 0.5).astype(np.float32)
    eps = rng.standard_normal((4, 6, 2)).astype(np.float32)
    real_torch.manual_seed(0)
    weights = state(vae(real_torch))
    assert_same_results(vae_program(dualgrad.eager, weights, x, eps),
                        vae_program(real_torch, weights, x, eps), rtol=1e-4, atol=1e-5)


# -- a GAN step --------------------------------------------------------------------------------
def gan(torch):
    nn = torch.nn
    generator = nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2, inplace=True), nn.Linear(8, 4),
                              nn.Tanh())
    discriminator = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2, inplace=True),
                                  nn.Linear(8, 1), nn.Sigmoid())
    return generator, discriminator


def gan_program(torch, weights, real_x, noise):
    G, D = gan(torch)
    load(torch, G, weights[0])
    load(torch, D, weights[1])
    criterion = torch.nn.BCELoss()
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    out = []
    for i in range(4):
        D.zero_grad()
        x = torch.from_numpy(real_x[i])
        label = torch.full((x.size(0),), 1.0, dtype=torch.float)
        err_real = criterion(D(x).view(-1), label)
        err_real.backward()
        fake = G(torch.from_numpy(noise[i]))
        label.fill_(0.0)
        err_fake = criterion(D(fake.detach()).view(-1), label)
        err_fake.backward()
        opt_d.step()
        for p in D.parameters():
            p.requires_grad_(False)
        G.zero_grad()
        label.fill_(1.0)
        output = D(fake).view(-1)
        err_g = criterion(output, label)
        err_g.backward()
        opt_g.step()
        for p in D.parameters():
            p.requires_grad_(True)
        out.append([(err_real + err_fake).item(), err_g.item(), output.mean().item()])
    d_grads = {f"D.grad{i}": p.grad for i, p in enumerate(D.parameters())}
    return {"out": out, **d_grads, **state(G), **{"D" + k: v for k, v in state(D).items()}}


def test_gan_step_equals_torch():
    rng = np.random.default_rng(0)
    real_x = rng.standard_normal((4, 5, 4)).astype(np.float32)
    noise = rng.standard_normal((4, 5, 3)).astype(np.float32)
    real_torch.manual_seed(0)
    weights = [state(m) for m in gan(real_torch)]
    assert_same_results(gan_program(dualgrad.eager, weights, real_x, noise),
                        gan_program(real_torch, weights, real_x, noise), rtol=1e-4, atol=1e-5)
