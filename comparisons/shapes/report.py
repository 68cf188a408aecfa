"""How the observatory's records are shown: the side-by-side table, --explain, and Markdown.

>>> rec = {"bug": "b", "mode": "eager", "status": "raised", "phase": "step 3", "steps": 2,
...        "seconds": 0.01, "line_verdict": "bug line", "msg_line": 7, "bug_line": 7,
...        "exc_type": "ShapeError", "quality": "good", "warnings": []}
>>> cells(rec)["line"]
'✓ 7'
"""
from __future__ import annotations

import os

from rich import box
from rich.console import Console, Group
from rich.measure import Measurement
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

PHASE_STYLE = {"build": "bold green", "before data": "bold green", "first run": "yellow",
               "not explored": "cyan", "never": "bold red"}


def _time(s) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def _warned(rec) -> str:
    ws = rec.get("warnings") or []
    if not ws:
        return ""
    w = ws[0]
    mark = "✓" if w.get("points_to_bug") else "✗"
    return f"warned {mark} {w['line']} (step {w['step']}, ×{w['count']})"


def _phase(rec) -> str:
    """The phase; in compiled mode with the compiled call that raised: the trace that met the
    error ("step 10 (trace 2)"), or a replay of a traced plan. Eager code around it adds nothing."""
    how = rec.get("compiled_call")
    if how == "trace":
        return f"{rec['phase']} (trace {rec['traces']})"
    return rec["phase"] + (" (replay)" if how == "replay" else "")


def cells(rec) -> dict:
    """The table cells of one record: phase, steps, time, line (the message's), tb (the
    innermost traceback frame in the bug file), error."""
    status = rec.get("status")
    if status == "missing":
        return {"phase": "no file",
                "steps": "", "time": "", "line": "", "tb": "", "error": ""}
    if status in ("timeout", "crashed"):
        return {"phase": status, "steps": "", "time": _time(rec.get("seconds")), "line": "",
                "tb": "", "error": rec.get("reason", "")[:60]}
    if status == "unexplored":
        mark = "✓" if rec.get("msg_points_to_bug") else "✗"
        return {"phase": "not explored", "steps": str(rec.get("steps", "")),
                "time": _time(rec.get("seconds")), "line": f"{mark} {rec.get('msg_line')}",
                "tb": "-", "error": "branch not taken"}
    if status == "silent":
        return {"phase": "never", "steps": str(rec.get("steps", "")),
                "time": _time(rec.get("seconds")), "line": "-", "tb": "-",
                "error": _warned(rec) or "nothing"}
    v = rec["line_verdict"]
    line = (f"✓ {rec['bug_line']}" if v == "bug line" else
            f"✗ {rec['msg_line']} (bug {rec['bug_line']})" if v.startswith("other") else
            "✗ framework")
    err = rec.get("exc_type", "")
    if rec.get("quality") == "framework failure":
        err += " [framework failure]"
    tb = "✓" if rec.get("tb_is_bug") else f"✗ {rec.get('tb_line')}"
    return {"phase": _phase(rec), "steps": str(rec.get("steps", "")),
            "time": _time(rec.get("seconds")), "line": line, "tb": tb, "error": err}


def _by_bug(records):
    out = {}
    for r in records:
        out.setdefault(r["bug"], {})[r["mode"]] = r
    return out


def table(records, modes) -> Table:
    """The matrix: one row per bug; per mode: phase, steps before it, time to it, the line the
    message names ✓/✗, the traceback's last line in the file ✓/✗, exception (wide
    terminals; `rows` is the same at 80 columns)."""
    shown = [m for m in modes if any(r["mode"] == m for r in records)]
    t = Table(title="Where each shape bug surfaces", box=box.SIMPLE_HEAVY, show_lines=True)
    t.add_column("bug", style="bold", no_wrap=True)
    for m in shown:
        t.add_column(f"{m}\nphase")
        t.add_column("steps", justify="right")
        t.add_column("time", justify="right")
        t.add_column("line")
        t.add_column("tb")
        t.add_column("error")
    for bug, per_mode in _by_bug(records).items():
        row = [bug]
        for m in shown:
            c = cells(per_mode.get(m, {"status": "missing"}))
            phase = Text(c["phase"], style=PHASE_STYLE.get(c["phase"].split(" (")[0], ""))
            row += [phase, c["steps"], c["time"], _mark(c["line"]), _mark(c["tb"]), c["error"]]
        t.add_row(*row)
    return t


LEGEND = ("phase: build (graph refused it while being built), before data (`dualgrad check` "
          "found it on meta tensors), not explored (check: a branch it did not take), first run "
          "(before step 1 finished), step k, never (ran to its end; steps run); (trace N): "
          "raised by compiled trace N. line: the line the message names, ✓ when it is the # BUG line. tb: the "
          "traceback's last line in the bug file, ✓ when it is the # BUG line.")


def rows(records, modes) -> Table:
    """One row per (bug, mode), under a row naming the bug: fits 80 columns. What does not
    fit in a cell goes to `footnotes`, printed under the table."""
    shown = [m for m in modes if any(r["mode"] == m for r in records)]
    t = Table(title="Where each shape bug surfaces", box=None, pad_edge=False,
              header_style="bold underline",
              title_justify="left")
    for name in ("bug / mode", "phase", "time", "line", "tb", "error"):
        t.add_column(name, justify="right" if name == "time" else "left", overflow="fold")
    for bug, per_mode in _by_bug(records).items():
        t.add_row(Text(bug, style="bold"), "", "", "", "", "")
        for m in shown:
            rec = per_mode.get(m, {"status": "missing"})
            c = cells(rec)
            phase = c["phase"] if rec.get("status") != "silent" else f"never ({c['steps']})"
            t.add_row(f"  {m}", Text(phase, style=PHASE_STYLE.get(c["phase"].split(" (")[0],
                                                                     "")),
                      c["time"], _mark(c["line"].split(" (")[0]), _mark(c["tb"]),
                      _short_error(rec, c))
    return t


def _short_error(rec, c) -> str:
    if rec.get("status") == "silent":
        ws = rec.get("warnings") or []
        return f"warned {'✓' if ws[0].get('points_to_bug') else '✗'} ×{ws[0]['count']}" \
            if ws else "nothing"
    if rec.get("status") in ("timeout", "crashed"):
        return "see below"
    return c["error"].replace(" [framework failure]", " !")


def footnotes(records) -> list[str]:
    """What the rows leave out: the bug line when the message names another, warnings,
    framework failures, timeouts and crashes; one sentence each."""
    out = []
    for rec in records:
        who, status = f"{rec['bug']} ({rec['mode']})", rec.get("status")
        if status == "raised" and rec.get("line_verdict", "").startswith("other"):
            out.append(f"{who}: the message names line {rec['msg_line']}; the # BUG is line "
                       f"{rec['bug_line']}.")
        if rec.get("quality") == "framework failure":
            out.append(f"{who}: ! framework failure: {rec.get('first_line', '')}")
        if status == "silent" and rec.get("warnings"):
            w = rec["warnings"][0]
            out.append(f"{who}: {_warned(rec)}: {w['message'].splitlines()[0]}")
        if status in ("timeout", "crashed"):
            out.append(f"{who}: {status}: {rec.get('reason', '')}")
    return out


def _mark(cell) -> Text:
    return Text(cell, style="green" if cell.startswith("✓") else
                "red" if cell.startswith("✗") else "")


def _source_line(rec) -> str:
    try:
        with open(rec["file"]) as f:
            return f.read().splitlines()[rec["bug_line"] - 1].strip()
    except (OSError, KeyError, TypeError, IndexError):
        return ""


def explain(records) -> Group:
    """Each mode's full message and traceback, one above the other."""
    parts = []
    for rec in records:
        c = cells(rec)
        head = Text.assemble((f"{rec['mode']}", "bold"), f": {c['phase']}",
                             f" after {rec.get('steps', 0)} steps, {c['time']}"
                             if rec.get("status") in ("raised", "silent") else "")
        body = []
        if rec.get("file"):
            rel = os.path.relpath(rec["file"])
            body.append(Text(f"bug at {rel}:{rec.get('bug_line')}: {_source_line(rec)}",
                             style="dim"))
        if rec.get("status") == "raised":
            body.append(Text(f"line: {c['line']}    traceback ends in the file at line "
                             f"{rec.get('tb_line')} ({'✓' if rec.get('tb_is_bug') else '✗'})"
                             f"    quality: {rec['quality']}"))
            body.append(Text(f"\n{rec['exc_type']}: {rec['message']}\n", style="bold red"))
            body.append(Syntax(rec["traceback"].rstrip(), "pytb", word_wrap=True,
                               theme="ansi_dark"))
        elif rec.get("status") == "silent":
            body.append(Text("no exception: the script ran to its end", style="bold red"))
            for w in rec.get("warnings") or []:
                body.append(Text(f"{w['category']} at {os.path.relpath(w['file'])}:"
                                 f"{w['line']} from step {w['step']} (×{w['count']}): "
                                 f"{w['message']}", style="yellow"))
            if not rec.get("warnings"):
                body.append(Text("no warning either"))
        else:
            body.append(Text(rec.get("reason", rec.get("status", "")), style="yellow"))
            if rec.get("stderr"):
                body.append(Text(rec["stderr"]))
        parts.append(Panel(Group(*body), title=head, title_align="left"))
    return Group(*parts)


def fits(console, renderable) -> bool:
    """Whether `renderable` prints within the console's width without squeezing a cell."""
    wide = console.options.update_width(10 ** 4)
    return Measurement.get(console, wide, renderable).maximum <= console.width


def print_table(records, modes, console=None):
    """The matrix when the terminal is wide enough for it, else one row per (bug, mode);
    the legend and footnotes wrap under the table."""
    console = console or Console()
    matrix = table(records, modes)
    if fits(console, matrix):
        console.print(matrix)
    else:
        console.print(rows(records, modes))
        for line in footnotes(records):
            console.print(line, highlight=False)
    console.print(Text(LEGEND, style="dim"))


def print_explain(records, console=None):
    console = console or Console()
    if records:
        console.print(Text(f"{records[0]['bug']}: {records[0].get('title', '')}", style="bold"))
    console.print(explain(records))



def _glance(rec) -> str:
    """One Markdown cell: where the bug surfaced and whether the message names its line."""
    c = cells(rec)
    if rec.get("status") == "silent":
        ws = rec.get("warnings") or []
        return (f"never; warns ×{ws[0]['count']} {'✓' if ws[0].get('points_to_bug') else '✗'}"
                if ws else "never; silent")
    if rec.get("status") == "unexplored":
        return f"not explored {c['line']}"
    if rec.get("status") != "raised":
        return c["phase"]
    phase = _phase(rec).replace(" (", ", ").rstrip(")")
    phase = f"**{phase}**" if phase in ("build", "before data") else phase
    return f"{phase} {c['line'].split(' (')[0] if c['line'].startswith('✗') else '✓'}"


def markdown(records, modes) -> str:
    """The run as Markdown, what docs/shape-errors.md quotes: one row per (bug, mode) with
    every cell, then one row per bug with where it surfaced in each mode."""
    shown = [m for m in modes if any(r["mode"] == m for r in records)]
    cols = ("phase", "steps", "time", "line", "tb", "error")
    lines = ["| bug | mode | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
    by_bug = _by_bug(records)
    for bug, per_mode in by_bug.items():
        for m in shown:
            c = cells(per_mode.get(m, {"status": "missing"}))
            row = [f"`{bug}`", m] + [c[col] for col in cols]
            lines.append("| " + " | ".join(x.replace("|", "\\|") for x in row) + " |")
    lines += ["", "| bug | " + " | ".join(shown) + " |", "|---" * (len(shown) + 1) + "|"]
    for bug, per_mode in by_bug.items():
        lines.append(f"| `{bug}` | " + " | ".join(
            _glance(per_mode.get(m, {"status": "missing"})) for m in shown) + " |")
    return "\n".join(lines) + "\n"
