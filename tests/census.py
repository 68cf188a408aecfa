"""Coverage of the API census (tests/data/census/) by the dualgrad being tested.

The census lists the `torch.*` and `tf.*` names 735 public programs use, with call counts
and the keywords passed. This module resolves every name against dualgrad now
(`torch.X` -> `dualgrad.eager.X`, `tf.X` -> `dualgrad.graph.X`, importing submodules as
needed; methods on the class the census names, `Tensor` / `nn.Module` / `Session` / ...;
attributes read on an instance) and checks each recorded keyword against the callable's
signature (a named parameter, or a `**kwargs`). The census's own `dualgrad_*` columns are
never read.

    python -m tests.census                 print the figures and the gaps
    python -m tests.census --write-docs    regenerate the tables in docs/*-compat.md
"""
from __future__ import annotations

import csv
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).parent / "data" / "census"
DOCS = Path(__file__).parent.parent / "docs"
ROOTS = {"torch": "dualgrad.eager", "tf": "dualgrad.graph"}
SIDES = {"torch": ("torch.tsv", "pytorch-compat.md"), "tf": ("tf1.tsv", "tf1-compat.md")}
MISSING = object()


def rows(side):
    with open(DATA / SIDES[side][0], newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def left_out_with(name, excluded):
    """The table row that covers `name`: its own, or its class's / module's
    (`tf.estimator.Estimator.train` goes with `tf.estimator.Estimator`)."""
    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        row = ".".join(parts[:i])
        if row in excluded:
            return row
    return None


def not_provided():
    """The names left out on purpose: {name: (what using it does, reason)}."""
    with open(DATA / "not_provided.tsv", newline="") as f:
        return {r["name"]: (r["behaviour"], r["reason"])
                for r in csv.DictReader(f, delimiter="\t")}


def _import(path):
    try:
        return importlib.import_module(path)
    except ImportError:
        return MISSING


def _instances():
    """Objects whose attributes the census reads on an instance (torch's `x.grad`,
    `opt.param_groups`, TF's `sess.graph`)."""
    from dualgrad import eager, graph
    w = eager.ones(2, requires_grad=True)
    return {"torch.Tensor": w, "torch.optim.Optimizer": eager.optim.SGD([w], lr=0.1),
            "tf.Session": graph.Session(graph=graph.Graph())}


def resolve(name, kind="", instances=None):
    """The dualgrad object `name` denotes, or MISSING (any exception counts as missing, as
    `hasattr` would)."""
    root, *parts = name.split(".")
    if kind.endswith("attr") and instances:
        owner = ".".join([root] + parts[:-1])
        if owner in instances:
            return getattr(instances[owner], parts[-1], MISSING)
    obj, path = _import(ROOTS[root]), ROOTS[root]
    for p in parts:
        path = f"{path}.{p}"
        try:
            obj = getattr(obj, p)
        except Exception:  # noqa: BLE001 - a property that raises is a missing name too
            obj = _import(path) if inspect.ismodule(obj) else MISSING
        if obj is MISSING:
            return MISSING
    return obj


def _both(name):
    """A name the census gives as `torch.Tensor.X` that is also an `nn.Module` method."""
    return [name, name.replace("torch.Tensor.", "torch.nn.Module.")]


def keyword_status(obj, keyword):
    """'named', 'kwargs', 'rejected' or 'unchecked' (no signature)."""
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return "unchecked"
    p = params.get(keyword)
    if p is not None and p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD):
        return "named"
    if any(q.kind is q.VAR_KEYWORD for q in params.values()):
        return "kwargs"
    return "rejected"


@dataclass
class Coverage:
    side: str
    calls: int = 0
    calls_provided: int = 0
    names2: int = 0
    names2_provided: int = 0
    keyword_uses: int = 0
    rejected: list = field(default_factory=list)   # (name, keyword, uses)
    unchecked: list = field(default_factory=list)
    missing: list = field(default_factory=list)    # rows of names not provided

    @property
    def call_pct(self):
        return 100.0 * self.calls_provided / self.calls

    @property
    def names2_pct(self):
        return 100.0 * self.names2_provided / self.names2

    @property
    def rejected_uses(self):
        return sum(n for _, _, n in self.rejected)


def _keywords(text):
    for item in filter(None, text.split(",")):
        kw, n = item.rsplit(":", 1)
        yield kw, int(n)


def coverage(side, instances=None):
    instances = _instances() if instances is None else instances
    excluded = not_provided()
    cov = Coverage(side)
    for r in rows(side):
        files, calls = int(r["files"]), int(r["calls"])
        names = _both(r["name"]) if r["kind"] == "tensor/module-method" else [r["name"]]
        objs = [resolve(n, r["kind"], instances) for n in names]
        provided = all(o is not MISSING for o in objs) and (
            r["name"] not in excluded or excluded[r["name"]][0] != "absent")
        cov.calls += calls
        cov.names2 += files >= 2
        if not provided:
            cov.missing.append(r)
            continue
        cov.calls_provided += calls
        cov.names2_provided += files >= 2
        for kw, n in _keywords(r["keywords_used"]):
            cov.keyword_uses += n
            status = keyword_status(objs[0], kw)
            if status == "rejected":
                cov.rejected.append((r["name"], kw, n))
            elif status == "unchecked":
                cov.unchecked.append((r["name"], kw, n))
    return cov


def summary(cov):
    return (f"{cov.side}: call sites {cov.calls_provided}/{cov.calls} = {cov.call_pct:.1f}%, "
            f"names in 2+ files {cov.names2_provided}/{cov.names2} = {cov.names2_pct:.1f}%, "
            f"keyword uses rejected {cov.rejected_uses} of {cov.keyword_uses}")


# -- generated doc tables -------------------------------------------------------------------
BEGIN, END = "<!-- census:begin (generated by python -m tests.census --write-docs) -->", \
    "<!-- census:end -->"


def doc_section(side, cov):
    excluded = not_provided()
    lines = [BEGIN, "", "## The census: names public programs use", "",
             f"`tests/test_census.py` resolves every `{side}.*` name that 419 public PyTorch and "
             "316 public TF1 programs use (tests/data/census/) against dualgrad and checks every "
             "keyword they pass against the callable's signature. Now: "
             f"**{cov.call_pct:.1f}%** of call sites ({cov.calls_provided}/{cov.calls}), "
             f"**{cov.names2_pct:.1f}%** of the names used in 2 or more files "
             f"({cov.names2_provided}/{cov.names2}), {cov.rejected_uses} keyword uses rejected "
             f"(of {cov.keyword_uses}).", "",
             "### Left out on purpose", "",
             "Each row also covers the names under it (a class's methods, a module's "
             "functions).", "",
             "| name | files | using it | why |", "| --- | --- | --- | --- |"]
    by_name = {r["name"]: r for r in rows(side)}
    for name, (behaviour, reason) in sorted(excluded.items()):
        if name.split(".")[0] == side:
            files = by_name[name]["files"] if name in by_name else "-"
            what = "AttributeError" if behaviour == "absent" else behaviour
            lines.append(f"| `{name}` | {files} | {what} | {reason} |")
    gaps = [r for r in cov.missing if int(r["files"]) >= 2 and
            left_out_with(r["name"], excluded) is None]
    lines += ["", "### Not provided yet (used in 2 or more files)", "",
              ", ".join(f"`{r['name']}` ({r['files']})" for r in gaps) or "none", "", END]
    return "\n".join(lines)


def write_docs():
    for side, (_, doc) in SIDES.items():
        path = DOCS / doc
        text = path.read_text()
        section = doc_section(side, coverage(side))
        if BEGIN in text:
            head, rest = text.split(BEGIN, 1)
            text = head + section + rest.split(END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        path.write_text(text)


if __name__ == "__main__":
    if "--write-docs" in sys.argv:
        write_docs()
    for s in SIDES:
        c = coverage(s)
        print(summary(c))
        if "-v" in sys.argv:
            for name, kw, n in c.rejected:
                print(f"  rejected {name}({kw}=) x{n}")
            for r in c.missing:
                if int(r["files"]) >= 2:
                    print(f"  missing {r['files']:>3} {r['name']}")
