"""Show one bench run: a rich table of medians, spreads and speed-ups against eager, the
first-call (warm-up / compile) times apart, the optimiser's report beside; a JSON file;
a bar chart of the speed-ups."""
from __future__ import annotations

import json

from rich.table import Table
from rich.text import Text

from .cells import KEYS, fmt_time, shown_columns
from .report_more import render_more
from .workloads import COLUMNS, HEADERS


def legend(cols) -> str:
    return "; ".join(f"{KEYS[c]} = {HEADERS[c]}" for c in cols if KEYS[c] != HEADERS[c])


def _table(title, cols) -> Table:
    t = Table(title=title, title_justify="left", pad_edge=False, box=None,
              header_style="bold underline")
    t.add_column("workload", overflow="fold")
    for c in cols:
        t.add_column(KEYS[c], justify="right", overflow="fold")
    return t


def _cell(c) -> Text:
    if c["status"] == "skipped":
        return Text("skipped", style="dim")
    if c["status"] == "error":
        return Text("error", style="red")
    t = Text(fmt_time(c["median_ms"]))
    t.append(f"\n±{c['spread_pct']:.0f}%", style="dim")
    x = c.get("speedup_vs_eager")
    if x is not None:
        t.append(f"\n{x:.2f}x", style="green" if x > 1.05 else "red" if x < 0.95 else "")
    return t


def times_table(res) -> Table:
    cols = shown_columns(res)
    t = _table("median time per step (per op for dispatch), ±spread (max-min)/median, "
               "speed-up vs eager", cols)
    for w in res["workloads"]:
        t.add_row(Text(f"{w['name']}\n{w['size']}"), *[_cell(w["columns"][c]) for c in cols])
    return t


def warmup_table(res) -> Table:
    cols = shown_columns(res)
    t = _table("first call (build + trace/optimise/compile + one step), seconds", cols)
    for w in res["workloads"]:
        row = []
        for c in cols:
            cell = w["columns"][c]
            row.append(f"{cell.get('build_s', 0) + cell['first_call_s']:.3f}"
                       if "first_call_s" in cell else "-")
        t.add_row(w["name"], *row)
    return t


def optimizer_lines(res) -> list[str]:
    out = []
    for w in res["workloads"]:
        r = w.get("optimizer_report")
        if not r:
            continue
        fuse = next((p["details"] for p in r["passes"] if p["name"] == "fuse"), "")
        out.append(f"{w['name']}: {r['nodes_before']} -> {r['nodes_after']} nodes"
                   + (f"; {fuse}" if fuse else ""))
    return out


def notes(res) -> list[str]:
    """Skipped and failed columns, each reason once."""
    seen, out = set(), []
    for w in res["workloads"]:
        for c in COLUMNS:
            cell = w["columns"][c]
            if cell["status"] == "ok" or cell["note"] == "not selected":
                continue
            key = (c, cell["note"])
            if key not in seen:
                seen.add(key)
                out.append(f"{HEADERS[c]} {cell['status']}: {cell['note']}"
                           + ("" if cell["status"] == "skipped" else f" ({w['name']})"))
    return out


def render(res, console):
    m = res["machine"]
    console.print(f"[bold]dualgrad bench[/] {'(quick) ' if res['quick'] else ''}on {m['cpu']}, "
                  f"{m['usable_cores']} cores; numpy {m['numpy']}, numba {m['numba']}, "
                  f"jax {m['jax'] or '-'}, torch {m['torch'] or '-'}; load average "
                  f"{m.get('loadavg_before')} -> {m.get('loadavg_after')}; NumPy BLAS threads "
                  f"{res['settings'].get('blas_threads', 'default')}, kernels "
                  f"{m.get('blas_kernels') or '?'}")
    console.print(times_table(res))
    console.print(warmup_table(res))
    lines = optimizer_lines(res)
    if lines:
        console.print("[bold]optimiser report[/] (graph, optimize=True)")
        for line in lines:
            console.print("  " + line, highlight=False)
    render_more(res, console, shown_columns(res))
    console.print(f"[dim]{legend(shown_columns(res))}[/]", highlight=False)
    for line in notes(res):
        console.print(f"[dim]note: {line}[/]", highlight=False)
    console.print(f"[dim]total {res['total_s']:.1f} s[/]")


def write_json(res, path):
    with open(path, "w") as f:
        json.dump(res, f, indent=1, default=str)


def plot(res, path):
    """Grouped bars of speed-up vs eager (log scale), one group per workload."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [w["name"] for w in res["workloads"]]
    cols = [c for c in COLUMNS if c != "eager" and any(
        w["columns"][c].get("speedup_vs_eager") for w in res["workloads"])]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(names)), 4))
    width = 0.8 / max(1, len(cols))
    for i, c in enumerate(cols):
        vals = [w["columns"][c].get("speedup_vs_eager") or 0 for w in res["workloads"]]
        ax.bar([k + i * width for k in range(len(names))], vals, width, label=HEADERS[c])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))], names)
    ax.set_ylabel("speed-up vs dualgrad eager (x)")
    ax.set_title(f"dualgrad bench on {res['machine']['cpu']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

