"""Export at every opset dualgrad writes (13 to NEWEST_OPSET): the four comparison models in
both styles, and the registry's op samples, pass onnx.checker (full check) and agree with
onnxruntime.

Cap: the models run at every opset (9 programs x 16 opsets, about 10 s: the programs are
built once); the op samples, which are many (~400), run at the opsets where the writer's
form changes (SINCE in graph/onnx/to_onnx.py: 13, 14, 18) and the newest, not at all 16,
chosen from the one table that decides it.
"""
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dualgrad.graph.onnx import to_onnx  # noqa: E402

from . import onnx_export_matrix as em  # noqa: E402
from .test_onnx_export import check_op_sample  # noqa: E402
from tests.opinfo import cases  # noqa: E402

SAMPLE_OPSETS = sorted({to_onnx.OLDEST_OPSET, *to_onnx.SINCE.values(), to_onnx.NEWEST_OPSET})


def test_models_export_at_every_opset_and_docs_show_it():
    m = em.matrix()
    bad = [f"{key} opset {op}: {c}" for key, cells in m.items() for op, c in cells.items()
           if c != "ok"]
    assert not bad, "\n".join(bad)
    assert em.table(m) in open(em.DOC).read(), \
        "docs/export.md's export matrix is stale: python tests/graph/onnx_export_matrix.py " \
        "--write-docs"


@pytest.mark.parametrize("opset", [o for o in SAMPLE_OPSETS if o != 17])
@pytest.mark.parametrize("case", cases("ok"), ids=lambda c: c.id)
def test_op_samples_at_each_form_changing_opset(case, opset, tmp_path):
    check_op_sample(case, tmp_path, opset)
