"""Every ONNX backend node test case through graph.onnx.load: it passes, or it is refused.

The cases are the onnx package's own (`collect_testcases()`, about 1,900 one-node models and
expanded function bodies with inputs and expected outputs; tests/graph/onnx_node_cases.py
runs and classifies them). Each one must either pass (same shape, dtype and values within
1e-4) or be refused with an `OnnxError` naming the operator, the model's opset and the
node's input dtypes, and saying why. Any other exception at load or run is a failure, and so
is a wrong value. There is no skip list: what is refused is asserted to be refused clearly.

Cap: every case runs with graph.Session(optimize=False) (about 25 s); with the optimiser
(folding and numba-fused kernels, each compiled once per expression: about 150 s for all
cases on a cold kernel cache) one case in OPTIMIZED_EVERY of the passing ones runs, taken in
name order, and must pass too. The optimiser's own equality with the unoptimised graph is
tested in tests/compiler.
"""
import re

import pytest

pytest.importorskip("onnx")

from . import onnx_node_cases as cases  # noqa: E402

# NOTE: a ratchet: raise it when the importer learns more (issue 30 asked for 1,000)
MIN_PASSING = 1170
OPTIMIZED_EVERY = 8
REFUSAL = re.compile(r"graph\.onnx\.load: [^:]*: (?:(?P<op>\w+) \(opset (?P<opset>\d+), "
                     r"node '[^']*', input dtypes \[(?P<dtypes>[^\]]*)\]\)|\(opset \d+\)): .+")


@pytest.fixture(scope="module")
def results():
    return cases.run_all(optimize=False)


def _listing(results, kind):
    return "\n".join(f"{name} ({op}): {detail[:200]}"
                     for name, (k, detail, op) in sorted(results.items()) if k == kind)


def test_no_case_crashes(results):
    assert not _listing(results, "crash")


def test_no_accepted_case_is_wrong(results):
    assert not _listing(results, "wrong")


def test_refusals_name_operator_opset_and_dtypes(results):
    bad = []
    for name, (kind, detail, op) in results.items():
        if kind != "refused":
            continue
        m = REFUSAL.match(detail)
        if not m or (m.group("op") and op != "(expanded)" and m.group("op") != op):
            bad.append(f"{name}: {detail}")
    assert not bad, "\n".join(bad[:20])


def test_passing_floor(results):
    s = cases.summary(results)
    print(s)
    assert s["pass"] >= MIN_PASSING, s


def test_docs_table_is_current(results):
    text = open(cases.DOC).read()
    assert cases.table(results) in text, \
        "docs/export.md's node-case table is stale: python tests/graph/onnx_node_cases.py " \
        "--write-docs"


def test_a_sample_of_passing_cases_passes_optimised_too(results):
    passing = sorted(name for name, (k, _, _) in results.items() if k == "pass")
    sample = set(passing[::OPTIMIZED_EVERY])
    optimised = cases.run_all(selected=sample, optimize=True)
    bad = {n: r for n, r in optimised.items() if r[0] != "pass"}
    assert not bad, bad
