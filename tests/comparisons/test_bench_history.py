"""docs/benchmarks-history.json: one record per bench run, the latest one matching the page."""
import json
from pathlib import Path

import pytest

from dualgrad.comparisons.bench import history

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_record_has_its_run_and_figures():
    runs = json.loads((DOCS / "benchmarks-history.json").read_text())
    assert isinstance(runs, list) and runs
    for rec in runs:
        assert rec["date"] and rec["commit"] and rec["workloads"]
        for cols in rec["workloads"].values():
            assert all(cell["median_ms"] > 0 for cell in cols.values())


def test_the_latest_record_is_the_pages_latest_run():
    runs = json.loads((DOCS / "benchmarks-history.json").read_text())
    latest = json.loads((DOCS / "benchmarks-latest.json").read_text())
    assert runs[-1]["date"] == latest["date"]
    page = (DOCS / "benchmarks.md").read_text()
    assert f"at commit {runs[-1]['commit']}" in page


def test_append_keeps_earlier_runs(tmp_path):
    run = json.loads((DOCS / "benchmarks-latest.json").read_text())
    path = tmp_path / "h.json"
    history.append(path, history.record(run, "abc1234"))
    history.append(path, history.record(run, "def5678", note="again"))
    runs = json.loads(path.read_text())
    assert [r["commit"] for r in runs] == ["abc1234", "def5678"] and runs[1]["note"] == "again"
    mlp = runs[0]["workloads"][run["workloads"][0]["name"]]
    assert mlp["eager"]["median_ms"] == run["workloads"][0]["columns"]["eager"]["median_ms"]


def test_a_history_that_is_not_a_list_is_refused(tmp_path):
    path = tmp_path / "h.json"
    path.write_text("{}")
    with pytest.raises(ValueError, match="JSON list"):
        history.append(path, {})
