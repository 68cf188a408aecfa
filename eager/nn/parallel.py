"""eager.nn.parallel: DistributedDataParallel, as torch.nn.parallel (see docs/distributed.md).

Every rank holds the whole model. At construction rank 0's parameters and buffers are
broadcast to all ranks (after checking every rank built the same shapes). During backward,
each parameter's post-accumulate-grad hook marks it ready; parameters are grouped in buckets
of about `bucket_cap_mb` (in reverse registration order, the order backward produces them),
and each bucket's all-reduce starts as soon as its gradients are all there, in bucket order
on every rank, while backward goes on with earlier layers. The last bucket's arrival waits
for all of them and leaves the average over ranks in each parameter's `.grad`.

Under `mpiexec -n 2`:

    dist.init_process_group(backend="mpi")
    model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
    loss = F.mse_loss(model(x_half), y_half)    # each rank its half of the batch
    loss.backward()                             # .grad: the mean over both ranks
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from dualgrad.ops import distributed as _mpi
from dualgrad.ops.core import current_trace
from ..core import _GRAD, Tensor, leaves_reached
from .basic import DataParallel
from .module import Module

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """torch.nn.parallel.data_parallel, which splits a batch over GPUs: on a machine without
    them torch raises this same error, and so does dualgrad (call `module(inputs)`, or wrap the
    module in DataParallel, which runs it as it is)."""
    raise RuntimeError("device type could not be determined")



class _Bucket:
    __slots__ = ("params", "buf", "arrived", "unused", "req")

    def __init__(self, params):
        self.params = params
        self.buf = np.empty(sum(p._array.size for p in params), params[0]._array.dtype)
        self.arrived, self.unused, self.req = set(), set(), None


class DistributedDataParallel(Module):
    """Wraps `module`: same forward, gradients averaged across ranks during backward."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, bucket_cap_mb=25, find_unused_parameters=False):
        super().__init__()
        if device_ids not in (None, [], ["cpu"]) or output_device not in (None, "cpu"):
            raise ValueError("DistributedDataParallel: dualgrad runs on the CPU; leave "
                             "device_ids and output_device out")
        _mpi.world("DistributedDataParallel")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("DistributedDataParallel: the module has no parameter that "
                             "requires a gradient")
        buffers = list(module.named_buffers())
        _mpi.check_same_shapes("DistributedDataParallel", [(n, t.shape, t._array.dtype)
                                                           for n, t in named + buffers])
        for _, t in list(module.named_parameters()) + buffers:   # rank 0's values everywhere
            _mpi.broadcast(t._array, 0, check=False)
        self._names = {id(p): n for n, p in named}
        self._buckets = _buckets([p for _, p in named], int(bucket_cap_mb * 2 ** 20))
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._next = 0          # the next bucket to start, in order on every rank
        self._eager_grads = False   # an eager forward since the last averaging
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready)
                       for _, p in named]

    def forward(self, *inputs, **kwargs):
        if self._next or any(b.arrived for b in self._buckets):
            self._unfinished()
        if self.broadcast_buffers:
            for _, b in self.module.named_buffers():
                _mpi.broadcast(b._array, 0, check=False)
        trace = current_trace()
        if trace is not None:
            self._staged(trace)
        elif _GRAD.enabled:
            self._eager_grads = True    # this backward's gradients are not all averaged yet
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and trace is None and self.require_backward_grad_sync:
            self._mark_unused(out)
        return out

    def _staged(self, trace):
        """compile() is tracing this call: its graph averages the gradients (ops.all_reduce
        nodes, one per bucket), and the hooks leave those gradients alone."""
        declare = getattr(trace, "average_gradients", None)
        if declare is None:
            raise RuntimeError(f"DistributedDataParallel: cannot average gradients inside "
                               f"{type(trace).__name__}; call the model eagerly or under "
                               f"compiler.compile")
        declare([[(self._names[id(p)], p) for p in b.params] for b in self._buckets],
                self.find_unused_parameters)

    def _mark_unused(self, out):
        """find_unused_parameters: what the output does not reach joins its bucket as zeros
        now, so every bucket completes (torch's DDP does the same)."""
        reached = {id(t) for t in leaves_reached(_tensors(out))}
        for b in self._buckets:
            for p in b.params:
                if id(p) not in reached:
                    b.arrived.add(id(p))
                    b.unused.add(id(p))

    @contextmanager
    def no_sync(self):
        """Backward inside accumulates gradients locally; the first one after averages."""
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev

    # -- the reducer --------------------------------------------------------------------------
    def _grad_ready(self, p):
        if _mpi.take_averaged(p) and not self._eager_grads:
            return      # NOTE: a compiled call's graph averaged all of this gradient already
        if not self.require_backward_grad_sync:
            return
        bucket = self._bucket_of[id(p)]
        bucket.arrived.add(id(p))
        while self._next < len(self._buckets):
            b = self._buckets[self._next]
            if len(b.arrived) < len(b.params):
                return
            _flatten_into(b)
            b.req = _mpi.start_all_reduce(b.buf)
            self._next += 1
        self._finish()

    def _finish(self):
        n = _mpi.size()
        used = self._used_anywhere()
        for b in self._buckets:
            _mpi.wait(b.req, "DistributedDataParallel's gradient all_reduce")
            b.buf /= n
            start = 0
            for p in b.params:
                size = p._array.size
                if id(p) in used:
                    avg = b.buf[start:start + size].reshape(p._array.shape)
                    if p.grad is None:
                        p.grad = Tensor(avg.copy())
                    else:
                        p.grad._array[...] = avg
                start += size
            b.arrived.clear()
            b.unused.clear()
            b.req = None
        self._next = 0
        self._eager_grads = False

    def _used_anywhere(self):
        """Parameters some rank gave a gradient: one that none did keeps .grad None (torch)."""
        params = [p for b in self._buckets for p in b.params]
        if not self.find_unused_parameters:
            return {id(p) for p in params}
        mask = np.array([id(p) not in self._bucket_of[id(p)].unused for p in params], np.int64)
        _mpi.all_reduce(mask, "sum", check=False, what="DistributedDataParallel")
        return {id(p) for p, m in zip(params, mask) if m}

    def _unfinished(self):
        missing = [self._names[id(p)] for b in self._buckets for p in b.params
                   if id(p) not in b.arrived]
        raise RuntimeError(f"DistributedDataParallel: the previous backward did not finish "
                           f"averaging gradients: no gradient reached {missing[:8]}. Every "
                           f"parameter must take part in the loss, or pass "
                           f"find_unused_parameters=True")

    def extra_repr(self):
        return f"world_size={_mpi.size()}, buckets={len(self._buckets)}"


def is_bucket_hook(hook) -> bool:
    """hook is a DistributedDataParallel's own post-accumulate hook (its bucket reducer): what
    compile() may average in its graph instead of calling."""
    return getattr(hook, "__func__", None) is DistributedDataParallel._grad_ready


def _buckets(params, cap_bytes):
    """Parameters in reverse order, grouped so a bucket holds about cap_bytes (and one dtype)."""
    buckets, cur, size = [], [], 0
    for p in reversed(params):
        if cur and (size + p._array.nbytes > cap_bytes or p._array.dtype != cur[0]._array.dtype):
            buckets.append(_Bucket(cur))
            cur, size = [], 0
        cur.append(p)
        size += p._array.nbytes
    buckets.append(_Bucket(cur))
    return buckets


def _flatten_into(bucket):
    start = 0
    for p in bucket.params:
        size = p._array.size
        if p.grad is None or id(p) in bucket.unused:    # NOTE: unused here: zeros
            bucket.buf[start:start + size] = 0
        else:
            bucket.buf[start:start + size] = p.grad._array.reshape(-1)
        start += size


def _tensors(out):
    """The tensors in a forward's result (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []
