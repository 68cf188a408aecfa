"""Optimiser update rules, written once with op calls and operators.

The eager optimisers call them on NumPy arrays (the kernels run at once) and copy the result
into the parameters; the graph optimisers call them on graph tensors and assign the result to
Variables. The formulas follow torch.optim (SGD: momentum buffer, no dampening by default;
Adam: bias-corrected moments, L2 weight decay added to the gradient; AdamW: decoupled weight
decay; RMSprop, Adagrad and Adadelta with torch's eps placement and defaults; Adamax, NAdam,
RAdam, ASGD and Rprop as torch.optim computes them, their running scalars (NAdam's momentum
product, ASGD's eta and mu) rounded to float32 as torch keeps them). `running_average` is batch
norm's running-statistics update, shared by eager's nn.BatchNorm and
graph.layers.batch_normalization.
"""
from __future__ import annotations

import numpy as np

from .composite import clamp
from .elementwise import abs as abs_, cast, maximum, minimum, sign, sqrt, where
from .reduce import sum as sum_


def sgd_update(p, g, buf, lr, momentum=0.0, weight_decay=0.0, nesterov=False, first=False,
               dampening=0.0):
    """One SGD step: returns (new_p, new_buf). `buf` is ignored when momentum == 0.

    `first` marks the first step, where torch sets the buffer to the gradient itself.
    """
    if weight_decay:
        g = g + weight_decay * p
    if not momentum:
        return p - lr * g, buf
    buf = g if first else momentum * buf + (g if not dampening else (1.0 - dampening) * g)
    step = g + momentum * buf if nesterov else buf
    return p - lr * step, buf


def adam_update(p, g, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                vmax=None):
    """One Adam step at step number t (1-based): returns (new_p, new_m, new_v). With `vmax`
    (AMSGrad: the largest second moment so far) the step divides by the new maximum, which
    is returned fourth."""
    if weight_decay:
        g = g + weight_decay * p
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    m_hat = m / (1.0 - beta1 ** t)
    if vmax is None:
        return p - lr * m_hat / (sqrt(v / (1.0 - beta2 ** t)) + eps), m, v
    vmax = maximum(vmax, v)
    return p - lr * m_hat / (sqrt(vmax / (1.0 - beta2 ** t)) + eps), m, v, vmax


def adamw_update(p, g, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2,
                 vmax=None):
    """One AdamW step (torch.optim.AdamW): the parameter decays by lr * weight_decay first,
    then takes the Adam step on the plain gradient. Returns adam_update's."""
    return adam_update(p * (1.0 - lr * weight_decay), g, m, v, t, lr, beta1, beta2, eps,
                       vmax=vmax)


def rmsprop_update(p, g, square_avg, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0,
                   momentum=0.0, buf=None, centered=False, grad_avg=None):
    """One RMSprop step (torch.optim.RMSprop: eps added after the square root; `centered`
    subtracts the squared running mean of g). Returns (new_p, square_avg, buf, grad_avg)."""
    if weight_decay:
        g = g + weight_decay * p
    square_avg = alpha * square_avg + (1.0 - alpha) * (g * g)
    if centered:
        grad_avg = alpha * grad_avg + (1.0 - alpha) * g
        avg = sqrt(square_avg - grad_avg * grad_avg) + eps
    else:
        avg = sqrt(square_avg) + eps
    if momentum:
        buf = momentum * buf + g / avg
        return p - lr * buf, square_avg, buf, grad_avg
    return p - lr * (g / avg), square_avg, buf, grad_avg


def adagrad_update(p, g, total, step, lr=1e-2, lr_decay=0.0, weight_decay=0.0, eps=1e-10):
    """One Adagrad step at step number `step` (1-based): returns (new_p, new_sum)."""
    if weight_decay:
        g = g + weight_decay * p
    clr = lr / (1.0 + (step - 1) * lr_decay)
    total = total + g * g
    return p - clr * (g / (sqrt(total) + eps)), total


def adadelta_update(p, g, square_avg, acc_delta, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
    """One Adadelta step (torch.optim.Adadelta): returns (new_p, square_avg, acc_delta)."""
    if weight_decay:
        g = g + weight_decay * p
    square_avg = rho * square_avg + (1.0 - rho) * (g * g)
    delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
    acc_delta = rho * acc_delta + (1.0 - rho) * (delta * delta)
    return p - lr * delta, square_avg, acc_delta


def _decayed(p, g, lr, weight_decay, decoupled):
    """(p, g) after weight decay: L2 added to the gradient, or decoupled (p shrunk first)."""
    if not weight_decay:
        return p, g
    return (p * (1.0 - lr * weight_decay), g) if decoupled else (p, g + weight_decay * p)


def adamax_update(p, g, m, u, t, lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """One Adamax step (torch.optim.Adamax: the infinity norm u = max(beta2 u, |g| + eps)):
    returns (new_p, m, u)."""
    p, g = _decayed(p, g, lr, weight_decay, False)
    m = beta1 * m + (1.0 - beta1) * g
    u = maximum(beta2 * u, abs_(g) + eps)
    return p - (lr / (1.0 - beta1 ** t)) * (m / u), m, u


def nadam_update(p, g, m, v, t, mu_product, lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 weight_decay=0.0, momentum_decay=4e-3, decoupled=False):
    """One NAdam step (torch.optim.NAdam, Dozat's momentum schedule mu_t): returns (new_p, m,
    v, mu_product), the product of the mu's so far kept as a float32 number, as torch's."""
    p, g = _decayed(p, g, lr, weight_decay, decoupled)
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    mu_product = float(np.float32(mu_product) * np.float32(mu))
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    denom = sqrt(v / (1.0 - beta2 ** t)) + eps
    p = p + (-lr * (1.0 - mu) / (1.0 - mu_product)) * (g / denom)
    p = p + (-lr * mu_next / (1.0 - mu_product * mu_next)) * (m / denom)
    return p, m, v, mu_product


def radam_update(p, g, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                 decoupled=False):
    """One RAdam step (torch.optim.RAdam: the variance rectification once rho_t > 5, plain
    momentum SGD before): returns (new_p, m, v)."""
    p, g = _decayed(p, g, lr, weight_decay, decoupled)
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    correction2 = 1.0 - beta2 ** t
    m_hat = m / (1.0 - beta1 ** t)
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * t * (beta2 ** t) / correction2
    if rho_t <= 5.0:
        return p - m_hat * lr, m, v
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    return p - m_hat * lr * (correction2 ** 0.5 / (sqrt(v) + eps)) * rect, m, v


def asgd_update(p, g, ax, t, eta, mu, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6,
                weight_decay=0.0):
    """One averaged-SGD step (torch.optim.ASGD) at step t with the step size eta and averaging
    weight mu of the step before: returns (new_p, ax, eta, mu), eta and mu for the next step
    rounded to float32 as torch keeps them."""
    p, g = _decayed(p, g, lr, weight_decay, False)
    p = p * (1.0 - lambd * eta) - eta * g
    ax = p if mu == 1 else ax + (p - ax) * mu
    eta = float(np.float32(lr / ((1 + lambd * lr * t) ** alpha)))
    mu = float(np.float32(1 / max(1, t - t0)))
    return p, ax, eta, mu


def rprop_update(p, g, prev, step_size, etaminus=0.5, etaplus=1.2, step_min=1e-6, step_max=50.0):
    """One Rprop step (torch.optim.Rprop): each element's step size grows by etaplus while its
    gradient keeps its sign, shrinks by etaminus when it flips (and that gradient is dropped),
    within [step_min, step_max]; the parameter moves by the step size against the gradient's
    sign. Returns (new_p, prev, step_size)."""
    dt = step_size.dtype
    s = sign(g * prev)
    factor = cast(where(s > 0, etaplus, where(s < 0, etaminus, 1.0)), dt)
    step_size = clamp(step_size * factor, step_min, step_max)
    g = where(factor == cast(etaminus, dt), cast(0.0, dt), g)
    return p - sign(g) * step_size, g, step_size


def running_average(running, batch, momentum):
    """(1 - momentum) * running + momentum * batch: torch's BatchNorm momentum convention
    (TF's moving average with decay d is momentum = 1 - d)."""
    return running * (1.0 - momentum) + batch * momentum


def adam_update_tf(p, g, m, v, lr_t, beta1=0.9, beta2=0.999, eps=1e-8):
    """TF1's Adam step, with lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t) given: returns
    (new_p, new_m, new_v). It equals `adam_update` except where eps sits (TF1 adds it to
    sqrt(v) before the bias correction), which matters only when sqrt(v) is close to eps."""
    m = m * beta1 + g * (1.0 - beta1)
    v = v * beta2 + (g * g) * (1.0 - beta2)
    return p - lr_t * m / (sqrt(v) + eps), m, v


def ftrl_update_tf(p, g, accum, linear, lr, lr_power=-0.5, l1=0.0, l2=0.0, l2_shrinkage=0.0):
    """TF1's FTRL-Proximal step (ApplyFtrlV2): accum' = accum + g^2; linear += g' -
    (accum'^-lr_power - accum^-lr_power) / lr * p, g' = g + 2 l2_shrinkage p; the new p is
    (clip(linear, -l1, l1) - linear) / (accum'^-lr_power / lr + 2 l2), zero where
    |linear| <= l1. Returns (new_p, accum', linear)."""
    new_accum = accum + g * g
    if lr_power == -0.5:
        now, before = sqrt(new_accum), sqrt(accum)
    else:
        now, before = new_accum ** -lr_power, accum ** -lr_power
    shrunk = g + (2.0 * l2_shrinkage) * p if l2_shrinkage else g
    linear = linear + shrunk - (now - before) / lr * p
    quadratic = now / lr + 2.0 * l2 if l2 else now / lr
    clipped = maximum(minimum(linear, l1), -l1) if l1 else 0.0 * linear
    return (clipped - linear) / quadratic, new_accum, linear


def rmsprop_update_tf(p, g, ms, mom, lr, decay=0.9, momentum=0.0, eps=1e-10, mg=None):
    """TF1's RMSProp step: ms = decay ms + (1 - decay) g^2 (TF1 starts ms at ones);
    mom = momentum mom + lr g / sqrt(ms + eps) — eps inside the root, unlike torch's; with
    `mg` (centered) the running mean's square is subtracted under the root. Returns
    (new_p, ms, mom, mg)."""
    ms = ms * decay + (g * g) * (1.0 - decay)
    denom = ms + eps
    if mg is not None:
        mg = mg * decay + g * (1.0 - decay)
        denom = denom - mg * mg
    mom = mom * momentum + lr * g / sqrt(denom)
    return p - mom, ms, mom, mg


def lbfgs_direction(g, old_dirs, old_stps, ro, h_diag):
    """L-BFGS's two-loop recursion: the search direction -H g from the stored curvature pairs
    (y_i in old_dirs, s_i in old_stps, ro_i = 1 / y_i.s_i) and the initial scaling h_diag."""
    q = -g
    al = [None] * len(old_dirs)
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = sum_(old_stps[i] * q) * ro[i]
        q = q - al[i] * old_dirs[i]
    r = q * h_diag
    for i in range(len(old_dirs)):
        be_i = sum_(old_dirs[i] * r) * ro[i]
        r = r + (al[i] - be_i) * old_stps[i]
    return r
