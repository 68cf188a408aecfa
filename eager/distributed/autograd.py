"""torch.distributed.autograd: backward across RPCs (see docs/distributed.md).

    with dist_autograd.context() as context_id:
        loss = rpc.rpc_sync("worker1", forward_part, args=(x,)).sum()
        dist_autograd.backward(context_id, [loss])
        grads = dist_autograd.get_gradients(context_id)      # this worker's leaves

As torch's FAST mode: each RPC in a context records the tensors it sends and receives that
require grad; backward runs this worker's part of the graph, sends the gradients of tensors
that came from another worker back to it, which carries the backward on from what it sent,
and so on. Gradients accumulate in the context, not in `.grad`.
"""
from __future__ import annotations

from .rpc import dist_autograd_context as context
from .rpc import dist_backward as backward
from .rpc import dist_get_gradients as get_gradients

__all__ = ["context", "backward", "get_gradients", "is_available"]


def is_available():
    return True
