"""The inference benchmark: every peer timed, and every peer's output equal."""
import pytest

from dualgrad.comparisons.bench import export as bench_export

pytest.importorskip("onnxruntime")


def test_inference_benchmark_rows():
    rows = bench_export.run(models=("cnn",), batches=(3,), quick=True)
    (r,) = rows
    assert r["model"] == "cnn" and r["batch"] == 3 and r["max_abs_diff"] < 1e-4
    assert r["dualgrad"]["median_s"] > 0 and r["onnxruntime"]["median_s"] > 0
    table = bench_export.markdown(rows)
    assert table.splitlines()[2].startswith("| cnn | 3 |")
