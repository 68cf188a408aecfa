"""Every loss in torch.nn.functional with an input of each floating dtype and a target of each
of 10 dtypes, against torch: eager must raise where torch raises (a class-index target that
is not int64 or uint8, a binary_cross_entropy target of another dtype than its input, an
integral kl_div target, a half input to the margin losses torch has no half kernel for) and
otherwise give torch's result dtype (huber_loss and soft_margin_loss keep the input's dtype,
binary_cross_entropy_with_logits the target's, the others promote) and its value, within the
result dtype's tolerance.

Found by this matrix, each a quiet difference before: soft_margin_loss of a uint8 target was
inf (the target was negated in uint8) and a bool target raised; huber_loss of a float32
input and a float64 target was float64; binary_cross_entropy_with_logits accepted integer
targets and gave float32 for a float16 target; kl_div, binary_cross_entropy, nll_loss,
cross_entropy and the margin losses computed with targets torch refuses;
multilabel_soft_margin_loss of a float16 input and a float32 target was float16.
"""
import warnings

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager.nn import functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

INPUTS = ["float16", "bfloat16", "float32", "float64"]
TARGETS = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64"]
X = [[0.2, 0.4, 0.6], [0.8, 0.1, 0.9]]


def _target(lib, dtype, kind):
    dt = getattr(lib, dtype)
    if kind == "index":         # class indices, one per row
        return lib.tensor([True, False] if dtype == "bool" else [0, 2], dtype=dt)
    if kind == "labels":        # multilabel_margin_loss: labels, then -1
        rows = [[0, -1, 1], [2, -1, 0]] if dtype[0] == "i" or dtype[0] == "f" or \
            dtype == "bfloat16" else [[0, 1, 1], [1, 0, 0]]
        return lib.tensor(rows, dtype=dt)
    if kind == "sign":          # +1 / -1 (margin ranking, cosine embedding, hinge)
        vals = [[1, 0, 1], [0, 1, 1]] if dtype in ("bool", "uint8") else [[1, -1, 1], [-1, 1, 1]]
        return lib.tensor(vals, dtype=dt)
    vals = [[True, False, True], [False, True, True]] if dtype == "bool" else \
        [[1, 0, 1], [1, 0, 1]] if dtype[0] in "iu" else [[0.3, 0.9, 0.1], [0.5, 0.7, 0.2]]
    return lib.tensor(vals, dtype=dt)


LOSSES = {
    "mse_loss": ("values", lambda F, x, t: F.mse_loss(x, t)),
    "l1_loss": ("values", lambda F, x, t: F.l1_loss(x, t)),
    "smooth_l1_loss": ("values", lambda F, x, t: F.smooth_l1_loss(x, t)),
    "huber_loss": ("values", lambda F, x, t: F.huber_loss(x, t)),
    "huber_loss(none)": ("values", lambda F, x, t: F.huber_loss(x, t, reduction="none")),
    "soft_margin_loss": ("values", lambda F, x, t: F.soft_margin_loss(x, t)),
    "binary_cross_entropy": ("values", lambda F, x, t: F.binary_cross_entropy(x, t)),
    "binary_cross_entropy_with_logits": (
        "values", lambda F, x, t: F.binary_cross_entropy_with_logits(x, t)),
    "kl_div": ("values", lambda F, x, t: F.kl_div(x, t, reduction="batchmean")),
    "poisson_nll_loss": ("values", lambda F, x, t: F.poisson_nll_loss(x, t)),
    "multilabel_soft_margin_loss": (
        "values", lambda F, x, t: F.multilabel_soft_margin_loss(x, t)),
    "cross_entropy(probabilities)": ("values", lambda F, x, t: F.cross_entropy(x, t)),
    "hinge_embedding_loss": ("sign", lambda F, x, t: F.hinge_embedding_loss(x, t)),
    "cross_entropy": ("index", lambda F, x, t: F.cross_entropy(x, t)),
    "nll_loss": ("index", lambda F, x, t: F.nll_loss(x, t)),
    "multi_margin_loss": ("index", lambda F, x, t: F.multi_margin_loss(x, t)),
    "multilabel_margin_loss": ("labels", lambda F, x, t: F.multilabel_margin_loss(x, t)),
}


def _outcome(lib, F, name, x_dtype, t_dtype):
    kind, call = LOSSES[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(F, lib.tensor(X, dtype=getattr(lib, x_dtype)),
                       _target(lib, t_dtype, kind))
    except Exception as e:  # noqa: BLE001 - whether it raised is compared below
        return ("raises", f"{type(e).__name__}: {str(e)[:80]}")
    dt = str(out.dtype).split(".")[-1]
    return (dt, np.asarray(out.float().tolist(), np.float64))


_TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-7}


def _agree(want, got):
    if (want[0] == "raises") != (got[0] == "raises"):
        return False
    if want[0] == "raises" or want[0] != got[0]:
        return want[0] == got[0]
    tol = _TOLERANCE[want[0]]
    return np.allclose(want[1], got[1], rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("name", list(LOSSES))
def test_a_loss_over_input_and_target_dtypes_is_torchs(name):
    bad = []
    for x_dtype in INPUTS:
        for t_dtype in TARGETS:
            want = _outcome(torch, TF, name, x_dtype, t_dtype)
            got = _outcome(eager, EF, name, x_dtype, t_dtype)
            if not _agree(want, got):
                bad.append(f"{name}({x_dtype} input, {t_dtype} target): torch {want[0]} "
                           f"{want[1]}, eager {got[0]} {got[1]}")
    assert not bad, f"{len(bad)} of {len(INPUTS) * len(TARGETS)} differ:\n" + "\n".join(bad)
