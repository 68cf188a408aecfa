"""The tutorial's accuracy table is the recorded run in docs/accuracy.json, unedited, and the
recording script writes that table from a run."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualgrad.comparisons import accuracy

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_tutorial_table_is_the_recorded_run():
    rec = json.loads((DOCS / "accuracy.json").read_text())
    assert {(r["model"], r["mode"]) for r in rec["runs"]} == \
        {(m, mode) for m in accuracy.MODELS for mode in accuracy.MODES}
    assert accuracy.markdown(rec) in (DOCS / "tutorial.md").read_text()


@pytest.mark.slow
def test_record_trains_and_tabulates():
    rec = accuracy.record(["mlp"], progress=lambda s: None)
    (eager, graph, compiled) = rec["runs"]
    assert [r["mode"] for r in rec["runs"]] == ["eager", "graph", "compiled"]
    assert len(eager["accuracy"]) == eager["epochs"] == 20
    assert eager["accuracy"][-1] == graph["accuracy"][-1] >= 0.95
    table = accuracy.markdown(rec).splitlines()
    assert len(table) == 3 and table[2].startswith("| MLP 64-128-10")
