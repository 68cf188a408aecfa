"""tests/programs/: plain PyTorch / TF1 scripts (`import torch`, `import tensorflow.compat.v1
as tf`) written in the idioms the census ranks highest, each run three ways: under the real
library, under dualgrad through `dualgrad run --as`, and (PyTorch ones) with `--compile`.

Every program sets its initial weights explicitly (from a seeded NumPy stream) and draws its
data and noise from NumPy, so both libraries start from the same point: the first 3 steps'
losses (the `LOSS` lines) agree within rtol 1e-4 (float32 arithmetic in another order), and
every program learns: its last loss is below half its first, or, when it prints
`LEARNED before after` (a GAN's distance to the data), after < before / 2.

Compile coverage: programs whose `--compile` run has no graph break; the ones that break are
rows of KNOWN_BREAKS, the ones that cannot run compiled rows of COMPILE_FAILS, each with the
reason, so a new break, or a fixed one, fails here.

All programs of one side run in one process per mode (tests/programs/_run_all.py, TF1's
default graph reset between programs), so each library is imported once; the references
run on one thread. The real library's runs are skipped when it is not installed.
"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent / "programs"
PROGRAMS = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))
RUN_ALL = str(HERE / "_run_all.py")
DUALGRAD = [sys.executable, "-c", "import sys; from dualgrad.comparisons.cli import main; "
            "sys.exit(main(sys.argv[1:]))"]
KNOWN_BREAKS = {
    "torch_bilstm_tagger": "pack_padded_sequence reads the lengths' values: the packed "
                           "batch's shapes depend on them",
}
# the --compile run stops with an error (documented in docs/compile.md), not a break
COMPILE_FAILS = {
    "torch_pinn": "u'' needs autograd.grad(create_graph=True) through the compiled network: "
                  "double backward through a compiled call raises, as in torch.compile",
    "torch_wgan_gp": "the gradient penalty differentiates the critic's input gradient "
                     "(create_graph=True): double backward through a compiled call raises",
}
# NOTE: the references on one thread each (CI's 2 cores are shared): same results, less time
ENV = dict(os.environ, OMP_NUM_THREADS="1", TF_NUM_INTRAOP_THREADS="1",
           TF_NUM_INTEROP_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3")


def _side(program):
    return "torch" if program.name.startswith("torch_") else "tf1"


def _sections(stdout):
    """{program stem: (status, its output)} from _run_all.py's marked sections."""
    found = re.finditer(r"^@@BEGIN (\S+)\n(.*?)^@@END \S+ (-?\d+)$", stdout, re.M | re.S)
    return {Path(m.group(1)).stem: (int(m.group(3)), m.group(2)) for m in found}


def _run_all(prefix, programs):
    out = subprocess.run(prefix + [RUN_ALL] + [str(p) for p in programs], capture_output=True,
                         text=True, timeout=900, env=ENV)
    return _sections(out.stdout), out


@pytest.fixture(scope="module")
def runs():
    """{(side, mode): ({stem: (status, output)}, the process)}: one process per side and
    mode; dualgrad's through `dualgrad run --as SIDE [--compile]`, as for one script."""
    got = {}
    for side, module in (("torch", "torch"), ("tf1", "tensorflow")):
        programs = [p for p in PROGRAMS if _side(p) == side]
        if importlib.util.find_spec(module) is not None:
            got[side, "reference"] = _run_all([sys.executable], programs)
        got[side, "dualgrad"] = _run_all(DUALGRAD + ["run", "--as", side], programs)
        if side == "torch":
            got[side, "compile"] = _run_all(DUALGRAD + ["run", "--as", side, "--compile"],
                                            programs)
    return got


def _losses(text):
    losses = np.array([float(v) for v in re.findall(r"^LOSS (\S+)$", text, re.M)])
    learned = [tuple(map(float, p)) for p in re.findall(r"^LEARNED (\S+) (\S+)$", text, re.M)]
    return losses, learned


def _check_learns(losses, learned):
    if learned:
        before, after = learned[-1]
        assert after < before / 2, (before, after)
    else:
        assert losses[-1] < 0.5 * losses[0], (losses[0], losses[-1])


def _result(runs, side, mode, stem):
    sections, proc = runs[side, mode]
    assert stem in sections, proc.stderr[-3000:]
    return sections[stem]


def _ok(runs, side, mode, stem):
    status, text = _result(runs, side, mode, stem)
    assert status == 0, text[-3000:]
    return _losses(text)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_runs_the_same_on_dualgrad_as_on_the_reference(runs, program):
    side, stem = _side(program), program.stem
    if (side, "reference") not in runs:
        pytest.skip(f"the reference library for {side} is not installed")
    ref, _ = _ok(runs, side, "reference", stem)
    ours, learned = _ok(runs, side, "dualgrad", stem)
    assert len(ours) == len(ref) > 3
    np.testing.assert_allclose(ours[:3], ref[:3], rtol=1e-4)
    _check_learns(ours, learned)
    if side != "torch":
        return
    if stem in COMPILE_FAILS:
        status, text = _result(runs, side, "compile", stem)
        assert status != 0 and "double backward through a compiled call" in text
        return
    compiled, learned = _ok(runs, side, "compile", stem)
    np.testing.assert_allclose(compiled[:3], ref[:3], rtol=1e-4)
    _check_learns(compiled, learned)
    report = runs[side, "compile"][1].stderr
    broke = re.search(rf"{re.escape(program.name)}:\d+: compile\(", report) is not None
    assert broke == (stem in KNOWN_BREAKS), report[-3000:]


def test_compile_coverage_is_recorded():
    torch_programs = [p.stem for p in PROGRAMS if _side(p) == "torch"]
    assert set(KNOWN_BREAKS) | set(COMPILE_FAILS) <= set(torch_programs)
    clean = len(torch_programs) - len(KNOWN_BREAKS) - len(COMPILE_FAILS)
    print(f"compile coverage: {clean} of {len(torch_programs)} PyTorch programs without a "
          f"graph break")


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


def test_a_missing_name_fails_as_in_an_install_without_it(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch.jit\n")
    out = subprocess.run(DUALGRAD + ["run", "--as", "torch", str(script)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0 and "No module named 'torch.jit'" in out.stderr
