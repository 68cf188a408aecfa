"""fully_shard (torch's FSDP2): shard a module in place, each parameter on its first dim.

    for block in model.blocks:
        fully_shard(block)            # each block a unit of its own
    fully_shard(model)                # the rest of the model: the root unit
    opt = optim.Adam(model.parameters())

`fully_shard(module)` changes `module`'s class to `FSDP<Class>`, a subclass of FSDPModule and
of its class, and replaces each of its parameters (outside units already made inside it) by a
`ShardedParameter` of the same name that holds this rank's rows: parameter p's first dim is
cut in world-size chunks of ceil(len / N) rows, as torch's Shard(0), and rank r keeps chunk r
(the last ranks' chunks may be shorter or empty). The optimizer steps those shards, so
gradients and optimizer state are sharded too. A unit's forward all-gathers its parameters
(one collective per dtype), runs with the full ones, and frees them (reshard_after_forward);
an identity op on the outputs gathers them again when backward reaches the unit, and once
every parameter of the unit has its gradient the gradients are reduce-scattered (averaged)
into the shards' `.grad`.

Not torch's: parameters are not DTensors. A shard is an eager tensor whose `shape` is this
rank's (a DTensor reports the global one); `p.full_tensor()` (a collective) gathers the full
value, `p.to_local()` is the shard, and `model.state_dict()` holds such shards, so torch's
`{k: v.full_tensor() for k, v in model.state_dict().items()}` gives a full state dict, and
`load_state_dict` takes full tensors or shards. Device meshes, mixed precision, custom
placements and CPU offload of GPU parameters are not provided (the errors say what to use).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dualgrad.ops import distributed as _mpi
from ..core import Tensor, _GRAD
from ..nn import Module, Parameter
from .sharding import mark_outputs, refuse_traced

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "CPUOffloadPolicy", "ShardedParameter", "ShardedTensor"]


@dataclass
class MixedPrecisionPolicy:
    """torch's policy; dualgrad computes in the parameters' dtype, so only the default (every
    dtype None) is accepted by fully_shard."""
    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


class OffloadPolicy:
    """No offloading (the default)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Accepted: dualgrad's parameters and shards always live in CPU memory."""
    pin_memory: bool = True


# -- the layout: rows of the first dim in world-size chunks -----------------------------------
def _rows(shape):
    return shape[0] if shape else 1


def _chunk(shape, n):
    return -(-_rows(shape) // n)


def _local(full, n, rank):
    """Rank `rank`'s rows of `full` (a 0-d value counts as one row)."""
    flat = full.reshape((_rows(full.shape),) + full.shape[1:])
    c = _chunk(full.shape, n)
    return flat[rank * c:(rank + 1) * c]


def _padded(local, shape, n):
    """`local` padded with zero rows to the chunk size, flat (what one rank sends)."""
    c, row = _chunk(shape, n), int(np.prod(shape[1:], dtype=np.int64))
    out = np.zeros(c * row, local.dtype)
    out[:local.size] = local.reshape(-1)
    return out


def _whole(gathered, shape):
    """The full value from (N, chunk) rows of every rank."""
    n = gathered.shape[0]
    rows = gathered.reshape((n * _chunk(shape, n),) + tuple(shape[1:]))
    return np.ascontiguousarray(rows[:_rows(shape)]).reshape(shape)


class _Shard:
    """What a shard offers in place of DTensor's API."""
    __slots__ = ()

    def full_tensor(self):
        """The full value, gathered from every rank (a collective: call it on every rank)."""
        shape = self._full_shape
        gathered = _mpi.all_gather(_padded(self._array, shape, _mpi.size()), check=False)
        return Tensor(_whole(gathered, shape))

    def to_local(self):
        """This rank's rows (sharing memory with the shard)."""
        return Tensor(self._array)

    @property
    def full_shape(self):
        return self._full_shape


class ShardedParameter(_Shard, Parameter):
    """A parameter of a fully_shard unit: this rank's rows of it (see the module's doc)."""
    __slots__ = ("_full_shape",)
    sharded = True

    def __init__(self, local, full_shape, requires_grad=True):
        super().__init__(local, requires_grad)
        self._full_shape = tuple(full_shape)

    def detach(self):
        out = ShardedTensor(self._array)
        out._full_shape = self._full_shape
        return out

    def __repr__(self):
        return f"ShardedParameter(rows of {self._full_shape}, local shape {self.shape}):\n" \
               f"{Tensor.__repr__(self)}"


class ShardedTensor(_Shard, Tensor):
    """A shard in a state dict (what `ShardedParameter.detach()` returns)."""
    __slots__ = ("_full_shape",)


# -- fully_shard ------------------------------------------------------------------------------
def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=MixedPrecisionPolicy(), offload_policy=OffloadPolicy(),
                ignored_params=None, dp_mesh_dims=None):
    """Shard `module`'s parameters over the MPI world, in place; returns the module (now an
    FSDPModule). Apply it to submodules first, then to their parents."""
    _refuse(mesh, shard_placement_fn, mp_policy, dp_mesh_dims, reshard_after_forward)
    if isinstance(module, (list, tuple)):
        raise NotImplementedError("fully_shard: one module at a time (torch's list form, "
                                  "which groups modules into one unit, is not provided)")
    if isinstance(module, FSDPModule):
        raise AssertionError(f"Each distinct composable distributed API can only be applied to "
                             f"a module once. fully_shard has already been applied to the "
                             f"following module:\n{module}")
    _mpi.world("fully_shard")
    unit = _Unit(module, reshard_after_forward is not False, set(map(id, ignored_params or ())))
    cls = type(module)
    module.__class__ = _SUBCLASSES.get(cls) or _SUBCLASSES.setdefault(
        cls, type(f"FSDP{cls.__name__}", (FSDPModule, cls), {"__module__": cls.__module__}))
    object.__setattr__(module, "_fsdp_unit", unit)
    return module


_SUBCLASSES = {}


def _refuse(mesh, shard_placement_fn, mp_policy, dp_mesh_dims, reshard_after_forward):
    if mesh is not None or dp_mesh_dims is not None:
        raise NotImplementedError("fully_shard: device meshes are not provided: dualgrad shards "
                                  "over the whole MPI world (mpiexec -n N); leave mesh out")
    if shard_placement_fn is not None:
        raise NotImplementedError("fully_shard: shard_placement_fn is not provided: parameters "
                                  "are sharded on dim 0 (torch's default Shard(0))")
    if (mp_policy.param_dtype, mp_policy.reduce_dtype, mp_policy.output_dtype) != (None,) * 3:
        raise NotImplementedError("fully_shard: mixed precision is not provided: dualgrad "
                                  "computes in the parameters' dtype; cast the model instead "
                                  "(model.to(torch.bfloat16)) before fully_shard")
    if reshard_after_forward not in (None, True, False):
        raise NotImplementedError(f"fully_shard: reshard_after_forward={reshard_after_forward!r}"
                                  f": resharding to a smaller world is not provided; use True "
                                  f"or False")


class FSDPModule:
    """The class fully_shard mixes into a module's: forward gathers and frees the unit's
    parameters; `unshard()` / `reshard()` do it by hand."""

    def forward(self, *args, **kwargs):
        unit = self.__dict__["_fsdp_unit"]
        refuse_traced(args, kwargs, "a fully_shard module", "compile the model under "
                      "DistributedDataParallel instead")
        unit.before_forward()
        unit.expose(True)
        try:
            out = super().forward(*args, **kwargs)
            if _GRAD.enabled and unit.trained:
                out = mark_outputs(out, unit)
        finally:
            unit.expose(False)
            if unit.reshard_after_forward:
                unit.free()
        return out

    def unshard(self, async_op=False):
        """Gather the full parameters: until reshard(), the module's parameters are full (with
        async_op=True, a handle whose wait() returns at once: the gather is done)."""
        unit = self.__dict__["_fsdp_unit"]
        unit.gather()
        unit.expose(True)
        return _Done() if async_op else None

    def reshard(self):
        """Free the full parameters: the module's parameters are this rank's shards again."""
        unit = self.__dict__["_fsdp_unit"]
        unit.expose(False)
        unit.free()

    def set_requires_gradient_sync(self, requires_gradient_sync, *, recurse=True):
        """False: backward keeps full gradients locally, without communication (torch's
        gradient accumulation); the first backward after setting True again reduce-scatters
        the sum into the shards."""
        for unit in self._fsdp_units(recurse):
            unit.sync = bool(requires_gradient_sync)

    def set_reshard_after_forward(self, reshard_after_forward, *, recurse=True):
        for unit in self._fsdp_units(recurse):
            unit.reshard_after_forward = bool(reshard_after_forward)

    def _fsdp_units(self, recurse):
        mods = self.modules() if recurse else [self]
        return [m.__dict__["_fsdp_unit"] for m in mods if isinstance(m, FSDPModule)]

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Full tensors (from an unsharded model) or shards (from this model's state_dict):
        each sharded parameter takes its rows."""
        n, rank = _mpi.size(), _mpi.rank()
        own = Module.state_dict(self, keep_vars=True)
        given = dict(state_dict)
        for k, p in own.items():
            v = given.get(k)
            if isinstance(p, ShardedParameter) and v is not None and not isinstance(v, _Shard):
                full = np.asarray(v._array if isinstance(v, Tensor) else v)
                if full.shape == p.full_shape:
                    given[k] = _local(full, n, rank)
        return Module.load_state_dict(self, given, strict, assign)


class _Done:
    def wait(self):
        return None


class _Unit:
    """One fully_shard call's parameters: shards, full copies for compute, gradient sync."""

    def __init__(self, module, reshard_after_forward, ignored):
        self.reshard_after_forward, self.sync = reshard_after_forward, True
        slots = _own_slots(module, ignored)
        params = list({id(p): p for _, _, p, _ in slots}.values())
        names = {id(p): q for _, _, p, q in reversed(slots)}     # NOTE: a tied one's first name
        buffers = list(module.named_buffers())
        _mpi.check_same_shapes("fully_shard", [(names[id(p)], p.shape, p._array.dtype)
                                               for p in params] +
                               [(k, b.shape, b._array.dtype) for k, b in buffers])
        for _, b in buffers:
            _mpi.broadcast(b._array, 0, check=False)
        n, rank = _mpi.size(), _mpi.rank()
        self.shards, self.compute, self.names = [], [], []
        for p in params:
            full = np.ascontiguousarray(p._array)
            _mpi.broadcast(full, 0, check=False)     # every rank starts from rank 0's values
            self.shards.append(ShardedParameter(_local(full, n, rank), full.shape,
                                                p.requires_grad))
            self.compute.append(Parameter(np.empty(0, full.dtype), p.requires_grad))
            self.names.append(names[id(p)])
        self.shapes = [s.full_shape for s in self.shards]
        self.slots = [[(m, k) for m, k, q, _ in slots if q is p] for p in params]
        self.trained = [c for c in self.compute if c.requires_grad]
        self.arrived, self.gathered, self.accum = set(), False, None
        self.hooks = [c.register_post_accumulate_grad_hook(self.grad_ready)
                      for c in self.trained]
        self.expose(False)
        self.free()

    def groups(self, trained=False):
        """Parameter indices by dtype (those that take gradients): one collective each."""
        out = {}
        for i, c in enumerate(self.compute):
            if c.requires_grad or not trained:
                out.setdefault(c._array.dtype, []).append(i)
        return list(out.values())

    def expose(self, full):
        """Put the full parameters (True) or the shards (False) in the module's slots."""
        for i, owners in enumerate(self.slots):
            p = self.compute[i] if full else self.shards[i]
            for m, k in owners:
                m._parameters[k] = p

    def before_forward(self):
        if self.arrived:
            missing = [self.names[i] for i, c in enumerate(self.compute)
                       if c.requires_grad and id(c) not in self.arrived]
            raise RuntimeError(f"fully_shard: the previous backward did not finish: no gradient "
                               f"reached {missing[:8]} (every parameter must take part in the "
                               f"loss on every rank)")
        self.gather()

    def gather(self):
        """All-gather the full parameters into the compute copies (once until freed)."""
        if self.gathered:
            return
        n = _mpi.size()
        for idx in self.groups():
            sent = np.concatenate([_padded(self.shards[i]._array, self.shapes[i], n)
                                   for i in idx])
            gathered = _mpi.all_gather(sent, check=False)
            start = 0
            for i in idx:
                size = _padded_size(self.shapes[i], n)
                self.compute[i]._array = _whole(gathered[:, start:start + size], self.shapes[i])
                start += size
        self.gathered = True

    def free(self):
        for c in self.compute:
            c._array = np.empty(0, c._array.dtype)
        self.gathered = False

    def grad_ready(self, p):
        self.arrived.add(id(p))
        if len(self.arrived) < len(self.trained):
            return
        self.arrived.clear()
        n = _mpi.size()
        groups = self.groups(trained=True)
        grads = [self._full_grads(idx, n) for idx in groups]
        if self.accum is not None:
            grads = [g + a for g, a in zip(grads, self.accum)]
        self.accum = None if self.sync else grads
        if self.sync:
            for idx, g in zip(groups, grads):
                self._scatter(idx, _mpi.reduce_scatter(g, "avg", check=False), n)
        self.free()

    def _full_grads(self, idx, n):
        """(N, chunk) rows per rank of each parameter's full gradient, laid end to end."""
        parts = []
        for i in idx:
            c = self.compute[i]
            g = np.zeros(self.shapes[i], c._array.dtype) if c.grad is None else c.grad._array
            c.grad = None
            rows = np.zeros((n * _chunk(self.shapes[i], n),) + tuple(self.shapes[i][1:]),
                            g.dtype)
            rows[:_rows(self.shapes[i])] = g.reshape((_rows(self.shapes[i]),) +
                                                    tuple(self.shapes[i][1:]))
            parts.append(rows.reshape(n, -1))
        return np.concatenate(parts, axis=1)

    def _scatter(self, idx, mine, n):
        start = 0
        for i in idx:
            s = self.shards[i]
            size = _padded_size(self.shapes[i], n)
            local = mine[start:start + s._array.size].reshape(s._array.shape)
            s.grad = Tensor(local.copy()) if s.grad is None else Tensor(s.grad._array + local)
            start += size


def _padded_size(shape, n):
    return _chunk(shape, n) * int(np.prod(shape[1:], dtype=np.int64))


def _own_slots(module, ignored):
    """(owner module, name, parameter) for every parameter of `module` outside units inside
    it and outside `ignored`."""
    out = []

    def visit(m, prefix):
        for k, p in m._parameters.items():
            if p is None or id(p) in ignored:
                continue
            if isinstance(p, ShardedParameter):
                raise ValueError(f"fully_shard: {prefix}{k} is already sharded by a unit "
                                 f"around this module; apply fully_shard to submodules "
                                 f"before their parents")
            out.append((m, k, p, f"{prefix}{k}"))
        for k, child in m._modules.items():
            if child is not None and not isinstance(child, FSDPModule):
                visit(child, f"{prefix}{k}.")
    visit(module, "")
    return out
