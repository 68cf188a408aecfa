"""FullyShardedDataParallel, as torch.distributed.fsdp (see docs/distributed.md); FSDP2's
in-place `fully_shard` and `FSDPModule` (fsdp2.py) are re-exported here, where torch has them.

Each FSDP unit (the wrapped module, minus submodules wrapped in units of their own) keeps
its parameters as one flat vector, padded to a multiple of the world size, of which each rank
holds 1/N: `flat_param`, the only parameter the unit shows to an optimizer, so gradients and
optimizer state are sharded too. Forward all-gathers the unit's full parameters, runs the
module, and frees them; an identity op on the unit's outputs gathers them again when
backward reaches the unit; once every parameter of the unit has its gradient (the
post-accumulate-grad hooks), the full gradient is reduce-scattered (averaged) into
`flat_param.grad` and the full parameters and gradients are freed.

Under `mpiexec -n 2`:

    dist.init_process_group(backend="mpi")
    model = FSDP(Net(), auto_wrap_policy=ModuleWrapPolicy({Block}))
    opt = optim.Adam(model.parameters())      # sees each unit's 1/N shard
    model.state_dict()                        # full tensors, Net's own keys, on every rank
"""
from __future__ import annotations

import enum
import types
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from dualgrad.ops import distributed as _mpi
from ..nn import Module, Parameter
from ..nn.utils import clip_grad_norm_
from ..core import Tensor, _GRAD
from .sharding import mark_outputs, refuse_traced
from .fsdp2 import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy,  # noqa: F401 - FSDP2
                    OffloadPolicy, fully_shard)

__all__ = ["FullyShardedDataParallel", "FlatParameter", "ModuleWrapPolicy", "ShardingStrategy",
           "size_based_auto_wrap_policy", "StateDictType", "FullStateDictConfig",
           "fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "CPUOffloadPolicy"]
_PREFIX = "_fsdp_wrapped_module."


class ModuleWrapPolicy:
    """auto_wrap_policy: every submodule of one of these classes becomes its own unit."""

    def __init__(self, module_classes):
        self.classes = tuple(module_classes)

    def __call__(self, module, recurse, nonwrapped_numel):
        return True if recurse else isinstance(module, self.classes)


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=100_000_000):
    """auto_wrap_policy: a submodule holding at least min_num_params becomes its own unit
    (use functools.partial to set min_num_params, as in PyTorch)."""
    return True if recurse else nonwrapped_numel >= min_num_params


class FlatParameter(Parameter):
    """A unit's parameters laid end to end, of which this rank holds 1/N (`flat_param`)."""
    __slots__ = ()
    sharded = True      # NOTE: clip_grad_norm_ combines the ranks' parts


class ShardingStrategy:
    """torch's names; dualgrad shards parameters, gradients and optimizer state (FULL_SHARD)."""
    FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD = (
        "FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD")


class StateDictType(enum.Enum):
    """What FSDP's state_dict() returns: FULL_STATE_DICT (full tensors, the wrapped module's
    keys; the default, and the one dualgrad provides) or torch's sharded / local forms."""
    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


@dataclass
class FullStateDictConfig:
    """FULL_STATE_DICT's options: rank0_only (the other ranks get an empty dict, as torch's);
    offload_to_cpu changes nothing here (every tensor is in CPU memory)."""
    offload_to_cpu: bool = False
    rank0_only: bool = False


def _check_options(sharding_strategy, mixed_precision, device_id):
    """FSDP's options dualgrad acts on: full sharding on the CPU (`device_id` a CPU device,
    else torch's CPU-only error), no mixed precision; `limit_all_gathers` is a scheduling
    switch of torch's CUDA streams, accepted and without effect on values."""
    from .. import devices
    devices.check(device_id if not isinstance(device_id, int) else f"cuda:{device_id}")
    strategy = getattr(sharding_strategy, "name", sharding_strategy)
    if strategy not in (None, "FULL_SHARD"):
        raise NotImplementedError(f"FullyShardedDataParallel: sharding_strategy={strategy} is "
                                  "not supported: dualgrad shards fully (FULL_SHARD)")
    if mixed_precision is not None:
        raise NotImplementedError("FullyShardedDataParallel: mixed_precision is not supported: "
                                  "dualgrad computes in the parameters' own dtype")


class FullyShardedDataParallel(Module):
    """Shards `module`'s parameters, gradients and optimizer state across the ranks."""

    def __init__(self, module, auto_wrap_policy=None, sync_module_states=True,
                 sharding_strategy=None, mixed_precision=None, device_id=None,
                 limit_all_gathers=True):
        super().__init__()
        _check_options(sharding_strategy, mixed_precision, device_id)
        _mpi.world("FullyShardedDataParallel")
        if not sync_module_states:
            raise ValueError("FullyShardedDataParallel: dualgrad always starts every rank from "
                             "rank 0's parameters (sync_module_states=True)")
        if auto_wrap_policy is not None:
            _auto_wrap(module, auto_wrap_policy)
        self._fsdp_wrapped_module = module
        named = _own_params(module)
        buffers = list(module.named_buffers())
        _mpi.check_same_shapes("FullyShardedDataParallel",
                               [(n, p.shape, p._array.dtype) for n, p in named + buffers])
        for _, b in buffers:
            _mpi.broadcast(b._array, 0, check=False)
        self._params = [p for _, p in named]
        self._names = {id(p): _clean(n) for n, p in named}
        self._shapes = [p.shape for p in self._params]
        self._trained = [p for p in self._params if p.requires_grad]
        self._arrived, self._gathered = set(), False
        self._sync, self._accum = True, None     # no_sync(): full gradients kept here
        if self._params:
            self._shard(named)
            self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready)
                           for p in self._trained]

    def _shard(self, named):
        dtypes = {p.dtype for p in self._params}
        if len(dtypes) > 1:
            raise TypeError(f"FullyShardedDataParallel: one unit's parameters must share a "
                            f"dtype, got {sorted(map(str, dtypes))}; wrap them in separate units")
        n, rank = _mpi.size(), _mpi.rank()
        total = sum(p._array.size for p in self._params)
        self._shard_size = -(-total // n)
        flat = np.zeros(self._shard_size * n, self._params[0].dtype)
        flat[:total] = np.concatenate([p._array.reshape(-1) for p in self._params])
        _mpi.broadcast(flat, 0, check=False)          # every rank starts from rank 0's values
        part = slice(rank * self._shard_size, (rank + 1) * self._shard_size)
        self.flat_param = FlatParameter(flat[part], requires_grad=bool(self._trained))
        self._free()

    # -- forward and backward -----------------------------------------------------------------
    def forward(self, *args, **kwargs):
        refuse_traced(args, kwargs, "FullyShardedDataParallel",
                      "compile the model under DistributedDataParallel instead")
        if self._arrived:
            self._unfinished()
        self.gather()
        try:
            out = self._fsdp_wrapped_module(*args, **kwargs)
            if _GRAD.enabled and self._trained:
                out = mark_outputs(out, self)
        finally:
            self._free()
        return out

    def gather(self):
        """All-gather this unit's full parameters (once until they are freed again)."""
        if self._gathered or not self._params:
            return
        full = _mpi.all_gather(self.flat_param._array, check=False).reshape(-1)
        start = 0
        for p, shape in zip(self._params, self._shapes):
            size = int(np.prod(shape, dtype=np.int64))
            p._array = full[start:start + size].reshape(shape)
            start += size
        self._gathered = True

    def _free(self):
        for p in self._params:
            p._array = np.empty(0, p.dtype)
        self._gathered = False

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip every unit's gradient shards by the norm of the whole gradients (combined over
        the ranks: call it on every rank); returns that norm, as torch's."""
        return clip_grad_norm_(self.parameters(), max_norm, norm_type)

    @contextmanager
    def no_sync(self):
        """Backward inside accumulates every unit's full, unsharded gradients locally (more
        memory, no communication); the first backward after it reduce-scatters the sum."""
        units = self._units()
        before = [u._sync for u in units]
        for u in units:
            u._sync = False
        try:
            yield
        finally:
            for u, sync in zip(units, before):
                u._sync = sync

    def _grad_ready(self, p):
        self._arrived.add(id(p))
        if len(self._arrived) < len(self._trained):
            return
        n = _mpi.size()
        grads = np.zeros((n, self._shard_size), self.flat_param.dtype)
        flat, start = grads.reshape(-1), 0
        for q in self._params:
            size = q._array.size
            if q.grad is not None:
                flat[start:start + size] = q.grad._array.reshape(-1)
                q.grad = None
            start += size
        if self._accum is not None:
            grads += self._accum
        self._arrived.clear()
        if not self._sync:
            self._accum = grads
            self._free()
            return
        self._accum = None
        mine = _mpi.reduce_scatter(grads, "avg", check=False)
        g = self.flat_param.grad
        self.flat_param.grad = Tensor(mine) if g is None else Tensor(g._array + mine)
        self._free()

    def _unfinished(self):
        missing = [self._names[id(p)] for p in self._trained if id(p) not in self._arrived]
        raise RuntimeError(f"FullyShardedDataParallel: the previous backward did not finish: "
                           f"no gradient reached {missing[:8]} (every parameter must take part "
                           f"in the loss on every rank)")

    # -- what the optimizer and checkpoints see -----------------------------------------------
    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """The flat shards of this unit and of the units inside it (what an optimizer steps)."""
        for mprefix, m in self.named_modules(prefix=prefix):
            if isinstance(m, FullyShardedDataParallel) and m._params:
                yield (f"{mprefix}.flat_param" if mprefix else "flat_param"), m.flat_param

    @property
    def module(self):
        return self._fsdp_wrapped_module

    def _units(self):
        return [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]

    def _full_entries(self):
        flats = {id(u.flat_param) for u in self._units() if u._params}
        inner = self._fsdp_wrapped_module
        out = OrderedDict((_clean(n), p) for n, p in Module.named_parameters(inner)
                          if id(p) not in flats)
        out.update((_clean(n), b) for n, b in inner.named_buffers())
        return out

    @staticmethod
    @contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):
        """Inside, state_dict() of every FSDP unit in `module` is of `state_dict_type` with
        `state_dict_config`; FULL_STATE_DICT only (the sharded forms raise here)."""
        if StateDictType(state_dict_type) is not StateDictType.FULL_STATE_DICT:
            raise NotImplementedError(f"FullyShardedDataParallel.state_dict_type: "
                                      f"{StateDictType(state_dict_type).name} is not supported "
                                      f"by dualgrad; use StateDictType.FULL_STATE_DICT")
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        before = [u.__dict__.get("_state_config") for u in units]
        for u in units:
            object.__setattr__(u, "_state_config", state_dict_config or FullStateDictConfig())
        try:
            yield
        finally:
            for u, b in zip(units, before):
                object.__setattr__(u, "_state_config", b)

    def state_dict(self):
        """Full, unsharded tensors on every rank, keyed as the wrapped module's own (with
        state_dict_type's FullStateDictConfig(rank0_only=True): only rank 0 gets them)."""
        config = self.__dict__.get("_state_config")
        if config is not None and config.rank0_only and _mpi.rank() != 0:
            with self.summon_full_params(self, writeback=False):   # NOTE: collective still
                return OrderedDict()
        with self.summon_full_params(self, writeback=False):
            return OrderedDict((k, Tensor(np.array(t._array, copy=True)))
                               for k, t in self._full_entries().items())

    def load_state_dict(self, state_dict, strict=True):
        """Load a full state dict (the wrapped module's keys, e.g. from an unwrapped model)."""
        with self.summon_full_params(self, writeback=True):
            holder = _Holder(self._full_entries())
            return Module.load_state_dict(holder, state_dict, strict)

    @staticmethod
    @contextmanager
    def summon_full_params(module, writeback=True):
        """Inside, every unit of `module` holds its full parameters (written back to the
        shards on exit when writeback)."""
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        for u in units:
            u.gather()
        try:
            yield
        finally:
            for u in units:
                if writeback and u._params:
                    u._write_back()
                u._free()

    def _write_back(self):
        rank = _mpi.rank()
        flat = np.zeros(self._shard_size * _mpi.size(), self.flat_param.dtype)
        flat[:sum(p._array.size for p in self._params)] = np.concatenate(
            [p._array.reshape(-1) for p in self._params])
        self.flat_param._array[...] = flat[rank * self._shard_size:(rank + 1) * self._shard_size]

    def extra_repr(self):
        n = sum(int(np.prod(s, dtype=np.int64)) for s in self._shapes)
        return f"{len(self._params)} parameters, {n} values, {getattr(self, '_shard_size', 0)} " \
               f"per rank"


class _Holder(Module):
    """A module whose named parameters are given entries (for the base load_state_dict)."""

    def __init__(self, entries):
        super().__init__()
        object.__setattr__(self, "_entries", entries)

    def named_parameters(self, prefix=""):
        return iter(self._entries.items())

    def named_buffers(self, prefix=""):
        return iter(())

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        return OrderedDict(self._entries)   # NOTE: what the base load_state_dict copies into


_Holder.__name__ = "FullyShardedDataParallel"   # what load_state_dict's errors name


def _clean(name):
    return name.replace(_PREFIX, "")


def _own_params(module):
    """(name, parameter) of `module` outside any FSDP unit nested in it, without repeats."""
    out, seen = [], set()

    def visit(m, prefix):
        for name, p in m._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((f"{prefix}{name}", p))
        for name, child in m._modules.items():
            if not isinstance(child, FullyShardedDataParallel):
                visit(child, f"{prefix}{name}.")
    visit(module, "")
    return out


def _auto_wrap(module, policy):
    for name, child in list(module._modules.items()):
        if isinstance(child, FullyShardedDataParallel):
            continue
        if policy(child, True, 0):
            _auto_wrap(child, policy)
        numel = sum(p._array.size for _, p in _own_params(child))
        if policy(child, False, numel):
            module._modules[name] = FullyShardedDataParallel(child)


# torch.distributed.fsdp.fully_sharded_data_parallel: the module the classes live in
fully_sharded_data_parallel = types.ModuleType(
    "dualgrad.eager.distributed.fsdp.fully_sharded_data_parallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel")
for _name in ("FullyShardedDataParallel", "StateDictType", "FullStateDictConfig",
              "ShardingStrategy"):
    setattr(fully_sharded_data_parallel, _name, globals()[_name])
