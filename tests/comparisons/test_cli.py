"""`dualgrad` end to end: each subcommand runs (quick settings), exits 0 and prints what it
claims (the timings table, the training summary line, the graph's gradient nodes); `--json`
holds every column; command-line mistakes are one line on stderr, naming the mistake, and a
non-zero exit."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest

from dualgrad.comparisons.bench import COLUMNS
from dualgrad.comparisons.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CELL_KEYS = {"status", "note"}
TIMED_KEYS = {"median_ms", "min_ms", "max_ms", "spread_pct", "build_s", "first_call_s",
              "number", "repeat"}


def _one_line_error(capsys, rc):
    out = capsys.readouterr()
    assert rc != 0
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dualgrad: error:"), out.err
    assert "Traceback" not in out.err + out.out
    return lines[0]


def test_bench_quick_json_has_every_column(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert main(["bench", "mlp", "--quick", "--json", str(path)]) == 0
    res = json.loads(path.read_text())
    assert set(res["machine"]) >= {"cpu", "cores", "numpy", "numba", "python"}
    (w,) = res["workloads"]
    assert w["name"] == "mlp" and set(w["columns"]) == set(COLUMNS)
    for col, cell in w["columns"].items():
        assert CELL_KEYS <= set(cell), col
        if cell["status"] == "ok":
            assert TIMED_KEYS <= set(cell), col
            assert cell["median_ms"] > 0
    assert w["columns"]["eager"]["status"] == "ok"
    assert w["columns"]["graph"]["status"] == "ok"
    assert w["columns"]["eager"]["speedup_vs_eager"] == pytest.approx(1.0)
    assert w["columns"]["compiled"]["status"] == "ok"
    assert "median time" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_all_quick(tmp_path):
    path = tmp_path / "all.json"
    assert main(["bench", "all", "--quick", "--json", str(path)]) == 0
    res = json.loads(path.read_text())
    names = [w["name"] for w in res["workloads"]]
    assert names == ["mlp", "cnn", "rnn", "transformer", "gelu", "layernorm", "dispatch"]
    for w in res["workloads"]:
        assert set(w["columns"]) == set(COLUMNS)
        assert all(w["columns"][c]["status"] == "ok" for c in ("eager", "graph")), w["name"]


_TIME = r"([\d.]+) (?:ns|µs|ms)"


def test_bench_micro_quick(capsys):
    assert main(["bench", "dispatch", "--quick"]) == 0
    out = capsys.readouterr().out
    # NOTE: the row of per-op times: eager, graph, graph optimised, compiled (then jax, torch)
    row = re.search(rf"^dispatch\s+{_TIME}\s+{_TIME}\s+{_TIME}\s+{_TIME}", out, re.M)
    assert row and all(float(t) > 0 for t in row.groups()), out
    assert re.search(r"^\s+1\.00x\s", out, re.M), "eager is the speed-up baseline"
    before, after = map(int, re.search(r"dispatch: (\d+) -> (\d+) nodes", out).groups())
    assert after < before


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_train(mode, capsys):
    assert main(["train", "mlp", "--mode", mode, "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    summary = re.search(rf"mlp \({mode}\): 2 epochs, 42 steps in [\d.]+ s; final loss ([\d.]+); "
                        r"held-out accuracy ([\d.]+) on 449 digits", " ".join(out.split()))
    assert summary, out
    loss, acc = map(float, summary.groups())
    assert math.isfinite(loss) and loss < 1.0 and 0.8 < acc <= 1.0


def test_train_and_tour_run_blas_on_one_thread_by_default(monkeypatch):
    from threadpoolctl import threadpool_info
    from dualgrad.comparisons import cli
    seen = {}

    def spy(args, console):
        seen[args.command] = {p["num_threads"] for p in threadpool_info()
                              if p["user_api"] == "blas"}
    for name in ("train", "tour"):
        monkeypatch.setitem(cli.COMMANDS, name, spy)
    assert main(["train", "mlp"]) == 0 and main(["tour"]) == 0
    assert seen == {"train": {1}, "tour": {1}}
    assert cli._parser().parse_args(["train", "mlp", "--blas-threads", "0"]).blas_threads == 0


def test_train_compiled(capsys):
    assert main(["train", "mlp", "--mode", "compiled", "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "mlp (compiled): 1 epoch, 21 steps" in out
    assert "nan" not in out and out.count("done in") == 1


def test_train_all_modes_plot_and_tensorboard_logs(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    png, logs = tmp_path / "curves.png", tmp_path / "logs"
    assert main(["train", "mlp", "--mode", "all", "--epochs", "2", "--plot", str(png),
                 "--logdir", str(logs)]) == 0
    out = capsys.readouterr().out
    for mode in ("eager", "graph", "compiled"):
        assert f"mlp ({mode}): 2 epochs, 42 steps" in out
        acc = EventAccumulator(str(logs / mode))
        acc.Reload()
        assert [e.step for e in acc.Scalars("accuracy/held_out")] == [1, 2]
        assert len(acc.Scalars("loss/step")) == 42
        if mode == "eager":                         # define-by-run: no graph to show
            assert not acc.Tags()["graph"]
        else:                                       # the Session's graph, or the trace
            assert len(acc.Graph().node) > 10
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_runs_draws_each_mode(tmp_path):
    from dualgrad.comparisons import training
    runs = [training.Run("mlp", m, epoch_loss=[1.0, 0.5], epoch_acc=[0.8, 0.9])
            for m in ("eager", "graph")]
    training.plot_runs(runs, tmp_path / "c.png")
    import matplotlib.image
    assert matplotlib.image.imread(tmp_path / "c.png").shape[1] > 500


def test_small_things(capsys):
    assert main(["--version"]) == 0
    from dualgrad import __version__
    assert capsys.readouterr().out.strip() == f"dualgrad {__version__}"
    line = _one_line_error(capsys, main(["train", "mlp", "--bogus"]))
    assert "unrecognized arguments: --bogus" in line and "'dualgrad train --help'" in line
    line = _one_line_error(capsys, main(["bench", "--json", ""]))
    assert "--json: empty path" in line
    assert main(["train", "mlp", "--mode", "eager", "--no-optimize", "--epochs", "1"]) == 0
    assert "--no-optimize only changes graph mode" in capsys.readouterr().out
    assert main(["train", "mlp", "--mode", "graph", "--no-optimize", "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "warning" not in out and "mlp (graph, optimize=False)" in out


def test_graph_dot_svg(tmp_path, capsys, monkeypatch):
    svg = tmp_path / "g.svg"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))   # no Graphviz
    line = _one_line_error(capsys, main(["graph", "mlp", "--dot", str(svg)]))
    assert "Graphviz's `dot`" in line and "g.dot" in line and not svg.exists()
    # NOTE: a stand-in `dot` that records its arguments and writes what it was given
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "dot").write_text(f"#!{sys.executable}\nimport sys\n"
                              "open(sys.argv[0] + '.args', 'w').write(' '.join(sys.argv[1:]))\n"
                              "open(sys.argv[3], 'w').write(sys.stdin.read())\n")
    (bin_ / "dot").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_))
    assert main(["graph", "mlp", "--dot", str(svg)]) == 0
    assert (bin_ / "dot.args").read_text().split()[:2] == ["-Tsvg", "-o"]
    assert svg.read_text().startswith('digraph "mlp')


def test_graph_view_and_dot(tmp_path, capsys):
    dot = tmp_path / "cnn.dot"
    assert main(["graph", "cnn", "--optimized", "--dot", str(dot)]) == 0
    out = capsys.readouterr().out
    assert "conv1/" in out and "placeholder" in out
    assert dot.read_text().startswith('digraph "cnn')
    assert (tmp_path / "cnn.optimized.dot").read_text().startswith('digraph "cnn')


def test_optimized_view_explains_itself(capsys):
    import re
    assert main(["graph", "mlp", "--optimized"]) == 0
    out = capsys.readouterr().out
    before, after = re.search(r"optimiser: (\d+) -> (\d+) nodes", out).groups()
    built = re.search(rf": (\d+) nodes as built \(2 placeholders, fed; the optimiser starts"
                      rf"\s+from the other {before}\)", out)
    assert built and int(built.group(1)) == int(before) + 2
    assert re.search(rf": {after} nodes after the optimiser", out)
    tree = out.split("nodes after the optimiser")[1]
    assert "kernel  variable  (64, 128)\n" in tree         # a variable, its shape as declared
    assert "x  placeholder (fed)  (64, 64)*" in tree        # specialised to the batch of 64
    assert "* a shape specialised to the fed batch" in out


def test_graph_view_training_step(capsys):
    assert main(["graph", "rnn", "--train"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"rnn training step: \d+ nodes as built \(3 placeholders, fed", out)
    tree = out.split("gradients/")[1]
    assert "MatMul_grad/" in tree and "SparseSoftmaxCrossEntropyWithLogits_grad/" in tree
    assert re.search(r"Momentum\s+variable\s+\(72, 256\)", out), "the LSTM kernel's slot"


def test_tour(capsys):
    assert main(["tour", "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())
    for part in ("1. The same MLP", "2. How fast", "3. One shape bug", "build",
                 "graph epoch 1 includes optimising the graph and compiling its fused kernels"):
        assert part in words
    assert out.count("done in") == 1


@pytest.mark.parametrize("argv, says", [
    (["train", "resnet"], "invalid choice: 'resnet'"),              # unknown model
    (["bench", "nope"], "invalid choice: 'nope'"),                  # unknown workload
    (["train", "mlp", "--mode", "jit"], "--mode: invalid choice: 'jit'"),
    (["train", "mlp", "--epochs", "0"], "--epochs: expected a positive integer, got '0'"),
    (["bench", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["fly"], "invalid choice: 'fly'"),                              # unknown command
    ([], "the following arguments are required: COMMAND"),
    (["bench", "mlp", "--json", "/nonexistent-dir/x.json"], "directory /nonexistent-dir does not exist"),
    (["graph", "mlp", "--dot", "/proc/dualgrad.dot"], "/proc/dualgrad.dot"),
])
def test_cli_errors_are_one_line(argv, says, capsys):
    assert says in _one_line_error(capsys, main(argv))


def test_plot_without_matplotlib_is_one_line(tmp_path, capsys):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        _one_line_error(capsys, main(["bench", "dispatch", "--quick", "--plot",
                                      str(tmp_path / "p.png")]))
    else:
        assert main(["bench", "dispatch", "--quick", "--plot", str(tmp_path / "p.png")]) == 0
        assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_console_script_error_has_no_traceback():
    """Through a real process, as a user runs it."""
    p = subprocess.run([sys.executable, "-m", "dualgrad.comparisons.cli", "train", "resnet"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "invalid choice: 'resnet'" in p.stderr
    assert "Traceback" not in p.stderr
