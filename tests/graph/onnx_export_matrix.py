"""The comparison models exported to ONNX at every opset dualgrad writes, run in onnxruntime.

For each model (comparisons/exports.py), each style (its eager code through
compiler.export, its TF1 graph frozen with its session) and each opset from
OLDEST_OPSET to NEWEST_OPSET: the model is written (onnx.checker with full_check runs in
`to_model`), run by onnxruntime at a batch size other than the example's, and compared with
dualgrad's own run (1e-5). A cell is "ok" or the first line of what failed.

    python tests/graph/onnx_export_matrix.py               # print the matrix
    python tests/graph/onnx_export_matrix.py --write-docs  # the table in docs/export.md
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "export.md")
BEGIN, END = "<!-- onnx-export-matrix:begin -->", "<!-- onnx-export-matrix:end -->"
BATCH = 5


def programs():
    """[(model, style, inputs, outputs, session, reference function)]."""
    from dualgrad import compiler
    from dualgrad.comparisons import exports
    out = []
    for name in exports.MODELS:
        ep = compiler.export(*exports.eager_program(name))
        out.append((name, "eager", ep.inputs, ep.outputs, None,
                    lambda ins, ep=ep: ep(*ins), exports.test_inputs(name, BATCH)))
    for name in exports.GRAPH_MODELS:
        tr, phs, logits = exports.graph_program(name)
        out.append((name, "graph", phs, [logits], tr.sess,
                    lambda ins, tr=tr, phs=phs, lg=logits: tr.sess.run(lg, dict(zip(phs, ins))),
                    exports.graph_test_inputs(name, BATCH)))
    return out


def cell(inputs, outputs, session, ref, ins, opset):
    import onnxruntime as ort
    from dualgrad.graph.onnx import to_model
    try:
        m = to_model(inputs, outputs, session, opset=opset)
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        (got,) = s.run(None, {i.name: a for i, a in zip(s.get_inputs(), ins)})
    except Exception as e:                       # noqa: BLE001 -- the cell says what failed
        return f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    want = ref(ins)
    if got.shape != np.shape(want) or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        return "differs from dualgrad"
    return "ok"


def matrix():
    """{(model, style): {opset: cell}}."""
    from dualgrad.graph.onnx.to_onnx import NEWEST_OPSET, OLDEST_OPSET
    out = {}
    for name, style, inputs, outputs, session, ref, ins in programs():
        out[(name, style)] = {op: cell(inputs, outputs, session, ref, ins, op)
                              for op in range(OLDEST_OPSET, NEWEST_OPSET + 1)}
    return out


def table(m):
    opsets = sorted(next(iter(m.values())))
    rows = ["| model | style | " + " | ".join(str(o) for o in opsets) + " |",
            "| --- | --- |" + " --- |" * len(opsets)]
    for (name, style), cells in m.items():
        rows.append(f"| {name} | {style} | " + " | ".join(
            "ok" if cells[o] == "ok" else "fails" for o in opsets) + " |")
    return "\n".join(rows)


def write_docs(m):
    text = open(DOC).read()
    block = f"{BEGIN}\n{table(m)}\n{END}"
    with open(DOC, "w") as f:
        f.write(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text,
                       flags=re.S))


if __name__ == "__main__":
    result = matrix()
    print(table(result))
    for key, cells in result.items():
        for op, c in cells.items():
            if c != "ok":
                print(key, op, c)
    if "--write-docs" in sys.argv:
        write_docs(result)
