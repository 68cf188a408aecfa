"""eager.optim.AdamW: three steps against NumPy written from torch.optim.AdamW's formula
(decoupled weight decay: p *= 1 - lr * wd, then the Adam step), and against torch when
importable."""
import numpy as np
import pytest

from dualgrad.eager import optim
from tests.eager.test_optim import P0, STEPS, _close, _grad_np, _run_ours, _run_torch

CASES = {"default": dict(), "wd0.1": dict(lr=0.05, weight_decay=0.1),
         "betas": dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.5)}


def _adamw_np(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    b1, b2 = betas
    out = {}
    for k, p0 in P0.items():
        p = p0.astype(np.float64)
        m, v = np.zeros_like(p), np.zeros_like(p)
        for t in range(1, STEPS + 1):
            g = _grad_np(k, p)
            p = p * (1 - lr * weight_decay)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
            p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out[k] = p
    return out


@pytest.mark.parametrize("case", CASES, ids=str)
def test_adamw_three_steps_match_numpy(case):
    kw = CASES[case]
    _close(_run_ours(lambda ps: optim.AdamW(ps, **kw)), _adamw_np(**kw))


def test_adamw_differs_from_adam_with_l2():
    kw = dict(lr=0.05, weight_decay=0.1)
    a = _run_ours(lambda ps: optim.Adam(ps, **kw))
    w = _run_ours(lambda ps: optim.AdamW(ps, **kw))
    assert not np.allclose(a["w"], w["w"])


@pytest.mark.parametrize("case", CASES, ids=str)
def test_adamw_matches_torch(case):
    kw = CASES[case]
    theirs = _run_torch(lambda torch, ps: torch.optim.AdamW(ps, **kw))
    _close(_run_ours(lambda ps: optim.AdamW(ps, **kw)), theirs)
