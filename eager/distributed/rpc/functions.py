"""torch.distributed.rpc.functions: `async_execution`."""
from __future__ import annotations

import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark `fn` as returning a `futures.Future` when it runs as an RPC: the callee sends the
    reply once that future completes (with its value or its exception), and the worker thread
    is free meanwhile. As in torch, put it inside @staticmethod / @classmethod, and call the
    decorated function itself (by reference) through rpc_sync / rpc_async / remote.

        @rpc.functions.async_execution
        def add_later(to, x):
            return rpc.rpc_async(to, operator.add, args=(x, 1)).then(lambda f: f.value() * 2)
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper._wrapped_async_rpc_function = fn
    return wrapper
