"""fully_shard (FSDP2) as a user meets it, on 2 ranks: the same losses as FSDP1 and as one
process on the whole batch, the class swap, shards by rows, full_tensor / state dicts,
unshard / reshard, gradient accumulation, and what is refused."""
import numpy as np

from dualgrad import eager
from dualgrad.eager import distributed as dist
from dualgrad.eager import nn, optim
from dualgrad.eager.distributed.fsdp import (FSDPModule, FullyShardedDataParallel as FSDP,
                                             MixedPrecisionPolicy, ModuleWrapPolicy,
                                             fully_shard)
from dualgrad.eager.nn import functional as F

dist.init_process_group(backend="mpi")
rank, world = dist.get_rank(), dist.get_world_size()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 7)

    def forward(self, h):
        return h + self.fc(h).tanh()


def build(seed=0):
    eager.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), Block(), Block(), nn.Linear(7, 3))


def sharded(seed=0):
    model = build(seed)
    for block in (model[1], model[2]):
        fully_shard(block)
    return fully_shard(model)


def mean_over_ranks(loss):
    t = eager.tensor([loss.item()], dtype=eager.float64)
    dist.all_reduce(t)
    return t.item() / world


# -- the same losses as FSDP1 on 2 ranks and as one process on the whole batch ----------------
rng = np.random.default_rng(0)
batches = [(rng.standard_normal((8, 5)).astype(np.float32),
            rng.standard_normal((8, 3)).astype(np.float32)) for _ in range(4)]
mine = slice(rank * 4, rank * 4 + 4)
models = {"fully_shard": sharded(rank),            # rank 1 built differently: rank 0's win
          "fsdp1": FSDP(build(), auto_wrap_policy=ModuleWrapPolicy({Block})),
          "one process": build()}
opts = {k: optim.Adam(m.parameters(), lr=0.01) for k, m in models.items()}
losses = {k: [] for k in models}
for x, y in batches:
    for k, m in models.items():
        xs, ys = (x, y) if k == "one process" else (x[mine], y[mine])
        loss = F.mse_loss(m(eager.tensor(xs)), eager.tensor(ys))
        opts[k].zero_grad()
        loss.backward()
        opts[k].step()
        losses[k].append(loss.item() if k == "one process" else mean_over_ranks(loss))
np.testing.assert_allclose(losses["fully_shard"], losses["fsdp1"], rtol=1e-6)
np.testing.assert_allclose(losses["fully_shard"], losses["one process"], rtol=1e-5)
print(f"rank {rank}: fully_shard losses {[round(v, 6) for v in losses['fully_shard']]} "
      f"match FSDP1 and one process", flush=True)

# -- in place: the class, the names, the shards -----------------------------------------------
model = models["fully_shard"]
assert type(model).__name__ == "FSDPSequential" and isinstance(model, nn.Sequential)
assert isinstance(model, FSDPModule) and type(model[1]).__name__ == "FSDPBlock"
assert not isinstance(model[0], FSDPModule)
ref = build()
assert [n for n, _ in model.named_parameters()] == [n for n, _ in ref.named_parameters()]
w = model[0].weight                                 # (7, 5): rows 0-3 on rank 0, 4-6 on rank 1
assert w.shape == ((4, 5) if rank == 0 else (3, 5)) and w.full_shape == (7, 5), w.shape
assert all(v.shape == p.shape for p in model.parameters()
           for k, v in opts["fully_shard"].state[p].items() if k != "step")
full = {k: v.full_tensor() for k, v in model.state_dict().items()}
plain = build(3)
plain.load_state_dict(full)
x = eager.tensor(batches[0][0])
with eager.no_grad():
    np.testing.assert_allclose(plain(x).numpy(), model(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(models["fsdp1"](x).numpy(), model(x).numpy(), rtol=1e-5)
np.testing.assert_allclose(full["0.weight"].numpy()[rank * 4:rank * 4 + 4],
                           w.to_local().numpy())

# load_state_dict takes a full dict (each rank keeps its rows) or the model's own shards
again = sharded(5)
again.load_state_dict(plain.state_dict())
with eager.no_grad():
    np.testing.assert_allclose(again(x).numpy(), plain(x).numpy(), rtol=1e-6)
again.load_state_dict(sharded(6).state_dict())
with eager.no_grad():
    assert not np.allclose(again(x).numpy(), plain(x).numpy())

# unshard / reshard
model.unshard()
assert model[0].weight.shape == (7, 5) and model[3].bias.shape == (3,)
model.reshard()
assert model[0].weight.shape == w.shape and model[0].weight is w

# set_requires_gradient_sync(False): backwards accumulate locally; the next one with sync
# reduce-scatters the sum: the same shards' gradients as one backward of the summed losses
xs = [eager.full((3, 5), 0.1 * (rank + k)) for k in range(3)]
acc, once = sharded(), sharded()
acc.set_requires_gradient_sync(False)
for k in range(2):
    acc(xs[k]).sum().backward()
assert all(p.grad is None for p in acc.parameters())
acc.set_requires_gradient_sync(True)
acc(xs[2]).sum().backward()
sum(once(x).sum() for x in xs).backward()
for a, b in zip(acc.parameters(), once.parameters()):
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


def global_norm(params):
    t = eager.tensor([sum(float((p.grad.numpy().astype(np.float64) ** 2).sum())
                          for p in params)], dtype=eager.float64)
    dist.all_reduce(t)
    return t.item() ** 0.5


# clip_grad_norm_ of shards: the norm of the whole gradients, the same on every rank
whole = global_norm(once.parameters())
total = nn.utils.clip_grad_norm_(once.parameters(), max_norm=whole / 2)
assert abs(total.item() - whole) < 1e-5 * whole, (total.item(), whole)
assert abs(global_norm(once.parameters()) - whole / 2) < 1e-5 * whole

# what is refused, and how
for call, text in ((lambda: fully_shard(model), "can only be applied to a module once"),
                   (lambda: fully_shard(build(), mesh=object()), "device meshes are not "
                    "provided"),
                   (lambda: fully_shard(build(), mp_policy=MixedPrecisionPolicy(
                       param_dtype=eager.bfloat16)), "cast the model instead"),
                   (lambda: fully_shard(fully_shard(build())[1]), "apply fully_shard to "
                    "submodules before their parents")):
    try:
        call()
    except (AssertionError, NotImplementedError, ValueError) as e:
        assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"accepted: {text}")
dist.destroy_process_group()
print(f"rank {rank}: fully_shard usage ok", flush=True)
