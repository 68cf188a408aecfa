"""Optimiser update rules, written once with op calls and operators.

The eager optimisers call them on NumPy arrays (the kernels run at once) and copy the result
into the parameters; the graph optimisers call them on graph tensors and assign the result to
Variables. The formulas follow torch.optim (SGD: momentum buffer, no dampening by default;
Adam: bias-corrected moments, L2 weight decay added to the gradient; AdamW: decoupled weight
decay). `running_average` is batch norm's running-statistics update, shared by eager's
nn.BatchNorm and graph.layers.batch_normalization.
"""
from __future__ import annotations

from .elementwise import sqrt


def sgd_update(p, g, buf, lr, momentum=0.0, weight_decay=0.0, nesterov=False, first=False):
    """One SGD step: returns (new_p, new_buf). `buf` is ignored when momentum == 0.

    `first` marks the first step, where torch sets the buffer to the gradient itself.
    """
    if weight_decay:
        g = g + weight_decay * p
    if not momentum:
        return p - lr * g, buf
    buf = g if first else momentum * buf + g
    step = g + momentum * buf if nesterov else buf
    return p - lr * step, buf


def adam_update(p, g, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """One Adam step at step number t (1-based): returns (new_p, new_m, new_v)."""
    if weight_decay:
        g = g + weight_decay * p
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    m_hat = m / (1.0 - beta1 ** t)
    v_hat = v / (1.0 - beta2 ** t)
    return p - lr * m_hat / (sqrt(v_hat) + eps), m, v


def adamw_update(p, g, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2):
    """One AdamW step (torch.optim.AdamW): the parameter decays by lr * weight_decay first,
    then takes the Adam step on the plain gradient. Returns (new_p, new_m, new_v)."""
    return adam_update(p * (1.0 - lr * weight_decay), g, m, v, t, lr, beta1, beta2, eps)


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
