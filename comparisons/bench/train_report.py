"""Tables of a realistic-tier run (train_tier.run_tier) in the terminal, and the generated
sections of docs/benchmarks.md (both tiers), which are never typed:

    dualgrad bench all --profile --load --json small.json
    dualgrad bench --size train --load --profile --json train.json
    python -m dualgrad.comparisons.bench.train_report --docs docs/benchmarks.md \
        --small small.json --commit COMMIT --train train.json

replaces what lies between each tier's two markers on that page with the run's tables (with
`--load`, the growth of each column with a busy second core, from the same run).
"""
from __future__ import annotations

import json
import sys

from .cells import fmt_time
from .train_tier import COLUMNS, HEADERS

BEGIN, END = "<!-- train-tier: begin (generated) -->", "<!-- train-tier: end -->"
SMALL = ("<!-- small-tier: begin (generated) -->", "<!-- small-tier: end -->")


def _ms(c):
    return fmt_time(c["median_ms"]) if c.get("median_ms") else c.get("status", "-")


def _share(c):
    return f"{c['gflops']:.1f} ({100 * c['sgemm_share']:.0f}%)" if c.get("gflops") else "-"


def _mib(c):
    return f"{c['peak_bytes'] / 2 ** 20:.1f}" if c.get("peak_bytes") is not None else "-"


def _first(c):
    return f"{c['first_call_s']:.2f}" if "first_call_s" in c else "-"


def _growth(c):
    return f"{c['load_growth']:.2f}x" if c.get("load_growth") else "-"


METRICS = (("median step time", _ms), ("GFLOP/s (share of the 1-thread sgemm rate)", _share),
           ("peak memory per step, MiB", _mib), ("first call, s", _first))


def _ratio(cells, a, b):
    x, y = cells.get(a, {}).get("median_ms"), cells.get(b, {}).get("median_ms")
    return f"{x / y:.2f}" if x and y else "-"


def tables(res):
    """[(title, header, rows)] for every table of the run."""
    cols = [c for c in COLUMNS if c in res["columns"]]
    out = []
    for title, fmt in METRICS:
        rows = [[name] + [fmt(cells.get(c, {})) for c in cols]
                for name, cells in res["models"].items()]
        out.append((title, ["model"] + cols, rows))
    goals = [[name, _ratio(cells, "comp", "torch1"), _ratio(cells, "eager", "torch1"),
              _ratio(cells, "opt", "jax"), _share(cells.get("comp", {}))]
             for name, cells in res["models"].items()]
    out.append(("goals: comp / torch1 <= 0.9, eager / torch1 <= 1.1, sgemm share >= 60%",
                ["model", "comp/torch1", "eager/torch1", "opt/jax", "comp GFLOP/s (share)"],
                goals))
    if any(c.get("load_growth") for cells in res["models"].values() for c in cells.values()):
        rows = [[name] + [_growth(cells.get(c, {})) for c in cols]
                for name, cells in res["models"].items()]
        out.append(("growth with a process spinning on the other core (loaded / quiet)",
                    ["model"] + cols, rows))
    if res.get("neighbour"):
        rows = [[n, f"{p['alone_ms']:.1f}", f"{p['after_ms']:.1f}",
                 f"{p['after_ms'] / p['alone_ms']:.2f}",
                 f"{p['after_numpy_ms'] / p['alone_ms']:.2f}" if "after_numpy_ms" in p else "-",
                 f"{p['torch_threads']} -> {p.get('torch_threads_after', '?')}"]
                if "alone_ms" in p else [n, p.get("error", "-"), "-", "-", "-", "-"]
                for n, p in res["neighbour"].items()]
        out.append(("a PyTorch step before any dualgrad call and right after a compiled "
                    "dualgrad step (ms); the ratio right after a plain NumPy product instead "
                    "(numpy); PyTorch's thread count before -> after",
                    ["model", "alone", "after", "ratio", "numpy", "threads"], rows))
    prof = _profile_rows(res)
    if prof:
        out.append(("where a step goes (ms per step; kernels = op kernels without their "
                     "allocations)", ["model", "column", "step", "kernels", "alloc", "Python",
                                      "slowest kernels (ms, calls)"], prof))
    return out


def _profile_rows(res):
    rows = []
    for name, cells in res["models"].items():
        for col in ("eager", "opt", "comp"):
            p = cells.get(col, {}).get("profile")
            if not p or "error" in p:
                continue
            top = ", ".join(f"{k} {ms:.1f} ({calls:.0f})" for k, ms, calls in p["top"][:4])
            rows.append([name, col, f"{p['step_ms']:.1f}", f"{p['kernel_ms']:.1f}",
                         f"{p['alloc_ms']:.1f}", f"{p['python_ms']:.1f}", top])
    return rows


def legend():
    return "; ".join(f"{c} = {HEADERS[c]}" for c in COLUMNS)


def render(res, console):
    from rich.table import Table
    for title, header, rows in tables(res):
        t = Table(title=title, title_justify="left", box=None, pad_edge=False,
                  header_style="bold underline")
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i == 0 or h == "column" else "right",
                         overflow="fold")
        for r in rows:
            t.add_row(*r)
        console.print(t)
    console.print(legend(), highlight=False)
    console.print(f"1-thread sgemm {res['sgemm_gflops_1thread']:.0f} GFLOP/s; load average "
                  f"{res['loadavg_before']} -> {res['loadavg_after']}; {res['total_s']:.0f} s",
                  highlight=False)


def markdown(res) -> str:
    m = res["machine"]
    lines = [f"Run of {res.get('date', '?')}: {m['cpu']}, {m['cores']} cores, numpy "
             f"{m['numpy']}, numba {m['numba']}, jax {m['jax']}, torch {m['torch']}; "
             f"NumPy's BLAS kernels {m.get('blas_kernels') or '?'}; "
             f"1-thread sgemm {res['sgemm_gflops_1thread']:.0f} GFLOP/s; 1-minute load "
             f"average {res['loadavg_before']} before, {res['loadavg_after']} after; "
             f"{res['settings']['rounds']} rounds of {res['settings']['steps']} steps per "
             f"column; {res['total_s']:.0f} s. Columns: {legend()}."]
    for title, header, rows in tables(res):
        lines += ["", f"**{title}**", "", "| " + " | ".join(header) + " |",
                  "|---|" + "---:|" * (len(header) - 1)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def small_markdown(res, commit) -> str:
    """The small tier's run (`dualgrad bench --json`) as the page shows it."""
    from .report_more import markdown as tables_md
    m, st = res["machine"], res["settings"]
    loaded = m.get("loadavg_before_loaded") is not None
    profiled = any(w.get("profile") for w in res["workloads"])
    flags = "".join([" --profile" if profiled else "", " --load" if loaded else ""])
    head = (f"`dualgrad bench all{flags}` at commit {commit}, {res['date']}: "
            f"{m['cpu']}, {m['cores']} cores, numpy {m['numpy']}, numba {m['numba']}, jax "
            f"{m['jax']}, torch {m['torch']}; NumPy's BLAS kernels {m.get('blas_kernels') or '?'}; "
            f"1-thread sgemm {st['sgemm_gflops_1thread']:.0f} "
            f"GFLOP/s; 1-minute load average {m.get('loadavg_before')} before, "
            f"{m.get('loadavg_after')} after the table"
            + (f", {m['loadavg_before_loaded']} -> {m.get('loadavg_after_loaded')} over the "
               f"loaded half" if loaded else "") + f"; {res['total_s']:.0f} s. "
            "Per cell the median per step and its spread, speed-up over eager in brackets"
            + ("; then where each model step goes" if profiled else "")
            + ", the share of the 1-thread sgemm rate per column"
            + (", and the loaded medians with their growth" if loaded else "") + ".")
    return head + "\n\n" + tables_md(res)


def write_section(path, markers, text):
    """Replace what lies between `markers` on the page at `path` with `text` (or what the
    callable `text` returns, made only once the page is known to have the section)."""
    begin, end = markers
    with open(path) as f:
        page = f.read()
    if begin not in page or end not in page:
        raise ValueError(f"{path}: no generated section (the markers {begin!r} and {end!r})")
    head, rest = page.split(begin, 1)
    tail = rest.split(end, 1)[1]
    text = text() if callable(text) else text
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")


def write_docs(res, path):
    """Replace the realistic tier's generated section of docs/benchmarks.md with `res`."""
    write_section(path, (BEGIN, END), lambda: markdown(res))


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(prog="python -m dualgrad.comparisons.bench.train_report")
    p.add_argument("--docs", required=True, metavar="PAGE")
    p.add_argument("--train", metavar="JSON", help="a `dualgrad bench --size train --json` run")
    p.add_argument("--small", metavar="JSON", help="a `dualgrad bench --json` run")
    p.add_argument("--commit", help="the commit the small run measured")
    args = p.parse_args(argv)
    if args.small:
        with open(args.small) as f:
            write_section(args.docs, SMALL, small_markdown(json.load(f), args.commit))
    if args.train:
        with open(args.train) as f:
            write_docs(json.load(f), args.docs)


if __name__ == "__main__":
    main(sys.argv[1:])
