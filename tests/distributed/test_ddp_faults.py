"""A DDP step interrupted on one rank at its step boundaries (tests/fault_injection.py):
an exception, SIGINT, SIGKILL or an abrupt exit of rank 1 anywhere in forward, backward's
bucketed all-reduce or the optimizer step ends every rank fast (within the process group's
3 s timeout, run() fails a hang with each rank's stack), with a non-zero exit and a message
naming what failed; rank 0 never finishes as if nothing happened.

Budget: one step has about two thousand boundaries; each fault kind is fired at CAP of them
spread evenly over the step (tests/fault_injection.boundaries), one mpiexec launch (under a
second) each. The count varies by a few boundaries from run to run (how often a rank polls
a pending all-reduce), so the spread stops at 95% of the counted step."""
import re

import pytest

from ..fault_injection import boundaries
from .mpi import run

CAP = 6


@pytest.fixture(scope="module")
def step_boundaries():
    proc = run(["ddp_fault.py", "count"], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 counted" in proc.stdout and "rank 1 counted" in proc.stdout
    return int(re.search(r"boundaries (\d+)", proc.stdout).group(1))


WHAT_IT_SAYS = {
    # inside a kernel the OSError arrives as the KernelError naming the op it broke
    "raise": ("rank 1 of 2: raised ", "fault injected at boundary", "aborting all ranks"),
    "sigint": ("rank 1 of 2: raised KeyboardInterrupt", "aborting all ranks"),
    "sigkill": ("BAD TERMINATION", "signal 9"),
    "kill": None,                       # os._exit(86): its own exit status is the message
}


@pytest.mark.parametrize("fault", list(WHAT_IT_SAYS))
def test_a_ddp_step_failing_anywhere_on_one_rank_ends_every_rank(fault, step_boundaries):
    assert step_boundaries > 100
    for k in boundaries(int(step_boundaries * 0.95), CAP):
        proc = run(["ddp_fault.py", fault, str(k)], timeout=30)
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0, (k, said)
        assert "not noticed" not in said and "never fired" not in said, (k, said)
        if WHAT_IT_SAYS[fault] is None:
            # mpiexec's status is the first abnormal end it reaps: rank 1's 86, or, when the
            # machine is loaded, rank 0 killed (signal 9) after it, which hydra then reports
            assert proc.returncode == 86 or (proc.returncode == 9
                                             and "BAD TERMINATION" in said), (k, said)
        else:
            for words in WHAT_IT_SAYS[fault]:
                assert words in said, (k, words, said)
