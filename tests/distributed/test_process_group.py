"""eager.distributed's process group and collectives, in one process and under mpiexec -n 2."""
import subprocess
import sys

import pytest

from dualgrad import eager
from dualgrad.eager import distributed as dist

from .mpi import run


def test_collective_before_init_is_a_clear_error():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="has not been initialized; call init_process_group"):
        dist.all_reduce(eager.ones(2))
    with pytest.raises(RuntimeError, match="not been initialized"):
        dist.get_rank()


def test_only_the_mpi_backend():
    with pytest.raises(ValueError, match="MPI only; got backend='gloo'"):
        dist.init_process_group(backend="gloo")


def test_collectives_on_two_ranks(suite_output):
    out = suite_output
    assert "collectives ok on rank 0" in out and "collectives ok on rank 1" in out


def test_an_exception_on_one_rank_aborts_all():
    proc = run(["faults.py", "raise"], timeout=30)
    assert proc.returncode != 0
    assert "ValueError: bad batch on rank 1" in proc.stderr
    assert ("rank 1 of 2: raised ValueError: bad batch on rank 1 (aborting all ranks: "
            "MPI_Abort)") in proc.stderr
    assert "not noticed" not in proc.stdout


def test_a_collective_past_its_timeout_aborts_naming_the_rank():
    proc = run(["faults.py", "hang"], timeout=30)
    assert proc.returncode != 0
    assert "rank 0 of 2: all_reduce (collective #1) waited 2 s for the other ranks" \
        in proc.stderr, proc.stderr
    assert "not noticed" not in proc.stdout


def test_mpi4py_is_imported_only_when_used():
    code = ("import sys; from dualgrad import eager, graph, compiler; "
            "import dualgrad.eager.distributed; assert 'mpi4py' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_docs_blocks_run_on_two_ranks(suite_output):
    for rank in (0, 1):
        assert f"rank {rank}: docs/distributed.md runs on 2 ranks" in suite_output
        assert f"rank {rank} of 2: [3.0, 3.0, 3.0]" in suite_output
