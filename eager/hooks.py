"""Tensor.register_hook: call hook(grad) when the tensor's gradient is computed; a returned
tensor replaces the gradient, as in torch.

A leaf's hooks run on each backward()'s gradient before it is accumulated into .grad. A
non-leaf tensor's tape entry becomes an identity op on its old self whose gradient rule runs
the hooks: the walk reaches it once every user's gradient has been summed, so the hooks see
the tensor's whole gradient and what they return flows on to the tensors it was made from.

>>> from dualgrad import eager
>>> x = eager.ones(2, requires_grad=True)
>>> y = x * 3
>>> _ = y.register_hook(lambda g: g * 10)
>>> y.sum().backward()
>>> x.grad.tolist()
[30.0, 30.0]
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.core import Op

LEAF_HOOKS = {}   # id(leaf) -> (weakref to it, [hook(grad)])


def _run(hooks, g):
    for hook in list(hooks):
        out = hook(g)
        if out is not None:
            if tuple(out.shape) != tuple(g.shape):
                raise RuntimeError(f"hook returned a gradient of shape {tuple(out.shape)} for "
                                   f"a tensor of shape {tuple(g.shape)}")
            g = out
    return g


def _hook_vjp(g, x, hooks, out=None, **kw):
    return (_run(hooks, g),)


HOOK = Op("hook", lambda x, **_: x, lambda x, **_: np.asarray(x), _hook_vjp)


class RemovableHandle:
    """What register_hook and register_post_accumulate_grad_hook return: .remove()
    unregisters the hook."""
    __slots__ = ("hooks", "hook")

    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def leaf_hooked(t, g):
    """g after t's leaf hooks (g itself when it has none)."""
    entry = LEAF_HOOKS.get(id(t))
    if entry is None or entry[0]() is not t:
        return g
    return _run(entry[1], g)
