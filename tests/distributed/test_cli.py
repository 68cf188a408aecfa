"""`mpiexec -n 2 dualgrad train MODEL --distributed ...`: rank 0 reports one process's run."""
import re
import sys

from dualgrad.comparisons.cli import main
from dualgrad.comparisons.training import train

from .mpi import ok, run


def test_fsdp_training_on_two_ranks_takes_the_steps_of_one_process():
    out = ok(run([sys.executable, "-m", "dualgrad.comparisons.cli", "train", "mlp",
                  "--distributed", "fsdp", "--epochs", "1"], timeout=120))
    assert out.count("mlp (eager, fsdp on 2 ranks): 1 epoch, 21 steps") == 1   # rank 0 only
    loss = float(re.search(r"final loss\s+([\d.]+)", out).group(1))
    (one,) = train("mlp", "eager", epochs=1)
    assert abs(loss - one.losses[-1]) < 1e-3


def test_graph_mode_shards_nothing_so_fsdp_is_refused(capsys):
    assert main(["train", "mlp", "--mode", "graph", "--distributed", "fsdp"]) != 0
    assert "fsdp is eager-only" in capsys.readouterr().err
