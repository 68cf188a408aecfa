"""Outside reference: each benchmark workload written in JAX and compiled with `jax.jit`.

Same models, same initial weights (the eager model's state_dict, torch layout), same
optimiser formulas as dualgrad (SGD with momentum, Adam as torch.optim), so a jitted step
is a fair yardstick for a dualgrad step. `make_step(name, weights)` returns
`(step, state)` where `step(state, *batch) -> (state, loss)` is jitted.

>>> import numpy as np
>>> from dualgrad.comparisons.refs import jax_models
>>> f = jax_models.gelu_fn()
>>> float(f(np.float32(1.0)))    # doctest: +ELLIPSIS
0.841...
"""
from __future__ import annotations

import math

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

GELU_C = math.sqrt(2.0 / math.pi)


# -- micro-benchmarks --------------------------------------------------------------------------
def gelu_fn():
    @jax.jit
    def gelu(x):
        return 0.5 * x * (1.0 + jnp.tanh(GELU_C * (x + 0.044715 * (x * x * x))))
    return gelu


def layernorm_residual_fn():
    @jax.jit
    def ln_res(x, r, w, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        v = jnp.mean(xc * xc, axis=-1, keepdims=True)
        return xc / jnp.sqrt(v + 1e-5) * w + b + r
    return ln_res


# -- models (forward from torch-layout weights) ------------------------------------------------
def _linear(p, name, x):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def mlp_forward(p, x):
    return _linear(p, "fc2", jax.nn.relu(_linear(p, "fc1", x)))


def _conv(p, name, x):
    y = lax.conv_general_dilated(x, p[f"{name}.weight"], (1, 1), [(1, 1), (1, 1)],
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + p[f"{name}.bias"][None, :, None, None]


def cnn_forward(p, x):
    h = jax.nn.relu(_conv(p, "conv1", x))
    n, c, hh, ww = h.shape
    h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    h = jax.nn.relu(_conv(p, "conv2", h))
    return _linear(p, "fc", h.reshape(n, -1))


def rnn_forward(p, x, mask):
    n = x.shape[0]
    hid = p["cell.weight_hh"].shape[1]

    def step(carry, inputs):          # NOTE: lax.scan, not a Python loop: compiles faster
        h, c = carry
        x_t, m_t = inputs
        z = (x_t @ p["cell.weight_ih"].T + p["cell.bias_ih"]
             + h @ p["cell.weight_hh"].T + p["cell.bias_hh"])
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h2 = jax.nn.sigmoid(o) * jnp.tanh(c2)
        going = m_t[:, None] > 0
        return (jnp.where(going, h2, h), jnp.where(going, c2, c)), None

    zeros = jnp.zeros((n, hid), x.dtype)
    (h, _), _ = lax.scan(step, (zeros, zeros), (jnp.swapaxes(x, 0, 1), mask.T))
    return _linear(p, "head", h)


def _layer_norm(p, name, x):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc / jnp.sqrt(v + 1e-5) * p[f"{name}.weight"] + p[f"{name}.bias"]


def transformer_forward(p, x, mask, heads=4):
    n, t, _ = x.shape
    h = _linear(p, "embed", x) + p["pos"][:t]
    d = h.shape[-1]
    dh = d // heads
    qkv = _linear(p, "attn.qkv", _layer_norm(p, "ln1", h))
    qkv = qkv.reshape(n, t, 3, heads, dh).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    s = q @ jnp.swapaxes(k, -1, -2) * (1.0 / math.sqrt(dh))
    s = jnp.where(mask.reshape(n, 1, 1, t) > 0, s, -1e9)
    a = jax.nn.softmax(s, axis=-1)
    y = (a @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
    h = h + _linear(p, "attn.out", y)
    u = _linear(p, "ff1", _layer_norm(p, "ln2", h))
    u = 0.5 * u * (1.0 + jnp.tanh(GELU_C * (u + 0.044715 * (u * u * u))))
    h = h + _linear(p, "ff2", u)
    m = mask[:, :, None]
    pooled = (h * m).sum(1) / m.sum(1)
    return _linear(p, "head", _layer_norm(p, "ln_out", pooled))


def _xent(logits, y):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))


# -- optimisers (torch.optim's formulas, as ops/updates.py) ------------------------------------
def _sgd(lr, momentum):
    def init(p):
        return {"buf": jax.tree_util.tree_map(jnp.zeros_like, p), "t": jnp.zeros((), jnp.int32)}

    def update(p, g, s):
        first = s["t"] == 0
        buf = jax.tree_util.tree_map(lambda b, gg: jnp.where(first, gg, momentum * b + gg),
                                     s["buf"], g)
        p = jax.tree_util.tree_map(lambda w, b: w - lr * b, p, buf)
        return p, {"buf": buf, "t": s["t"] + 1}
    return init, update


def _adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def init(p):
        z = jax.tree_util.tree_map(jnp.zeros_like, p)
        return {"m": z, "v": z, "t": jnp.zeros((), jnp.float32)}

    def update(p, g, s):
        t = s["t"] + 1
        m = jax.tree_util.tree_map(lambda a, gg: b1 * a + (1 - b1) * gg, s["m"], g)
        v = jax.tree_util.tree_map(lambda a, gg: b2 * a + (1 - b2) * gg * gg, s["v"], g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree_util.tree_map(lambda w, mm, vv: w - lr * (mm / c1) / (jnp.sqrt(vv / c2)
                                                                          + eps), p, m, v)
        return p, {"m": m, "v": v, "t": t}
    return init, update


# name -> (forward, which batch arrays it takes, optimiser)
def _spec(name):
    from dualgrad.comparisons.models import load
    hp = load(name, "eager")
    if name == "mlp":
        return mlp_forward, lambda x, y: (x,), _sgd(hp.LR, hp.MOMENTUM)
    if name == "cnn":
        return cnn_forward, lambda x, y: (x,), _sgd(hp.LR, hp.MOMENTUM)
    if name == "rnn":
        return rnn_forward, lambda x, lengths, mask, y: (x, mask), _sgd(hp.LR, hp.MOMENTUM)
    if name == "transformer":
        return transformer_forward, lambda x, mask, y: (x, mask), _adam(hp.LR)
    raise KeyError(name)


def _jitted(name, weights):
    forward, inputs, (opt_init, opt_update) = _spec(name)
    params = {k: jnp.asarray(v) for k, v in weights.items()}

    def loss_fn(p, args, y):
        return _xent(forward(p, *args), y)

    @jax.jit
    def _step(p, s, args, y):
        loss, g = jax.value_and_grad(loss_fn)(p, args, y)
        p, s = opt_update(p, g, s)
        return p, s, loss
    return _step, inputs, (params, opt_init(params))


def make_step(name, weights):
    """(step, state): `step(state, *batch) -> (state, loss)`, jitted; batch as the task's."""
    _step, inputs, state = _jitted(name, weights)

    def step(state, *batch):
        p, s = state
        args = tuple(jnp.asarray(a) for a in inputs(*batch))
        p, s, loss = _step(p, s, args, jnp.asarray(batch[-1]))
        return (p, s), loss

    return step, state


def step_flops(name, weights, batch):
    """Floating-point operations of one training step, as XLA's cost analysis counts them."""
    _step, inputs, (p, s) = _jitted(name, weights)
    args = tuple(jnp.asarray(a) for a in inputs(*batch))
    cost = _step.lower(p, s, args, jnp.asarray(batch[-1])).compile().cost_analysis()
    if isinstance(cost, (list, tuple)):   # NOTE: older jax returns one dict per device
        cost = cost[0]
    return float(cost["flops"])


def predict(name, state, *inputs):
    forward, _, _ = _spec(name)
    args = tuple(jnp.asarray(a) for a in inputs)
    if name == "rnn":
        args = (args[0], args[2])   # x, mask
    return np.asarray(forward(state[0], *args))
