"""DDP (eager and compiled), FSDP and fully_shard under mpiexec -n 2 (scripts/suite.py, one
launch)."""


def test_ddp_compiled_ddp_fsdp_and_fully_shard_match_one_process_on_the_whole_batch(suite_output):
    for kind in ("ddp", "compiled", "compiled_loss", "compiled_step", "fsdp", "fully_shard"):
        for opt in ("sgd", "adam"):
            for rank in (0, 1):
                assert f"rank {rank}: {kind} {opt} matches one process for 4 steps" \
                    in suite_output


def test_ddp_buffers_no_sync_unused_parameters_checkpoint_and_mismatched_models(suite_output):
    assert "rank 0: ddp usage ok" in suite_output and "rank 1: ddp usage ok" in suite_output


def test_fsdp_shards_no_sync_full_state_dict_checkpoint_and_mismatched_models(suite_output):
    assert "rank 0: fsdp usage ok" in suite_output and "rank 1: fsdp usage ok" in suite_output


def test_fully_shard_in_place_same_losses_as_fsdp_and_one_process_shards_state_and_refusals(
        suite_output):
    for rank in (0, 1):
        assert f"rank {rank}: fully_shard usage ok" in suite_output
        assert f"rank {rank}: fully_shard losses [" in suite_output
