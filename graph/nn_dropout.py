"""tf.compat.v1.nn.dropout, in a module of its own below graph.nn and the RNN cells (whose
DropoutWrapper applies it).

>>> from dualgrad import graph
>>> graph.nn.dropout is graph.nn_dropout.dropout
True
"""
from __future__ import annotations

from dualgrad import ops
from dualgrad.ops.core import fmt_shape, located

from .core import Tensor, check_tf1_types
from .math_ops import named

__all__ = ["dropout"]


@named
def dropout(x, keep_prob=None, noise_shape=None, seed=None, rate=None):
    """tf.compat.v1.nn.dropout: keep each element with probability `keep_prob` (the second
    argument, as in TF1) and scale it by 1 / keep_prob; or drop with probability `rate=`.

    keep_prob / rate is a float or a scalar tensor (a placeholder fed 1.0 at evaluation is
    the TF1 idiom). `noise_shape` (1 where the mask is shared) broadcasts one draw.
    """
    check_tf1_types("dropout", x)
    if (rate is None) == (keep_prob is None):
        raise ValueError("dropout: pass exactly one of keep_prob (the second argument, as "
                         "in TF1) and rate=")
    if not isinstance(keep_prob if rate is None else rate, Tensor):
        p = float(rate) if rate is not None else 1.0 - float(keep_prob)
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout: rate must be in [0, 1) (keep_prob in (0, 1]), got "
                             f"{'rate' if rate is not None else 'keep_prob'}="
                             f"{rate if rate is not None else keep_prob}")
        if p == 0.0:
            return x
        keep = 1.0 - p
    else:
        keep = keep_prob if rate is None else 1.0 - rate
        if keep.ndim not in (0, None):
            raise located(f"dropout: keep_prob / rate must be a scalar, got "
                          f"{fmt_shape(keep.spec)}")
        keep = ops.reshape(keep, ())   # NOTE: a placeholder of unknown rank is a scalar here
    u = ops.rand_like(_noise_like(x, noise_shape), dtype=x.dtype)
    # NOTE: TF1's rule, floor(keep_prob + u) == 1 keeps: exactly keep_prob of the draws
    return ops.where(u + keep >= 1.0, x / keep, 0.0)


def _noise_like(x, noise_shape):
    """A tensor of shape `noise_shape` (dims equal to x's, or 1) for one draw per mask cell."""
    if noise_shape is None:
        return x
    ns = [None if d is None else int(d) for d in noise_shape]
    xs = x.shape
    if len(ns) != len(xs) or any(n not in (1, d) and d is not None for n, d in zip(ns, xs)):
        raise located(f"dropout: noise_shape {noise_shape} must have the rank of x "
                         f"{fmt_shape(xs)} and each dim equal to x's or 1")
    index = tuple(slice(0, 1) if n == 1 and d != 1 else slice(None) for n, d in zip(ns, xs))
    return ops.slice_(x, index=index)
