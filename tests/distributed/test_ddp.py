"""DistributedDataParallel under mpiexec -n 2: the same training as one process, and its API."""
from .mpi import ok, run


def test_ddp_and_compiled_ddp_match_one_process_on_the_whole_batch():
    out = ok(run(["equivalence.py", "ddp", "compiled"], timeout=120))
    for kind in ("ddp", "compiled"):
        for opt in ("sgd", "adam"):
            for rank in (0, 1):
                assert f"rank {rank}: {kind} {opt} matches one process for 4 steps" in out


def test_ddp_module_buffers_no_sync_checkpoint_and_mismatched_models(tmp_path):
    out = ok(run(["ddp_usage.py", str(tmp_path / "model.safetensors")]))
    assert "rank 0: ddp usage ok" in out and "rank 1: ddp usage ok" in out
