"""`dualgrad bench --distributed`: 1 and 2 ranks, steps/s, efficiency, bytes, state bytes."""
import json

from dualgrad.comparisons.cli import main

from .mpi import mpiexec_path


def test_bench_distributed_quick_reports_both_rank_counts(tmp_path, capsys):
    mpiexec_path()                       # skips without the dist extra
    out = tmp_path / "dist.json"
    assert main(["bench", "--distributed", "mlp", "--quick", "--no-torch",
                 "--json", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "steps/s" in shown and "bytes/step" in shown and "average" in shown
    measured = json.loads(out.read_text())
    one, two = measured["results"]["1"], measured["results"]["2"]
    assert set(one) == set(two) == {"mlp/dualgrad ddp", "mlp/dualgrad ddp compiled",
                                     "mlp/dualgrad fsdp"}
    params = one["mlp/dualgrad ddp"]["state_bytes"] // 3      # SGD+momentum: p, grad, buffer
    for name in ("mlp/dualgrad ddp", "mlp/dualgrad ddp compiled"):
        assert two[name]["bytes_per_step"] == params + 8       # gradients + the mean loss
        assert two[name]["state_bytes"] == one[name]["state_bytes"]
        assert two[name]["steps_per_s"] > 0
    assert two["mlp/dualgrad fsdp"]["state_bytes"] * 2 == one["mlp/dualgrad fsdp"]["state_bytes"]


def test_bench_distributed_refuses_other_models_and_flags(capsys):
    assert main(["bench", "--distributed", "cnn"]) != 0
    assert "runs mlp and transformer" in capsys.readouterr().err
    assert main(["bench", "--no-torch"]) != 0
    assert "--no-torch goes with --distributed" in capsys.readouterr().err


def test_a_failed_rank_is_named_on_the_one_line_the_cli_prints(monkeypatch, capsys):
    """The CLI prints an error's first line only: a failed launch puts the ranks' own reason
    there (it said "failed (6):" and hid the stderr below it)."""
    import subprocess
    from dualgrad.comparisons.bench import distributed

    stderr = ("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
              "\ndualgrad.distributed: rank 1 of 2: raised OSError: disk full (aborting all "
              "ranks: MPI_Abort)\nAbort(1) on node 1 (rank 1 in comm 0)\n")

    def fake_run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 6, stdout="", stderr=stderr)
    monkeypatch.setattr(distributed.subprocess, "run", fake_run)
    monkeypatch.setattr(distributed, "_save_batches", lambda *a: None)
    assert main(["bench", "--distributed", "mlp", "--quick", "--no-torch"]) != 0
    line = capsys.readouterr().err.strip().splitlines()[0]
    assert "exit code 6" in line and "rank 1 of 2: raised OSError: disk full" in line
