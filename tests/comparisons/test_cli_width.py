"""Every table the CLI prints is readable at 80 columns: no cell cut to `…`, no line wider
than the terminal. Each command runs as a user runs it, with the terminal 80 columns wide."""
from __future__ import annotations

import pytest

from dualgrad.comparisons.cli import main

WIDTH = 80

COMMANDS = [
    ["tour", "--epochs", "1"],
    ["train", "transformer", "--mode", "all", "--epochs", "1"],
    ["bench", "transformer", "--quick"],
    ["bench", "layernorm", "--quick"],
    ["graph", "transformer", "--optimized"],
    ["graph", "rnn", "--train"],
    ["shapes", "cnn_flatten", "broadcast_loss", "last_batch"],
    ["shapes", "last_batch", "--explain"],
    ["shapes", "--list"],
    ["--help"], ["train", "--help"], ["bench", "--help"], ["graph", "--help"],
    ["shapes", "--help"], ["tour", "--help"], ["cache", "info"], ["cache", "--help"],
]


def _fits(text):
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not wide, f"{len(wide)} lines wider than {WIDTH}, e.g.\n{wide[0]}"
    assert "…" not in text, next(line for line in text.splitlines() if "…" in line)


@pytest.mark.slow
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_output_fits_80_columns(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.strip()
    _fits(out)


def test_the_shapes_matrix_is_used_only_when_it_fits():
    """A wide terminal gets one row per bug (modes side by side); 80 columns one row per
    (bug, mode), with what does not fit written under the table."""
    from rich.console import Console
    from dualgrad.comparisons.shapes import report
    rec = {"bug": "cnn_flatten", "status": "raised", "phase": "first run", "steps": 0,
           "seconds": 0.003, "line_verdict": "other line 37", "msg_line": 37, "bug_line": 28,
           "tb_is_bug": False, "tb_line": 37, "exc_type": "ShapeMismatchError",
           "quality": "downstream", "warnings": []}
    records = [{**rec, "mode": m} for m in ("eager", "graph", "compiled")]
    for width, matrix in ((WIDTH, False), (400, True)):
        console = Console(width=width, record=True)
        report.print_table(records, ["eager", "graph", "compiled"], console)
        text = console.export_text()
        _fits(text) if width == WIDTH else None
        assert ("bug / mode" in text) is not matrix
        assert ("the # BUG is line 28" in text) is not matrix


def test_every_bench_table_fits_with_every_column_and_the_profile():
    """The full run's tables (all seven columns, --torch-compile, the profile, the arithmetic
    and the --load table) at 80 columns, from a result built here."""
    from rich.console import Console
    from dualgrad.comparisons.bench import COLUMNS, report
    from dualgrad.comparisons.bench.report_more import PROFILED
    prof = {"step_ms": 123.456, "kernel_ms": 100.123, "alloc_ms": 10.5, "python_ms": 12.8,
            "calls": 12345, "python_us_per_call": 10.37,
            "top": [("matmul", 12.345, 30), ("unfold", 3.2, 4), ("add", 1.0, 100)]}
    cell = {"status": "ok", "note": "", "median_ms": 1234.5, "spread_pct": 160,
            "speedup_vs_eager": 11.09, "sgemm_fraction": 0.174, "loaded_median_ms": 25.2,
            "load_growth": 1.27, "first_call_s": 15.391, "build_s": 100.2}
    res = {"quick": False, "total_s": 1.0,
           "machine": {"cpu": "AMD EPYC", "usable_cores": 2, "numpy": "2", "numba": "0.6",
                       "jax": "0.10", "torch": "2.13"},
           "settings": {"sgemm_gflops_1thread": 100, "busy_core": 1},
           "workloads": [{"name": name, "size": "2^18 elements",
                          "columns": {c: dict(cell) for c in COLUMNS},
                          "profile": {c: prof for c in PROFILED}, "flops": 3.1e7}
                         for name in ("transformer", "layernorm")]}
    console = Console(width=WIDTH, record=True)
    report.render(res, console)
    text = console.export_text()
    _fits(text)
    assert "tc = torch.compile" in " ".join(text.split())
    assert "transformer opt: slowest kernels" in text


def test_the_distributed_table_fits():
    from rich.console import Console
    from dualgrad.comparisons.bench import distributed
    peer = {"steps_per_s": 12345.6, "bytes_per_step": 12_345_678, "state_bytes": 123_456_789}
    names = [f"transformer/dualgrad {p}" for p, _, _ in distributed.PEERS] + \
        ["transformer/torch ddp (gloo)"]
    measured = {"machine": {"cpu": "AMD EPYC", "cores": 2}, "steps": 20, "warm_up": 3,
                "load_average": {"before": [12.1, 0, 0], "after": [14.4, 0, 0]},
                "results": {str(n): {k: dict(peer) for k in names} for n in (1, 2)}}
    console = Console(width=WIDTH, record=True)
    distributed.render(measured, console)
    _fits(console.export_text())


def test_the_train_tier_tables_fit():
    from rich.console import Console
    from dualgrad.comparisons.bench import train_report, train_tier
    prof = {"step_ms": 12345.6, "kernel_ms": 10000.1, "alloc_ms": 100.5, "python_ms": 1234.8,
            "top": [("softmax_cross_entropy", 1234.5, 300), ("unfold", 3.2, 4)]}
    cell = {"status": "ok", "median_ms": 12345.6, "gflops": 123.4, "sgemm_share": 1.234,
            "peak_bytes": 12345 * 2 ** 20, "first_call_s": 123.45, "load_growth": 12.34,
            "profile": prof}
    res = {"columns": list(train_tier.COLUMNS), "sgemm_gflops_1thread": 100.0,
           "loadavg_before": 12.3, "loadavg_after": 14.5, "total_s": 3600.0,
           "models": {n: {c: dict(cell) for c in train_tier.COLUMNS}
                      for n in ("mlp", "cnn", "gpt", "lstm")},
           "neighbour": {"gpt, torch default threads": {"alone_ms": 12345.6, "torch_threads": 2,
                                                        "after_ms": 123456.7}}}
    console = Console(width=WIDTH, record=True)
    train_report.render(res, console)
    _fits(console.export_text())
