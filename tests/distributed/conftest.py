"""One `mpiexec -n 2` launch of scripts/suite.py serves every test that reads its output."""
import pytest

from .mpi import ok, run


@pytest.fixture(scope="session")
def suite_output(tmp_path_factory):
    return ok(run(["suite.py", str(tmp_path_factory.mktemp("checkpoints"))], timeout=240))
