"""`import dualgrad` does not import ml_dtypes (0.65 s of CPU in ml_dtypes 0.7): bfloat16 is
loaded the first time it is asked for, and then works everywhere."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import dualgrad.eager as torch, dualgrad.graph as tf, dualgrad.compiler
from dualgrad import ops
x = torch.ones(2, 3)
y = (x * 2).sum() + torch.finfo(torch.float16).eps
with tf.Session() as s:
    s.run(tf.constant([1.0]) + 1.0)
assert "ml_dtypes" not in sys.modules, "import dualgrad loaded ml_dtypes"
b = torch.ones(3).bfloat16()
assert "ml_dtypes" in sys.modules
assert b.dtype == torch.bfloat16 == ops.rules.BFLOAT16 == tf.as_dtype("bfloat16")
assert (b * 2).sum().item() == 6.0 and (b * 2).dtype == torch.bfloat16
print("ok")
"""


def test_ml_dtypes_is_loaded_on_first_use():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_a_fresh_process_loads_bfloat16_from_a_legacy_type_name():
    script = ("import dualgrad.eager as torch\n"
              "print(torch.ones(2).type('torch.BFloat16Tensor').type())")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "torch.BFloat16Tensor", out.stderr[-2000:]
