"""Special functions as probabilistic models use them (a negative-binomial log-likelihood
with lgamma, a Dirichlet-style digamma term, erfc tails, torch.special's names), checked
against torch over a wide range, poles included, with gradients."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")

X = np.array([-2.5, -1.0, -0.3, 0.0, 1e-4, 0.5, 1.0, 3.7, 10.0, 123.4, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("name", ["erfc", "lgamma", "digamma"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_equal_torch_poles_included(name, dtype):
    ours = getattr(dualgrad.eager, name)(dualgrad.eager.tensor(X.astype(dtype))).numpy()
    ref = getattr(real_torch, name)(real_torch.tensor(X.astype(dtype))).numpy()
    assert ours.dtype == ref.dtype
    np.testing.assert_allclose(ours, ref, rtol=2e-6 if dtype == np.float32 else 1e-10,
                               atol=1e-30)


def test_trigamma_equals_torch_away_from_the_poles():
    x = np.array([-2.5, -0.3, 1e-3, 0.5, 1.0, 3.7, 10.0, 123.4])
    np.testing.assert_allclose(dualgrad.eager.polygamma(1, dualgrad.eager.tensor(x)).numpy(),
                               real_torch.polygamma(1, real_torch.tensor(x)).numpy(), rtol=2e-9)
    # NOTE: closer to the exact values than torch's own (pi^2 / 6 at 1, pi^2 / 2 at 0.5)
    exact = dualgrad.eager.polygamma(1, dualgrad.eager.tensor([1.0, 0.5], dtype=dualgrad.eager.float64))
    np.testing.assert_allclose(exact.numpy(), [np.pi ** 2 / 6, np.pi ** 2 / 2], rtol=2e-11)


def negative_binomial_program(torch):
    counts = torch.tensor([0.0, 3.0, 7.0, 1.0])
    log_r = torch.tensor([0.2, -0.5, 1.0, 0.3], requires_grad=True)
    logit_p = torch.tensor([0.1, -0.3, 0.8, 0.0], requires_grad=True)
    r, p = log_r.exp(), torch.sigmoid(logit_p)
    ll = (torch.lgamma(counts + r) - torch.lgamma(r) - torch.lgamma(counts + 1)
          + r * torch.log1p(-p) + counts * torch.log(p))
    alpha = torch.tensor([0.5, 2.0, 3.0], requires_grad=True)
    dirichlet_term = (torch.digamma(alpha) - torch.digamma(alpha.sum())).sum()
    tail = torch.special.erfc(torch.tensor([0.5, 2.0, 5.0], requires_grad=True) / 2 ** 0.5)
    (-ll.sum() + dirichlet_term).backward()
    x = torch.tensor([0.7, 1.9])
    y = x.clone()
    y.lgamma_()
    return {"ll": ll, "log_r.grad": log_r.grad, "logit_p.grad": logit_p.grad,
            "alpha.grad": alpha.grad, "tail": tail, "lgamma_": y, "method": x.digamma(),
            "gammaln": torch.special.gammaln(x), "psi": torch.special.psi(x),
            "ndtr": torch.special.ndtr(x), "expit": torch.special.expit(x),
            "polygamma_method": x.polygamma(1)}


def test_negative_binomial_program_equals_torch():
    assert_same_results(negative_binomial_program(dualgrad.eager),
                        negative_binomial_program(real_torch), rtol=1e-5, atol=1e-6)


def test_second_and_third_derivatives_of_digamma_are_polygamma():
    x = dualgrad.eager.tensor([0.3, 1.5, 4.0], dtype=dualgrad.eager.float64, requires_grad=True)
    g, = dualgrad.eager.autograd.grad(dualgrad.eager.digamma(x).sum(), x, create_graph=True)
    h, = dualgrad.eager.autograd.grad(g.sum(), x, create_graph=True)
    h.sum().backward()
    xt = real_torch.tensor([0.3, 1.5, 4.0], dtype=real_torch.float64)
    for n, got in ((1, g), (2, h), (3, x.grad)):
        np.testing.assert_allclose(got.detach().numpy(), real_torch.polygamma(n, xt).numpy(),
                                   rtol=1e-9)   # NOTE: torch's trigamma is good to ~1e-10
