"""`dualgrad check script.py [args]`: a training script's shape bugs before any data is computed.

An eager script runs until its first optimizer step, with the batches it makes from host data
inside its loops (`from_numpy`, `tensor`, a DataLoader) turned into meta tensors whose
leading dim is the symbol `N` (eager/checking.py): forward, loss, backward and the step run
as shape rules only. A graph script runs until its first `Session.run` with a feed: what
building the graph finds. Every error and warning is reported with its line; a branch the
step did not take, or one on a tensor's value, is reported as not explored.

    dualgrad check train.py --lr 0.1      # the script's own arguments follow it

`run_script(path, argv)` returns the `CheckReport`.
"""
from __future__ import annotations

import ast
import os
import runpy
import sys
import time
import warnings
from collections import defaultdict

from .errors import CliError

__all__ = ["run_script", "add_parser", "handle", "script_kind"]


def script_kind(path) -> str:
    """"graph" for a TF1-style script (it imports dualgrad's graph and not eager), else "eager"."""
    with open(path) as f:
        tree = ast.parse(f.read())
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            names |= {f"{n.module}.{a.name}" for a in n.names}
        elif isinstance(n, ast.Import):
            names |= {a.name for a in n.names}
    uses = lambda part: any(part in name.split(".") for name in names)  # noqa: E731
    return "graph" if uses("graph") and not uses("eager") else "eager"


class _Lines:
    """The lines of `files` that ran (a sys.settrace tracer), and the stop at the first
    `Session.run` with a feed in a graph script."""

    def __init__(self, files, stop_code=None):
        self.files, self.stop_code = set(files), stop_code
        self.ran = defaultdict(set)

    def __call__(self, frame, event, arg):
        code = frame.f_code
        if code is self.stop_code and frame.f_locals.get("feed_dict"):
            from dualgrad.eager.checking import StepDone
            raise StepDone
        if code.co_filename in self.files:
            self.ran[code.co_filename].add(frame.f_lineno)
            return self._line
        return None

    def _line(self, frame, event, arg):
        if event == "line":
            self.ran[frame.f_code.co_filename].add(frame.f_lineno)
        return self._line


def _untaken(path, ran, stopped_at):
    """Findings for the `if` branches of `path` whose test ran but whose body (or else) did not."""
    from dualgrad.eager.checking import Finding
    with open(path) as f:
        src = f.read()
    lines, out = src.splitlines(), []
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.If) or node.lineno not in ran or node.lineno == stopped_at:
            continue
        test = lines[node.lineno - 1].strip()
        for part, taken in ((node.body, "true"), (node.orelse, "false")):
            if part and part[0].lineno not in ran:
                first, last = part[0].lineno, part[-1].end_lineno
                span = f"line {first}" if first == last else f"lines {first}-{last}"
                out.append(Finding(
                    "unexplored", f"not explored: branch at line {first}: `{test}` was never "
                    f"{taken} in the checked step, so {span} did not run", path, first))
    return out


def run_script(path, argv=()) -> "CheckReport":
    """Check the script at `path` (run as `__main__` with `argv`); see the module docstring."""
    from dualgrad.eager.checking import Check, CheckReport, StepDone, finding, warned
    from dualgrad.ops.core import tracing
    path = os.path.abspath(path)
    kind = script_kind(path)
    stop = None
    if kind == "graph":
        from dualgrad import graph
        stop = graph.Session.run.__code__
    lines = _Lines([path], stop)
    report, check = CheckReport(), Check()
    saved_argv, saved_trace = sys.argv, sys.gettrace()
    sys.argv = [path, *argv]
    stopped_at, t0 = None, time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sys.settrace(lines)
            with tracing(check) if kind == "eager" else _nothing():
                runpy.run_path(path, run_name="__main__")
        except StepDone:
            report.steps = max(check.steps_done, 1)
        except Exception as e:  # noqa: BLE001 - the finding is the point
            f = finding(e, skip=(os.path.dirname(runpy.__file__),))
            stopped_at = f.line
            report.findings.append(f)
        finally:
            sys.settrace(saved_trace)
            sys.argv = saved_argv
    report.seconds = time.perf_counter() - (check.t_first or t0)
    report.findings[:0] = _dedupe(warned(w) for w in caught)
    report.findings += _untaken(path, lines.ran[path], stopped_at)
    report.kind = kind
    if check.batch is not None:
        report.symbols[str(check.symbol)] = (check.batch, check.first_batch)
    return report


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _dedupe(findings):
    seen, out = set(), []
    for f in findings:
        key = (f.message, f.file, f.line)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# -- the command ------------------------------------------------------------------------------
def add_parser(subparsers):
    import argparse
    p = subparsers.add_parser(
        "check", help="a training script's shape errors before any data (meta tensors, a "
                      "symbolic batch)", description=__doc__.split("\n\n")[0])
    p.add_argument("script", help="the training script (eager or graph style)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    p.set_defaults(func=handle)
    return p


def handle(args, console) -> None:
    if not os.path.isfile(args.script):
        raise CliError(f"check: no such file: {args.script}")
    report = run_script(args.script, args.args)
    print_report(report, console)
    if not report.ok:
        raise CliError(f"check: {len(report.of('error'))} shape error(s), "
                       f"{len(report.of('unexplored'))} part(s) not explored in "
                       f"{os.path.relpath(args.script)}")


def print_report(report, console):
    from rich.text import Text
    style = {"error": "bold red", "warning": "yellow", "unexplored": "cyan"}
    what = ("the graph was built" if report.kind == "graph" else
            f"{report.steps} step(s) ran on meta tensors")
    sym = "".join(f"; {s} stands for the batch of {n} made at line {loc[1]}"
                  for s, (n, loc) in report.symbols.items())
    console.print(f"{what} in {report.seconds * 1e3:.1f} ms, before any data{sym}")
    for f in report.findings:
        where = f"{os.path.relpath(f.file)}:{f.line}: " if f.file and f.line else ""
        console.print(Text(f"{where}{f.kind}: ", style=style[f.kind]) + Text(f.message))
    if not report.findings:
        console.print(Text("no shape errors or warnings", style="green"))
