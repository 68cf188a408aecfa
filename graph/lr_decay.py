"""TF1's learning-rate schedules (`tf.train.piecewise_constant`, `polynomial_decay`,
`natural_exp_decay`, `inverse_time_decay`, `cosine_decay`): tensors of the global step, to
give an optimizer. The formulas are TF1's, written out in each docstring.

>>> from dualgrad import graph as tf
>>> step = tf.train.get_or_create_global_step()
>>> lr = tf.train.piecewise_constant(step, [100, 200], [0.1, 0.01, 0.001])
>>> with tf.Session() as s:
...     s.run(tf.global_variables_initializer())
...     float(s.run(lr)), float(s.run(lr, {step: 150})), float(s.run(lr, {step: 201}))
(0.1, 0.01, 0.001)
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad import ops

from .core import convert_to_tensor
from .math_ops import ceil, cos, exp, floor, maximum, minimum, where

__all__ = ["piecewise_constant", "polynomial_decay", "natural_exp_decay",
           "inverse_time_decay", "cosine_decay"]


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after the last boundary."""
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_constant: the length of values ({len(values)}) must be "
                         f"one more than the length of boundaries ({len(boundaries)})")
    x = convert_to_tensor(x)
    vals = [convert_to_tensor(v) for v in values]
    if len({v.dtype for v in vals}) != 1:
        raise ValueError(f"piecewise_constant: values must have elements all with the same "
                         f"dtype, got {[v.dtype.name for v in vals]}")
    out = vals[-1]
    for b, v in zip(reversed(boundaries), reversed(vals[:-1])):
        out = where(x <= _like(x, b, "boundaries"), v, out)
    return out


def _like(x, b, what):
    arr = np.asarray(b)
    if x.dtype.kind in "iu" and arr.dtype.kind == "f" and not float(arr).is_integer():
        raise TypeError(f"piecewise_constant: {what} {b!r} do not fit the step's dtype "
                        f"{x.dtype.name}")
    return arr.astype(x.dtype)


def _progress(global_step, decay_steps, staircase):
    p = ops.cast(global_step, np.float32) / float(decay_steps)
    return floor(p) if staircase else p


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - step / decay_steps) ** power + end, with step = min(step,
    decay_steps); cycle=True stretches decay_steps to decay_steps * ceil(step /
    decay_steps) instead (at least decay_steps)."""
    step = ops.cast(global_step, np.float32)
    steps = np.float32(decay_steps)
    if cycle:
        steps = steps * maximum(ceil(step / steps), np.float32(1.0))
    else:
        step = minimum(step, steps)
    frac = ops.pow(1.0 - step / steps, np.float32(power))
    return (learning_rate - end_learning_rate) * frac + end_learning_rate


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """lr * exp(-decay_rate * step / decay_steps) (the quotient floored with staircase)."""
    return learning_rate * exp(-float(decay_rate) * _progress(global_step, decay_steps,
                                                              staircase))


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """lr / (1 + decay_rate * step / decay_steps) (the quotient floored with staircase)."""
    p = _progress(global_step, decay_steps, staircase)
    return learning_rate / (1.0 + float(decay_rate) * p)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) +
    alpha)."""
    step = minimum(ops.cast(global_step, np.float32), np.float32(decay_steps))
    cosine = 0.5 * (1.0 + cos(np.float32(math.pi) * step / float(decay_steps)))
    return learning_rate * ((1.0 - alpha) * cosine + alpha)
