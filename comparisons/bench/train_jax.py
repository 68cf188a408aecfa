"""The realistic tier's models in JAX, one jitted training step each (outside reference).

Forward passes read the shared PyTorch-layout weights (train_models.initial_weights); the
update is torch.optim.Adam's formula, so a jitted step does the same work as a dualgrad one.

>>> from dualgrad.comparisons.bench import train_models as M
>>> step = make_step("mlp", M.TINY["mlp"])
>>> step() > 0
True
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from . import train_models as M


def _linear(p, name, x):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def _layer_norm(p, name, x):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * p[f"{name}.weight"] + p[f"{name}.bias"]


def mlp(p, x, size):
    h = jax.nn.relu(_linear(p, "fc1", x))
    return _linear(p, "fc3", jax.nn.relu(_linear(p, "fc2", h)))


def cnn(p, x, size):
    for i in range(len(size["chans"])):
        y = lax.conv_general_dilated(x, p[f"convs.{i}.weight"], (1, 1), [(1, 1), (1, 1)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        y = jax.nn.relu(y + p[f"convs.{i}.bias"][None, :, None, None])
        n, c, hh, ww = y.shape
        x = y.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    return _linear(p, "fc", x.reshape(x.shape[0], -1))


def _block(p, b, x, heads):
    n, t, d = x.shape
    q, k, v = jnp.split(_linear(p, f"{b}.qkv", _layer_norm(p, f"{b}.ln1", x)), 3, axis=-1)
    q, k, v = (z.reshape(n, t, heads, d // heads).transpose(0, 2, 1, 3) for z in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -jnp.inf)
    y = (jax.nn.softmax(s, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
    x = x + _linear(p, f"{b}.proj", y)
    u = jax.nn.gelu(_linear(p, f"{b}.fc", _layer_norm(p, f"{b}.ln2", x)), approximate=True)
    return x + _linear(p, f"{b}.out", u)


def gpt(p, idx, size):
    h = p["tok.weight"][idx] + p["pos.weight"][: idx.shape[1]]
    for i in range(size["blocks"]):
        h = _block(p, f"blocks.{i}", h, size["heads"])
    return _linear(p, "head", _layer_norm(p, "ln_f", h))


def lstm(p, x, size):
    n, hid = x.shape[0], size["hidden"]
    wi, wh = p["rnn.weight_ih_l0"], p["rnn.weight_hh_l0"]
    xs = x @ wi.T + p["rnn.bias_ih_l0"] + p["rnn.bias_hh_l0"]       # (N, T, 4H)

    def cell(carry, z):
        h, c = carry
        i, f, g, o = jnp.split(z + h @ wh.T, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), None
    zero = jnp.zeros((n, hid), x.dtype)
    (h, _), _ = lax.scan(cell, (zero, zero), xs.transpose(1, 0, 2))
    return _linear(p, "head", h)


FORWARD = {"mlp": mlp, "cnn": cnn, "gpt": gpt, "lstm": lstm}


def _adam(p, g, m, v, t, lr=M.LR, b1=0.9, b2=0.999, eps=1e-8):
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    p = jax.tree.map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), p, m, v)
    return p, m, v


def jitted_step(name, size):
    """jax.jit of (params, m, v, t, x, y) -> (params, m, v, loss)."""
    fwd = FORWARD[name]

    def loss_fn(p, x, y):
        logits = fwd(p, x, size)
        logits = logits.reshape(-1, logits.shape[-1])
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()

    @jax.jit
    def step(p, m, v, t, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        p, m, v = _adam(p, g, m, v, t)
        return p, m, v, loss
    return step


def make_step(name, size, weights=None):
    """A zero-argument jitted training step on the shared batch; returns the loss."""
    weights = M.initial_weights(name, size) if weights is None else weights
    p = {k: jnp.asarray(a) for k, a in weights.items()}
    zeros = {k: jnp.zeros_like(a) for k, a in p.items()}
    x, y = (jnp.asarray(a) for a in M.batch(name, size))
    step, state = jitted_step(name, size), [p, zeros, dict(zeros), 0]

    def run():
        state[3] += 1
        state[0], state[1], state[2], loss = step(*state[:3], float(state[3]), x, y)
        return float(loss)
    return run


def memory_bytes(name, size) -> int | None:
    """XLA's own account of one step's buffers: temporaries + outputs (its buffer assignment)."""
    weights = M.initial_weights(name, size)
    p = {k: jnp.asarray(a) for k, a in weights.items()}
    x, y = (jnp.asarray(a) for a in M.batch(name, size))
    compiled = jitted_step(name, size).lower(p, p, p, 1.0, x, y).compile()
    stats = compiled.memory_analysis()
    return None if stats is None else int(stats.temp_size_in_bytes + stats.output_size_in_bytes)
