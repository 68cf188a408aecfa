"""tests/programs/: plain PyTorch / TF1 scripts run three ways: under the real library, under
dualgrad through `dualgrad run --as`, and (PyTorch ones) with `--compile`. From the same
initial weights the first 3 steps' losses agree within rtol 1e-4 (float32 arithmetic in a
different order), and every program learns (last loss below half the first). Each program
runs in a subprocess in a few seconds; the real library's run is skipped when it is not
installed."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))
DUALGRAD = [sys.executable, "-c", "import sys; from dualgrad.comparisons.cli import main; "
            "sys.exit(main(sys.argv[1:]))"]


def _losses(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return np.array([float(v) for v in re.findall(r"^LOSS (\S+)$", out.stdout, re.M)]), out


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_runs_the_same_on_dualgrad_as_on_the_reference(program):
    side = "torch" if program.name.startswith("torch_") else "tf1"
    pytest.importorskip("torch" if side == "torch" else "tensorflow")
    ref, _ = _losses([sys.executable, str(program)])
    ours, _ = _losses(DUALGRAD + ["run", "--as", side, str(program)])
    assert len(ours) == len(ref) > 3
    np.testing.assert_allclose(ours[:3], ref[:3], rtol=1e-4)
    assert ours[-1] < 0.5 * ours[0]
    if side == "torch":
        compiled, out = _losses(DUALGRAD + ["run", "--as", side, "--compile", str(program)])
        np.testing.assert_allclose(compiled[:3], ref[:3], rtol=1e-4)
        assert compiled[-1] < 0.5 * compiled[0]
        assert "0 graph break(s)" in out.stderr, out.stderr


def test_run_as_leaves_the_names_alone_outside_the_script(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch, sys\nprint(torch.__version__)\nsys.exit(3)\n")
    out = subprocess.run(DUALGRAD + ["run", "--as", "torch", str(script)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 3 and "+dualgrad" in out.stdout
    from dualgrad.comparisons import run_as
    assert run_as.run("torch", str(script), []) == 3
    assert not any(isinstance(f, run_as.Finder) for f in sys.meta_path)
    assert "torch" not in sys.modules or "dualgrad" not in repr(sys.modules["torch"])
