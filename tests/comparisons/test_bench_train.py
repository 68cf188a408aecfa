"""`dualgrad bench --size train`: the realistic tier, run at tiny sizes (no timing asserts).

Cap: every model at train_models.TINY sizes (a few units per dimension, so a step is
milliseconds); the process-per-column smoke run covers one model (mlp) with one round of one
step, and two columns (compiled: tracemalloc's peak; PyTorch on one thread: its profiler's),
because each column costs a fresh interpreter (~3 s of imports); no neighbour probe.
"""
import json

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.comparisons.bench import train_models as M
from dualgrad.comparisons.bench import train_report, train_tier
from dualgrad.comparisons.bench.train_graph import make_step as graph_step


@pytest.mark.parametrize("name", M.NAMES)
def test_every_style_takes_the_same_first_step(name):
    size = M.TINY[name]
    want = M.build(eager, name, size)()
    assert np.isclose(M.build(eager, name, size, compiled=True)(), want, rtol=1e-5)
    assert np.isclose(graph_step(name, size, optimize=True)(), want, rtol=1e-5)
    jax_models = pytest.importorskip("dualgrad.comparisons.bench.train_jax")
    assert np.isclose(jax_models.make_step(name, size)(), want, rtol=1e-5)
    torch = pytest.importorskip("torch")
    assert np.isclose(M.build(torch, name, size)(), want, rtol=1e-5)


def test_a_tiny_tier_run_fills_every_cell_and_the_docs_section(tmp_path):
    cols = ("comp", "torch1")
    res = train_tier.run_tier(names=("mlp",), sizes=M.TINY, columns=cols, rounds=1, steps=1,
                              neighbour_steps=0)
    cells = res["models"]["mlp"]
    for col in cols:
        if col == "torch1" and cells[col]["status"] == "error":
            pytest.importorskip("torch")
        assert cells[col]["status"] == "ok", cells[col]
        assert cells[col]["median_ms"] > 0 and cells[col]["first_call_s"] > 0
        assert cells[col]["peak_bytes"] > 0 and 0 < cells[col]["sgemm_share"]
    assert len({round(cells[c]["loss"], 5) for c in cols}) == 1
    page = tmp_path / "benchmarks.md"
    page.write_text(f"intro\n{train_report.BEGIN}\nold\n{train_report.END}\nafter\n")
    json.dumps(res)
    train_report.write_docs(res, page)
    text = page.read_text()
    assert "old" not in text and "| mlp |" in text and text.endswith("after\n")
    for title, header, rows in train_report.tables(res):
        assert all(len("  ".join(r)) <= 80 for r in rows if r[0] == "mlp"), title


def test_a_page_without_the_section_is_refused(tmp_path):
    page = tmp_path / "b.md"
    page.write_text("nothing generated here\n")
    with pytest.raises(ValueError, match="no generated section"):
        train_report.write_docs({}, page)


def test_the_cli_refuses_what_the_tier_does_not_do(capsys):
    from dualgrad.comparisons.cli import main
    assert main(["bench", "--size", "train", "--quick"]) != 0
    assert main(["bench", "gelu", "--size", "train"]) != 0
    err = capsys.readouterr().err
    assert "--quick does not go with --size train" in err and "got gelu" in err
