"""docs/ops.md names every op of the registry and every composite."""
from pathlib import Path

from dualgrad import ops

DOC = (Path(__file__).resolve().parents[2] / "docs" / "ops.md").read_text()


def test_every_op_is_documented():
    missing = [n for n in list(ops.REGISTRY) + list(ops.COMPOSITES) if f"| `{n}` |" not in DOC]
    assert not missing, f"docs/ops.md lacks {missing}"
