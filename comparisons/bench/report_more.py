"""The run's figures beyond the times table: where each model step's time goes (profile),
its arithmetic against the sgemm rate, and how much each column slows under load."""
from __future__ import annotations

from rich.table import Table

from .cells import KEYS, fmt_time, shown_columns
from .workloads import HEADERS

PROFILED = ("eager", "graph", "graph_opt", "compiled")


def _table(title, first):
    """A table in the style of the times table (80 columns: short keys, see report.KEYS)."""
    t = Table(title=title, title_justify="left", pad_edge=False, box=None,
              header_style="bold underline")
    t.add_column(first, overflow="fold")
    return t


def profile_table(res):
    rows = [w for w in res["workloads"] if w.get("profile")]
    if not rows:
        return None
    t = _table("where a step goes (ms): kernels, allocation, Python; kernel calls and "
               "Python µs per call (the slowest kernels are listed below)", "model")
    t.add_column("col")
    for h in ("step", "kernels", "alloc", "Python", "calls", "µs/call"):
        t.add_column(h, justify="right")
    for w in rows:
        for col in PROFILED:
            p = w["profile"].get(col)
            if not p or "error" in p:
                continue
            t.add_row(w["name"], KEYS[col], *profile_cells(p)[:-1])
    return t


def slowest_kernels(res) -> list[str]:
    """The profile's slowest kernels, one line per (model, column), for under the table."""
    out = []
    for w in res["workloads"]:
        for col in PROFILED:
            p = (w.get("profile") or {}).get(col)
            if p and "error" not in p:
                out.append(f"{w['name']} {KEYS[col]}: slowest kernels (ms per step, calls) "
                           f"{profile_cells(p)[-1]}")
    return out


def profile_cells(p):
    top = ", ".join(f"{k} {ms:.3f} ({n:g})" for k, ms, n in p["top"][:4])
    return (f"{p['step_ms']:.3f}", f"{p['kernel_ms']:.3f}", f"{p['alloc_ms']:.3f}",
            f"{p['python_ms']:.3f}", f"{p['calls']:g}", f"{p['python_us_per_call']:.2f}", top)


def arithmetic_table(res, cols):
    rows = [w for w in res["workloads"] if w.get("flops")]
    if not rows:
        return None
    rate = res["settings"].get("sgemm_gflops_1thread")
    t = _table(f"arithmetic: MFLOP per step (XLA's count) and the fraction of the "
               f"1-thread sgemm rate ({rate:.0f} GFLOP/s) each column reaches", "model")
    t.add_column("MFLOP", justify="right")
    for c in cols:
        t.add_column(KEYS[c], justify="right")
    for w in rows:
        t.add_row(w["name"], f"{w['flops'] / 1e6:.2f}",
                  *[_pct(w["columns"][c].get("sgemm_fraction")) for c in cols])
    return t


def load_table(res, cols):
    rows = [w for w in res["workloads"]
            if any("load_growth" in c for c in w["columns"].values())]
    if not rows:
        return None
    t = _table(f"under load (a process spinning on core {res['settings'].get('busy_core')})"
               ": loaded median and growth over the unloaded run", "workload")
    for c in cols:
        t.add_column(KEYS[c], justify="right")
    for w in rows:
        t.add_row(w["name"], *[_growth(w["columns"][c]).replace(" (", "\n").rstrip(")")
                               for c in cols])
    return t


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def _growth(c):
    if "load_growth" not in c:
        return "-"
    return f"{fmt_time(c['loaded_median_ms'])} ({c['load_growth']:.2f}x)"


def render_more(res, console, cols):
    for t in (profile_table(res), arithmetic_table(res, cols), load_table(res, cols)):
        if t is not None:
            console.print(t)
    for line in slowest_kernels(res):
        console.print(line, highlight=False)


def markdown(res):
    """The run's tables as Markdown (what docs/benchmarks.md carries)."""
    cols = shown_columns(res)
    out = ["| workload | " + " | ".join(HEADERS[c] for c in cols) + " |",
           "|---|" + "---:|" * len(cols)]
    for w in res["workloads"]:
        cells = []
        for c in cols:
            cell = w["columns"][c]
            if not cell.get("median_ms"):
                cells.append(cell["status"])
                continue
            x = cell.get("speedup_vs_eager")
            cells.append(f"{fmt_time(cell['median_ms'])} ±{cell['spread_pct']:.0f}%"
                         + (f" (**{x:.2f}x**)" if x else ""))
        out.append(f"| {w['name']} ({w['size']}) | " + " | ".join(cells) + " |")
    rows = [w for w in res["workloads"] if w.get("profile")]
    if rows:
        out += ["", "| model | column | step ms | kernels ms | alloc ms | Python ms | kernel "
                "calls | Python µs/call | slowest kernels (ms per step, calls) |",
                "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for w in rows:
            for col in PROFILED:
                p = w["profile"].get(col)
                if p and "error" not in p:
                    out.append(f"| {w['name']} | {HEADERS[col]} | " + " | ".join(
                        profile_cells(p)) + " |")
    flops = [w for w in res["workloads"] if w.get("flops")]
    if flops:
        out += ["", "| model | MFLOP/step | " + " | ".join(HEADERS[c] for c in cols) + " |",
                "|---|---:|" + "---:|" * len(cols)]
        for w in flops:
            out.append(f"| {w['name']} | {w['flops'] / 1e6:.2f} | " + " | ".join(
                _pct(w["columns"][c].get("sgemm_fraction")) for c in cols) + " |")
    loaded = [w for w in res["workloads"]
              if any("load_growth" in c for c in w["columns"].values())]
    if loaded:
        out += ["", "| workload (loaded) | " + " | ".join(HEADERS[c] for c in cols) + " |",
                "|---|" + "---:|" * len(cols)]
        for w in loaded:
            out.append(f"| {w['name']} | " + " | ".join(_growth(w["columns"][c])
                                                      for c in cols) + " |")
    return "\n".join(out)
