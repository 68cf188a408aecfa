"""torch.distributed.optim: DistributedOptimizer, which steps parameters where they live.

    opt = DistributedOptimizer(optim.SGD, param_rrefs, lr=0.05)
    with dist_autograd.context() as context_id:
        ...
        dist_autograd.backward(context_id, [loss])
        opt.step(context_id)

Each owner of a parameter RRef gets a local optimizer (`optimizer_class(params, *args,
**kwargs)`, made there through rpc.remote); step(context_id) has every owner set its
parameters' gradients from the context (dist_autograd.get_gradients) and step, all at once.
"""
from __future__ import annotations

import threading

from . import rpc
from .rpc import dist_get_gradients
from ..futures import wait_all

__all__ = ["DistributedOptimizer"]


class DistributedOptimizer:
    """An optimizer over parameters on several workers, given as RRefs to them."""

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        by_owner = {}
        for r in params_rref:
            by_owner.setdefault(r.owner(), []).append(r)
        self.remote_optimizers = [rpc.remote(owner, _LocalOptimizer,
                                             args=(optimizer_class, refs, args, kwargs))
                                  for owner, refs in by_owner.items()]

    def step(self, context_id):
        """One step on every owner, with the gradients of context `context_id`."""
        wait_all([rpc.rpc_async(r.owner(), _step_local, args=(r, context_id))
                  for r in self.remote_optimizers])


class _LocalOptimizer:
    """The optimizer on one owner, over its parameters (a lock: steps of several
    DistributedOptimizers' contexts may arrive together, as torch's)."""

    def __init__(self, optimizer_class, refs, args, kwargs):
        self.params = [r.local_value() for r in refs]
        self.optim = optimizer_class(self.params, *args, **kwargs)
        self.lock = threading.Lock()

    def step(self, context_id):
        grads = dist_get_gradients(context_id)
        with self.lock:
            before = [p.grad for p in self.params]
            for p in self.params:
                p.grad = grads.get(p)
            try:
                self.optim.step()
            finally:                # NOTE: as torch's, .grad is left as it was
                for p, g in zip(self.params, before):
                    p.grad = g


def _step_local(opt_rref, context_id):
    opt_rref.local_value().step(context_id)
