"""Summary of dualgrad.eager against PyTorch's op_db: entries provided / passing, samples
passing per dtype, eager and compiled.

    python -m tests.eager.opdb_summary [--cap K] [--compile-cap K] [--only NAME ...]
                                       [--failures] [--json FILE] [--eager-only]
    python -m tests.eager.opdb_summary --write-doc   # docs/pytorch-compat.md's table
    python -m tests.eager.opdb_summary --write-rows  # DIFFERS's rows, then the doc
    python -m tests.eager.opdb_summary --write-complex  # opdb_complex.json, then the doc

--cap: samples per entry per dtype (default 8, twice the test's EAGER_CAP: the summary looks past
the test's cap, so it counts differences the test does not see); 0 = every sample.
--failures: print the first difference of each failing entry and dtype.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import tempfile
import sys
import time
import warnings
from collections import defaultdict

from dualgrad.eager import not_provided

from . import opdb_harness as H


def run(cap, compile_cap, only=None, failures=False, modes=("eager", "compile")):
    res = H.resolved()
    per_dtype = {m: defaultdict(lambda: [0, 0]) for m in modes}
    entry_ok = {}
    notes = {}
    for op in H.OP_DB:
        eid = H.entry_id(op)
        if only and eid not in only and op.name not in only:
            continue
        fn = res[eid]
        if fn is None:
            continue
        ok = True
        for dt in H.supported_dtypes(op):
            name = H.DTYPES[dt]
            for mode in modes:
                k = cap if mode == "eager" else compile_cap
                if mode == "compile" and k == -1:
                    continue
                try:
                    ss = H.samples(op, dt, k or None)
                except Exception as e:  # noqa: BLE001 - torch's sample generator failed
                    notes.setdefault((eid, name), f"torch's samples raised {e!r}"[:200])
                    continue
                for s in ss:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        d = H.check_sample(op, fn, s, mode)
                    per_dtype[mode][name][1] += 1
                    if d:
                        ok = False
                        notes.setdefault((eid, name, mode), d[0])
                    else:
                        per_dtype[mode][name][0] += 1
        entry_ok[eid] = ok
        print(f"{eid}: {'ok' if ok else 'differs'}", file=sys.stderr, flush=True)
    return res, entry_ok, per_dtype, notes


def _write_rows():
    """DIFFERS's per-entry rows from what tests/eager/test_opdb.py's capped samples show."""
    from dualgrad.eager.not_provided import DIFFERS
    from .test_opdb import run_entry_failures
    failures = {}
    for eid, fn in H.resolved().items():
        if fn is not None:
            failures.update(run_entry_failures(eid, fn))
            print(eid, file=sys.stderr, flush=True)
    with open(os.path.join(tempfile.gettempdir(), "opdb_failures.json"), "w") as f:
        json.dump([[list(k), v] for k, v in failures.items()], f)   # for a look afterwards
    generated = {k: v for k, v in DIFFERS.items() if k[0] != "*"}
    H.write_rows(H.proposed_rows(failures, generated))


def _write_complex():
    """tests/eager/opdb_complex.json: every entry's status per complex dtype and mode over the
    test's capped samples, and "refuses" for a real dtype whose sample has a complex result
    dualgrad refuses (complex autograd, torch's complex32); tests/eager/test_opdb.py holds
    each entry to it. Runs the test's whole matrix (about 5 minutes), then writes the doc."""
    from .test_opdb import STATUS_FILE, run_entry_failures
    out = {}
    for eid, fn in sorted(H.resolved().items()):
        if fn is None:
            continue
        statuses = {}
        run_entry_failures(eid, fn, statuses=statuses)
        if statuses:
            out[eid] = statuses
        print(eid, statuses, file=sys.stderr, flush=True)
    with open(STATUS_FILE, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap", type=int, default=8)
    ap.add_argument("--compile-cap", type=int, default=4)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--failures", action="store_true")
    ap.add_argument("--eager-only", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--write-doc", action="store_true", help="regenerate the doc's table only")
    ap.add_argument("--write-rows", action="store_true",
                    help="rewrite DIFFERS's entry rows from the test's samples, then the doc")
    ap.add_argument("--write-complex", action="store_true",
                    help="rewrite tests/eager/opdb_complex.json (complex statuses), then the doc")
    a = ap.parse_args(argv)
    if a.write_complex:
        _write_complex()
        H.write_doc()
        return 0
    if a.write_doc:
        H.write_doc()
        return 0
    if a.write_rows:
        _write_rows()
        importlib.reload(not_provided)       # the rows just written
        H.write_doc()
        return 0
    t0 = time.time()
    modes = ("eager",) if a.eager_only else ("eager", "compile")
    res, entry_ok, per_dtype, notes = run(a.cap, a.compile_cap, a.only, a.failures, modes)
    provided = sum(f is not None for f in res.values())
    print(f"op_db entries: {len(res)}; provided (resolve to a dualgrad name): {provided}; "
          f"checked: {len(entry_ok)}; every sample passing: {sum(entry_ok.values())}")
    print(f"samples per entry and dtype: eager first {a.cap or 'all'}, compile() first "
          f"{a.compile_cap or 'all'}")
    for mode, table in per_dtype.items():
        tot = [sum(v[0] for v in table.values()), sum(v[1] for v in table.values())]
        cells = "  ".join(f"{d} {table[d][0]}/{table[d][1]}" for d in H.DTYPES.values()
                          if d in table)
        print(f"{mode:8s} {tot[0]}/{tot[1]}   {cells}")
    if a.failures:
        for key, d in sorted(notes.items()):
            print(" / ".join(key), "::", d)
    print(f"({time.time() - t0:.0f} s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"provided": provided, "entries": len(res), "passing": entry_ok,
                       "per_dtype": per_dtype,
                       "notes": {" / ".join(k): v for k, v in notes.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
