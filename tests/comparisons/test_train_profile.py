"""comparisons/bench/train_profile.py: one cell runs in a process of its own (the TINY sizes,
one step: a few seconds, most of it imports), and the table puts each column against PyTorch's
time and the sgemm rate measured beside it."""
import os

from dualgrad.comparisons.bench import train_profile


def test_a_cell_runs_in_its_own_process_and_profiles():
    cell = train_profile.run_cell("mlp", "eager", steps=1, scale=0.1, profile=True, timeout=120)
    assert cell["step_ms"] > 0 and cell["sgemm"] > 1e6 and cell["first_s"] > 0
    prof = cell["profile"]
    assert prof["calls"] > 0 and "matmul_nt" in {name for name, _, _ in prof["top"]}
    text = train_profile.profile_text({"mlp": {"eager": cell}})
    assert "### mlp, eager: step" in text and "| matmul_nt |" in text


def test_table_gives_ratios_to_torch_and_sgemm_shares():
    from dualgrad.comparisons.bench.train_models import TINY, flops
    rate = flops("mlp", TINY["mlp"]) / 1e-3      # the rate that does the work in 1 ms
    cells = {"mlp": {"torch": {"step_ms": 2.0},
                     "eager": {"step_ms": 1.0, "sgemm": rate, "blas_core": "Haswell"},
                     "compiled": {"step_ms": 4.0, "sgemm": rate, "blas_core": "Haswell"}}}
    *rows, _, kernels = train_profile.table(cells, scale=0.1).splitlines()
    assert rows[-1] == "| mlp | 2.0 | 1.0 (0.50x) | 4.0 (2.00x) | 50% / 100% / 25% |"
    assert kernels == "NumPy's OpenBLAS ran its Haswell kernels in dualgrad's columns."


def test_blas_core_names_the_kernels_and_who_chose_them():
    """The bench's figures depend on which kernels NumPy's OpenBLAS runs: the report names them
    and says when OPENBLAS_CORETYPE (the user's environment) chose them."""
    import subprocess
    import sys
    code = "from dualgrad.comparisons.threads import blas_core; print(blas_core())"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    chosen = subprocess.run([sys.executable, "-c", code],
                            env={**env, "OPENBLAS_CORETYPE": "Haswell"},
                            capture_output=True, text=True, check=True).stdout.strip()
    assert chosen == "Haswell (set by OPENBLAS_CORETYPE)"
    own = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert own and "OPENBLAS_CORETYPE" not in own
