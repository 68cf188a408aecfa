"""The generated part of docs/tf1-compat.md: what the TF differential test covers, its
figures per dtype, the known differences and the exclusions, from the tables themselves.

    python -m tests.graph.tf_oracle_docs     # runs every case, rewrites the block
"""
from __future__ import annotations

import collections
import functools
import pathlib
import re

from . import tf_oracle as O
from .tf_oracle_table import EXCLUDED, KNOWN, NO_TF_ALIAS, ROWS, public_names

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "tf1-compat.md"
BEGIN, END = "<!-- tf-oracle:begin (generated) -->", "<!-- tf-oracle:end -->"
SHORT = {"bool": "b", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32",
         "int64": "i64", "float16": "f16", "float32": "f32", "float64": "f64"}


def row_ids():
    seen, out = collections.Counter(), []
    for r in ROWS:
        out.append(r.name if not seen[r.name] else f"{r.name}[{seen[r.name]}]")
        seen[r.name] += 1
    return out


_IDS = dict(zip(map(id, ROWS), row_ids()))


@functools.lru_cache(maxsize=None)
def _result(k, dtype):
    return O.run_case(ROWS[k], dtype)


def result(row, dtype):
    return _result(ROWS.index(row), dtype)


def known(row, dtype):
    """(the columns a case is known to differ in: "both" or "optimised", why), or None."""
    entry = KNOWN.get(_IDS[id(row)])
    if entry is None:
        return None
    dtypes, why, *column = entry
    return (column[0] if column else "both", why) if dtypes == "*" or dtype in dtypes else None


def aliases():
    """Names that are the same function as a row's name under another path (`math.exp`)."""
    names = public_names()
    rows = {r.name for r in ROWS}
    first = {}
    for r in ROWS:
        first.setdefault(id(names[r.name]), r.name)
    return sorted(n for n, o in names.items() if n not in rows and id(o) in first)


def generate():
    O.load_tf()
    per = collections.defaultdict(collections.Counter)
    lines = ["| name | TF name | dtypes TF takes | differs (unoptimised / optimised) |",
             "| --- | --- | --- | --- |"]
    for row in ROWS:
        takes, diff_u, diff_o = [], [], []
        for dt in row.dtypes:
            r = result(row, dt)
            c = per[dt]
            c["cases"] += 1
            c["TF takes" if r.tf_stage == "ok" else "TF refuses"] += 1
            c["agree unoptimised"] += r.unopt is None
            c["agree optimised"] += r.opt is None
            if r.tf_stage == "ok":
                takes.append(SHORT[dt])
            diff_u += [SHORT[dt]] if r.unopt else []
            diff_o += [SHORT[dt]] if r.opt else []
        tfn = "" if row.tf is None else f"`{row.tf}`"
        lines.append(f"| `{_IDS[id(row)]}` | {tfn} | {' '.join(takes) or 'none'} | "
                     f"{' '.join(diff_u) or '-'} / {' '.join(diff_o) or '-'} |")
    return "\n".join([BEGIN, "", *_summary(per), "", *_known(), "", *_excluded(), "",
                      "Every row (a row id with `[k]` is the k-th variant of the name's arguments):",
                      "", *lines, "", END])


def _summary(per):
    cols = ["cases", "TF takes", "TF refuses", "agree unoptimised", "agree optimised"]
    total = collections.Counter()
    out = [f"{len(ROWS)} rows over {len({r.name for r in ROWS})} names (and {len(aliases())} "
           f"aliases of them, such as `math.exp`), one seeded sample per row and dtype. A case "
           f"agrees when dualgrad gives TF's values, dtypes, static and run-time shapes and "
           f"gradients, or refuses where TF refuses (at build time where TF does):", "",
           "| dtype | " + " | ".join(cols) + " |", "| --- |" + " --- |" * len(cols)]
    for dt in O.DTYPES:
        total.update(per[dt])
        out.append(f"| {dt} | " + " | ".join(str(per[dt][c]) for c in cols) + " |")
    out.append("| all | " + " | ".join(str(total[c]) for c in cols) + " |")
    return out


def _known():
    out = ["Known differences (cases that still differ from TF, each with its reason):", "",
           "| row | dtypes | differs | why |", "| --- | --- | --- | --- |"]
    for rid, (dts, why, *col) in KNOWN.items():
        out.append(f"| `{rid}` | {dts if dts == '*' else ' '.join(SHORT[d] for d in dts)} "
                   f"| {col[0] if col else 'both'} | {why} |")
    for name, why in NO_TF_ALIAS.items():
        out.append(f"| `{name}` (alias) | - | - | {why} |")
    return out


def _excluded():
    by = collections.defaultdict(list)
    for name, why in EXCLUDED.items():
        by[why].append(f"`{name}`")
    out = ["Names not compared by value, each with its reason:", "", "| names | why |",
           "| --- | --- |"]
    out += [f"| {', '.join(ns)} | {why} |" for why, ns in by.items()]
    return out


def block(text):
    m = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), text, re.S)
    return m.group(0) if m else None


def write():
    text = DOC.read_text()
    new = generate()
    old = block(text)
    text = text.replace(old, new) if old else text.rstrip() + "\n\n" + new + "\n"
    DOC.write_text(text)


if __name__ == "__main__":
    write()
