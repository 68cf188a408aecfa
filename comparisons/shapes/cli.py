"""`dualgrad shapes`: where each catalogued shape bug surfaces, eager vs graph vs compiled vs check.

    dualgrad shapes                       # the side-by-side table of every bug
    dualgrad shapes attn_mask --explain   # every mode's full message and traceback
    dualgrad shapes --json shapes.json    # also write the records
    dualgrad shapes --markdown run.md     # also write the tables docs/shape-errors.md quotes
    dualgrad shapes --list                # the catalogue

`add_parser(subparsers)` registers the subcommand in the main CLI; `main(argv)` runs it
alone (`python -m dualgrad.comparisons.shapes`).
"""
from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console

from ..errors import UsageError
from . import report, runner
from .harness import MODES


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "shapes", help="where each catalogued shape bug surfaces in eager, graph, compiled and check "
                       "mode", description=__doc__.split("\n\n")[0])
    _arguments(p)
    p.set_defaults(func=handle)
    return p


def _arguments(p):
    p.add_argument("bugs", nargs="*", metavar="BUG", help="bugs to run (default: all)")
    p.add_argument("--explain", action="store_true",
                   help="show each mode's full message and traceback, one above the other")
    p.add_argument("--json", metavar="PATH", help="write the records as JSON to PATH")
    p.add_argument("--markdown", metavar="PATH",
                   help="write the run as Markdown tables to PATH (docs/shape-errors.md)")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"comma-separated modes (default: {','.join(MODES)})")
    p.add_argument("--jobs", type=int, default=None, help="bug files run at once "
                   "(default: one per CPU)")
    p.add_argument("--timeout", type=float, default=runner.TIMEOUT,
                   help="seconds before one bug file is stopped")
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")


def handle(args, console=None) -> int:
    """Run the subcommand; a command-line mistake raises UsageError (one line in `dualgrad`)."""
    console = console or Console()
    try:
        bugs = runner.find(args.bugs)
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise UsageError(f"unknown mode {', '.join(bad)}; modes are {', '.join(MODES)}")
    if args.list:
        for b in bugs:
            console.print(f"[bold]{b.name:18}[/bold] {b.title}  "
                          f"[dim]({', '.join(sorted(b.files))})[/dim]")
        return 0
    if args.explain and len(bugs) != 1:
        raise UsageError("--explain needs exactly one BUG (see --list)")
    with console.status(f"running {len(bugs)} bug(s) × {len(modes)} mode(s)…"):
        records = runner.run(bugs, modes, jobs=args.jobs, timeout=args.timeout)
    if args.explain:
        report.print_explain(records, console)
    else:
        report.print_table(records, modes, console)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
        console.print(f"[dim]records written to {args.json}[/dim]")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report.markdown(records, modes))
        console.print(f"[dim]tables written to {args.markdown}[/dim]")
    return 0


def main(argv=None) -> int:
    """`python -m dualgrad.comparisons.shapes`: the subcommand on its own."""
    p = argparse.ArgumentParser(prog="dualgrad shapes", description=__doc__.split("\n\n")[0])
    _arguments(p)
    try:
        return handle(p.parse_args(argv))
    except UsageError as e:
        print(f"dualgrad shapes: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
