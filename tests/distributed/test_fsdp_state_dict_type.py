"""FSDP.state_dict_type with torch's StateDictType / FullStateDictConfig, in one process (a
world of 1, in a subprocess so the process group stays out of the test process): the full
state dict inside the context as outside, rank0_only on rank 0, the sharded forms refused.
The names are checked against torch's own. A few seconds."""
import subprocess
import sys

import pytest

SCRIPT = r"""
from dualgrad import eager
from dualgrad.eager import distributed as dist, nn
from dualgrad.eager.distributed import fsdp
from dualgrad.eager.distributed.fsdp import FullyShardedDataParallel as FSDP
dist.init_process_group(backend="mpi")
model = FSDP(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))
outside = model.state_dict()
config = fsdp.FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
T = fsdp.fully_sharded_data_parallel.StateDictType
with FSDP.state_dict_type(model, T.FULL_STATE_DICT, config):
    inside = model.state_dict()
assert list(inside) == list(outside) == ["0.weight", "0.bias", "1.weight", "1.bias"]
assert all((inside[k] == outside[k]).all() for k in inside)
try:
    with FSDP.state_dict_type(model, fsdp.StateDictType.SHARDED_STATE_DICT):
        pass
except NotImplementedError as e:
    assert "FULL_STATE_DICT" in str(e)
else:
    raise AssertionError("SHARDED_STATE_DICT accepted")
print("ok")
"""


def test_state_dict_type_full_state_dict_in_a_world_of_one():
    pytest.importorskip("mpi4py")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_the_names_are_torchs():
    torch = pytest.importorskip("torch")
    from dualgrad.eager.distributed import fsdp
    import torch.distributed.fsdp as ref
    assert [m.name for m in fsdp.StateDictType] == [m.name for m in ref.StateDictType]
    assert ref.FullStateDictConfig(offload_to_cpu=True, rank0_only=True).rank0_only
    assert fsdp.FullStateDictConfig(offload_to_cpu=True, rank0_only=True).rank0_only


def test_fully_shard_names_and_signature_are_torchs():
    pytest.importorskip("torch")
    import inspect
    import torch.distributed.fsdp as ref
    from dualgrad.eager.distributed import fsdp
    ours = inspect.signature(fsdp.fully_shard).parameters
    theirs = inspect.signature(ref.fully_shard).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]
    assert list(inspect.signature(fsdp.MixedPrecisionPolicy).parameters) == \
        list(inspect.signature(ref.MixedPrecisionPolicy).parameters)
    for method in ("reshard", "unshard", "set_requires_gradient_sync",
                   "set_reshard_after_forward"):
        assert hasattr(fsdp.FSDPModule, method) and hasattr(ref.FSDPModule, method)
