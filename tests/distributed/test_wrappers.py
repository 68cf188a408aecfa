"""DDP and FSDP under mpiexec -n 2: the same training as one process, and their API."""
from .mpi import ok, run


def test_ddp_compiled_ddp_and_fsdp_match_one_process_on_the_whole_batch():
    out = ok(run(["equivalence.py", "ddp", "compiled", "fsdp"], timeout=150))
    for kind in ("ddp", "compiled", "fsdp"):
        for opt in ("sgd", "adam"):
            for rank in (0, 1):
                assert f"rank {rank}: {kind} {opt} matches one process for 4 steps" in out


def test_ddp_module_buffers_no_sync_checkpoint_and_mismatched_models(tmp_path):
    out = ok(run(["ddp_usage.py", str(tmp_path / "model.safetensors")]))
    assert "rank 0: ddp usage ok" in out and "rank 1: ddp usage ok" in out


def test_fsdp_shards_full_state_dict_checkpoint_and_mismatched_models(tmp_path):
    out = ok(run(["fsdp_usage.py", str(tmp_path / "model.safetensors")]))
    assert "rank 0: fsdp usage ok" in out and "rank 1: fsdp usage ok" in out
