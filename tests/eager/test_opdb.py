"""PyTorch's op database (`op_db`, 702 entries) as the oracle of `dualgrad.eager`, eager and
under `compiler.compile()`.

Every entry is either
- provided (tests/eager/opdb_harness.py resolves it to a dualgrad callable) and its samples
  agree with torch in every dtype torch supports on CPU among bool, uint8, int8, int16, int32,
  int64, float16, bfloat16, float32, float64: result structure, shape, dtype, values (torch's
  tolerances for the dtype, or wider where the entry's own tests compare torch with NumPy's
  reference at wider ones: `opdb_harness.reference_tolerances`), float64 gradients against torch's autograd (or finite
  differences, where op_db marks torch's gradient as failing gradcheck), and aliasing (a
  write through the result changes the input exactly when torch's does), in eager and inside
  compile(); or a difference that is a row of `DIFFERS` in eager/not_provided.py, with its
  reason (a row that no longer fails makes the test fail, so the table stays true); or
- a row of `ABSENT` in eager/not_provided.py, with its reason, and looking it up raises
  AttributeError (hasattr is False).
docs/pytorch-compat.md shows that one table, generated from it (`test_doc_shows_the_table`;
regenerate with `python -m tests.eager.opdb_summary --write-doc`).

dualgrad may be more accurate than torch, never less (tests/eager/opdb_accuracy.py, the
"precise" comparison torch's own test_ops applies to its Python references): values that
differ from torch's beyond the tolerance still agree when every element is at least as close
as torch's to a higher-precision reference, up to the dtype's tolerance. The reference is
torch's own result on the sample with its float16, bfloat16 and float32 inputs upcast to
float64; for the few entries opdb_accuracy.MPMATH_REFERENCES names (Bessel functions, whose
float64 torch has nothing more precise for), mpmath's function at 40 digits. The rule judges
values only: a shape, a dtype or a gradient that differs still fails.

Cap (CI budget): the first EAGER_CAP samples of each entry per dtype in eager, the first
COMPILE_CAP under compile() (each compiled sample is a trace and a graph optimisation, ten
times an eager call). op_db puts its simplest samples first (a scalar, a small matrix), and
every dtype gets its own samples, so the cap keeps each dtype and each entry while cutting
the long tails of keyword variants. `python -m tests.eager.opdb_summary --cap 0` runs every
sample.
"""
from __future__ import annotations

import json
import os
import warnings

import pytest

torch = pytest.importorskip("torch")            # the oracle (dev extra)
pytest.importorskip("expecttest")               # op_db's import needs it

from dualgrad import compiler, eager  # noqa: E402
from dualgrad.eager.not_provided import ABSENT, DIFFERS  # noqa: E402

from . import opdb_harness as H  # noqa: E402

EAGER_CAP = 4
COMPILE_CAP = 2
# NOTE: complex dtypes (complex64, complex128): the first COMPLEX_CAP samples per entry, dtype
# and mode; an entry dualgrad refuses raises at its first sample, so most cost one call
COMPLEX_CAP = 2
ENTRIES = H.entries()
STATUS_FILE = os.path.join(os.path.dirname(__file__), "opdb_complex.json")


def expected_statuses():
    """{entry: {"complex64 eager": status, ...}}: tests/eager/opdb_complex.json, written by
    `python -m tests.eager.opdb_summary --write-complex` (and shown in docs/pytorch-compat.md)."""
    with open(STATUS_FILE, encoding="utf-8") as f:
        return json.load(f)


def differs_row(eid, dtype, mode, diff):
    """The DIFFERS row that covers a difference, or None."""
    kind = H.kind_of(diff)
    for key in ((eid, dtype, mode, kind), (eid, dtype, "*", kind), (eid, "*", mode, kind),
                (eid, "*", "*", kind), (eid, dtype, mode, "*"), (eid, dtype, "*", "*"),
                (eid, "*", mode, "*"), (eid, "*", "*", "*"), ("*", dtype, "*", "*"),
                ("*", "*", mode, kind), ("*", dtype, mode, "*")):
        if key in DIFFERS:
            return key
    return None


def run_entry_failures(eid, fn, caps=(("eager", EAGER_CAP), ("compile", COMPILE_CAP)),
                       statuses=None):
    """{(eid, dtype, mode, kind): first difference} over the capped samples, rows covering
    (eid, "*", ...) aside: a dtype and mode stop at their first failing sample. statuses:
    a dict given to collect {"complex64 eager": status, ...} of the complex dtypes."""
    op = ENTRIES[eid]
    out = {}
    for dt in H.supported_dtypes(op):
        name = H.DTYPES[dt]
        if dt in H.COMPLEX:
            _complex_failures(eid, op, fn, dt, caps, out, statuses)
            continue
        for mode, cap in caps:
            if ("*", name, "*", "*") in DIFFERS:
                continue        # a dtype dualgrad lacks: one global row says so
            for s in H.samples(op, dt, cap):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    diffs = H.check_sample(op, fn, s, mode)
                if diffs and diffs[0].startswith(H.REFUSES):
                    if statuses is not None:   # NOTE: a complex result dualgrad refuses
                        statuses[f"{name} {mode}"] = "refuses"
                    continue
                for d in diffs:
                    key = (eid, name, mode, H.kind_of(d))
                    if ("*", "*", mode, key[3]) not in DIFFERS:
                        out.setdefault(key, d)
                if diffs:
                    break       # one failing sample per dtype and mode says enough
    return out


def _complex_failures(eid, op, fn, dt, caps, out, statuses):
    """A complex dtype: each mode's status (agrees, refuses, partly; "known" where the one
    difference is a DIFFERS row, "differs" else) into statuses, its difference into out."""
    name = H.DTYPES[dt]
    for mode, cap in caps:
        status, diff = H.complex_status(op, fn, dt, mode, min(cap, COMPLEX_CAP))
        if status == "differs":
            key = (eid, name, mode, H.kind_of(diff))
            out.setdefault(key, diff)
            status = "known" if differs_row(*key[:3], diff) else "differs"
        if statuses is not None:
            statuses[f"{name} {mode}"] = status


def run_entry(eid, fn):
    """(differences no row covers, the rows of this entry that covered one)."""
    unexplained, used = [], set()
    statuses = {}
    for (_, name, mode, kind), d in run_entry_failures(eid, fn, statuses=statuses).items():
        row = differs_row(eid, name, mode, d)
        if row is None:
            unexplained.append(f"{name} {mode}: {d}")
        else:
            used.add(row)
    return unexplained, used, statuses


EXPECTED_COMPLEX = expected_statuses() if os.path.exists(STATUS_FILE) else {}


@pytest.mark.parametrize("eid", sorted(ENTRIES))
def test_entry(eid):
    op, fn = ENTRIES[eid], H.resolved()[eid]
    if fn is None:
        assert op.name in ABSENT, (
            f"op_db's {eid} resolves to no dualgrad name and is not a row of ABSENT in "
            f"eager/not_provided.py")
        return
    assert op.name not in ABSENT, f"{op.name} is provided now: remove its row from ABSENT"
    unexplained, used, statuses = run_entry(eid, fn)
    stale = [k for k in DIFFERS if k[0] == eid and k not in used]
    assert not unexplained, f"{eid} differs from torch:\n" + "\n".join(unexplained[:12])
    assert not stale, f"{eid} agrees with torch now where DIFFERS says not: remove {stale}"
    assert statuses == EXPECTED_COMPLEX.get(eid, {}), (
        f"{eid}'s complex statuses are {statuses}, tests/eager/opdb_complex.json says "
        f"{EXPECTED_COMPLEX.get(eid, {})}: run python -m tests.eager.opdb_summary "
        f"--write-complex (and look at what changed)")


def test_absent_names_raise_attribute_error():
    op_names = {op.name for op in H.OP_DB}
    for name in ABSENT:
        with pytest.raises(AttributeError):     # so hasattr is False
            H.lookup(name)
        if name in op_names:
            assert all(H.resolved()[H.entry_id(op)] is None for op in H.OP_DB
                       if op.name == name), f"{name} resolves for some entry: not absent"


def test_every_row_names_an_entry():
    for key in DIFFERS:
        assert key[0] == "*" or key[0] in ENTRIES, f"DIFFERS row {key}: no such op_db entry"
        assert key[1] == "*" or key[1] in H.BY_NAME, f"DIFFERS row {key}: unknown dtype"
        assert key[2] in ("*", "eager", "compile") and key[3] in H.KINDS + ("*",), key


def test_doc_shows_the_table():
    assert H.doc_section_in_file() == H.render_doc_table(), (
        "docs/pytorch-compat.md's table of what dualgrad does not provide is out of date: run "
        "python -m tests.eager.opdb_summary --write-doc")


def test_hasattr_is_false_for_a_name_not_provided():
    absent_linalg = [n for n in ABSENT if n.startswith("linalg.")]
    assert all(not hasattr(eager.linalg, n.split(".", 1)[1]) for n in absent_linalg)
    assert not hasattr(eager.nn.functional, "no_such_function")


def test_the_global_rows_are_true():
    """The rows for every entry: compile() returns no views."""
    x = eager.zeros(2, 3)
    y = compiler.compile(lambda t: t.transpose(0, 1))(x)
    with eager.no_grad():
        y.add_(1)
    assert (x.sum().item() == 0) == (("*", "*", "compile", "aliasing") in DIFFERS)


def test_gradients_torch_gets_wrong_are_checked_by_finite_differences():
    """as_strided_scatter's input gradient fails torch's own gradcheck (op_db says so):
    dualgrad's is checked against central differences instead, and a wrong one still fails."""
    op = ENTRIES["as_strided_scatter"]
    assert H.torch_gradient_fails_gradcheck(op) and not H.torch_gradient_fails_gradcheck(
        ENTRIES["add"])
    fn = H.resolved()["as_strided_scatter"]
    s = H.samples(op, torch.float64, 3)[2]

    def input_not_differentiated(x, src, *args, **kwargs):
        return fn(x.detach(), src, *args, **kwargs)
    assert H.check_sample(op, fn, s) == []
    assert any("finite differences" in d for d in H.check_sample(
        op, input_not_differentiated, s, aliasing=False))
