"""What the bench's tables share: times as text, the short column keys, the columns shown."""
from __future__ import annotations

from .workloads import COLUMNS


def fmt_time(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1e3:.2f} s"
    if ms >= 1:
        return f"{ms:.3g} ms"
    return f"{ms * 1e3:.3g} µs"


# NOTE: short column keys keep the tables within 80 columns; LEGEND spells them out
KEYS = {"eager": "eager", "graph": "graph", "graph_opt": "opt", "compiled": "comp",
        "jax": "jax", "torch": "torch", "torch_compile": "tc"}


def shown_columns(res):
    """Columns that ran somewhere (a column skipped everywhere is left to the notes)."""
    return [c for c in COLUMNS if any(w["columns"][c]["status"] != "skipped"
                                      or w["columns"][c]["note"] != "not selected"
                                      for w in res["workloads"])]
