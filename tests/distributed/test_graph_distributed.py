"""graph.distributed (Horovod's names) under mpiexec -n 2."""
import pytest

from dualgrad import graph


def test_distributed_optimizer_matches_one_process_and_bad_models_are_clear_errors(
        suite_output):
    out = suite_output
    for name in ("momentum", "adam"):
        for rank in (0, 1):
            assert f"rank {rank}: graph {name} matches one process for 4 steps" in out
    assert "rank 0: graph usage ok" in out and "rank 1: graph usage ok" in out


def test_collective_node_before_init_is_a_clear_error():
    from dualgrad.graph import distributed as hvd
    with graph.Graph().as_default():
        with pytest.raises(RuntimeError, match="not been initialized; call"):
            hvd.broadcast(graph.constant([1.0]), root_rank=0)
