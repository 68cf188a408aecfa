"""The onnx package's backend node tests through `graph.onnx.load` and `.run`, classified.

`onnx.backend.test.case.node.collect_testcases()` holds the one-node models (and the expanded
function bodies) every ONNX backend is checked with, each with inputs and expected outputs.
Each case ends in one of four classes:

- ``pass``: loaded and ran; every output has the expected shape and dtype and values within
  the tolerance the onnx backend tests use (rtol = atol = 1e-4 unless the case asks for more);
- ``wrong``: loaded and ran, but an output differs;
- ``refused``: `graph.onnx.load` or `.run` raised `OnnxError`;
- ``crash``: any other exception.

    python tests/graph/onnx_node_cases.py            # the summary
    python tests/graph/onnx_node_cases.py --verbose  # one line per case not passing
    python tests/graph/onnx_node_cases.py --write-docs   # the table in docs/export.md
    python tests/graph/onnx_node_cases.py --unoptimized  # with graph.Session(optimize=False)
"""
from __future__ import annotations

import collections
import os
import re
import sys
import warnings

import numpy as np

KINDS = ("pass", "wrong", "refused", "crash")
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "export.md")
BEGIN, END = "<!-- onnx-node-cases:begin -->", "<!-- onnx-node-cases:end -->"


def cases():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return collect_testcases()


def _close(got, want, rtol, atol):
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "fc":
        ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = np.array_equal(got, want)
    return None if ok else "values differ"


def _array(v):
    from onnx import TensorProto, numpy_helper
    return numpy_helper.to_array(v) if isinstance(v, TensorProto) else np.asarray(v)


def feeds(case, inputs):
    """{input name: array}: the case's inputs, typed as the model declares them (the case
    generators leave some as object arrays, which the .pb files the suite ships do not)."""
    from onnx import helper
    gp = case.model.graph
    init = {t.name for t in gp.initializer}
    out = {}
    for vi, v in zip([vi for vi in gp.input if vi.name not in init], inputs):
        v = _array(v)
        if v.dtype == object and vi.type.HasField("tensor_type"):
            dt = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
            if np.dtype(dt) != object:
                v = v.astype(dt)
        out[vi.name] = v
    return out


def classify(case, optimize=True):
    """(kind, detail) for one test case, run with graph.Session(optimize=optimize)."""
    from dualgrad import graph
    OnnxError = graph.onnx.OnnxError
    rtol, atol = max(case.rtol, 1e-4), max(case.atol, 1e-4)
    try:
        og = graph.onnx.load(case.model, optimize=optimize)
        for inputs, outputs in case.data_sets:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = og.run(feeds(case, inputs))
            if len(got) != len(outputs):
                return "wrong", f"{len(got)} outputs, expected {len(outputs)}"
            for k, (g, w) in enumerate(zip(got, outputs)):
                bad = _close(g, _array(w), rtol, atol)
                if bad:
                    return "wrong", f"output {k}: {bad}"
    except OnnxError as e:
        return "refused", str(e)
    except Exception as e:                       # noqa: BLE001 -- the point is to catch all
        return "crash", f"{type(e).__name__}: {e}"
    return "pass", ""


def op_of(case):
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else "(expanded)"


def run_all(selected=None, optimize=True):
    """{case name: (kind, detail, op)} over every case (or the names in `selected`)."""
    out = {}
    trace = os.environ.get("ONNX_CASES_TRACE")
    for c in cases():
        if selected is None or c.name in selected:
            if trace:
                print(c.name, file=sys.stderr, flush=True)
            kind, detail = classify(c, optimize)
            out[c.name] = (kind, detail, op_of(c))
    return out


def summary(results):
    counts = collections.Counter(k for k, _, _ in results.values())
    return {k: counts.get(k, 0) for k in KINDS} | {"total": len(results)}


def refusal_reasons(results, top=15):
    """The most frequent refusals, by the feature they name."""
    reasons = collections.Counter()
    for kind, detail, op in results.values():
        if kind == "refused":
            reasons[_reason(detail)] += 1
    return reasons.most_common(top)


def _reason(detail):
    m = re.search(r"\): (.*)$", detail)
    text = m.group(1) if m else detail
    return re.sub(r"'[^']*'|\(.*?\)|\d+", "…", text)[:90]


def table(results):
    s = summary(results)
    rows = ["| cases | accepted | passing | wrong | refused (`OnnxError`) | crashed |",
            "| --- | --- | --- | --- | --- | --- |",
            f"| {s['total']} | {s['pass'] + s['wrong']} | {s['pass']} | {s['wrong']} | "
            f"{s['refused']} | {s['crash']} |"]
    return "\n".join(rows)


def write_docs(results):
    text = open(DOC).read()
    block = f"{BEGIN}\n{table(results)}\n{END}"
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda m: block, text, flags=re.S)
    with open(DOC, "w") as f:
        f.write(new)


def main(argv):
    results = run_all(optimize="--unoptimized" not in argv)
    print(summary(results))
    if "--verbose" in argv:
        for name, (kind, detail, op) in sorted(results.items()):
            if kind != "pass":
                print(f"{kind:8s} {name:55s} {op:20s} {detail[:160]}")
    if "--reasons" in argv:
        for r, n in refusal_reasons(results, 40):
            print(f"{n:5d}  {r}")
    if "--write-docs" in argv:
        write_docs(results)


if __name__ == "__main__":
    main(sys.argv[1:])
