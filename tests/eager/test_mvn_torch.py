"""distributions.MultivariateNormal against torch's: log_prob, entropy, mean, variance,
covariance and precision for each of its three parameterisations and broadcast batches,
gradients of log_prob for loc and the matrix (a continuous-action policy's update), sample
statistics, and torch's errors."""
import numpy as np
import pytest
import torch

from dualgrad import eager

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3))
COV = A @ A.T + 2 * np.eye(3)
MATRICES = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
            "scale_tril": np.linalg.cholesky(COV)}
LOCS = {"one": RNG.standard_normal(3), "batch": RNG.standard_normal((2, 3))}
VALUE = RNG.standard_normal((4, 1, 3))


def _run(lib, kind, loc_name, dtype):
    loc = lib.tensor(LOCS[loc_name].astype(dtype), requires_grad=True)
    mat = lib.tensor(MATRICES[kind].astype(dtype), requires_grad=True)
    d = lib.distributions.MultivariateNormal(loc, **{kind: mat})
    lp = d.log_prob(lib.tensor(VALUE.astype(dtype)))
    (lp.sum() + d.entropy().sum()).backward()
    return {"batch": tuple(d.batch_shape), "event": tuple(d.event_shape),
            "log_prob": lp.detach().numpy(), "entropy": d.entropy().detach().numpy(),
            "mean": d.mean.detach().numpy(), "variance": d.variance.detach().numpy(),
            "cov": d.covariance_matrix.detach().numpy(),
            "precision": d.precision_matrix.detach().numpy(),
            "grad_loc": loc.grad.numpy(), "grad_mat": mat.grad.numpy(),
            "sample": tuple(d.sample((5,)).shape), "rsample": tuple(d.rsample().shape)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("loc_name", sorted(LOCS))
@pytest.mark.parametrize("kind", sorted(MATRICES))
def test_as_torch(kind, loc_name, dtype):
    want, got = _run(torch, kind, loc_name, dtype), _run(eager, kind, loc_name, dtype)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
    for key, w in want.items():
        g = got[key]
        if isinstance(w, tuple):
            assert g == w, key
        else:
            assert g.dtype == w.dtype and g.shape == w.shape, key
            if key == "grad_mat" and kind == "scale_tril":
                w, g = np.tril(w), np.tril(g)   # NOTE: only the factor's lower half is read
            np.testing.assert_allclose(g, w, err_msg=key, **tol)


def test_samples_have_the_distribution():
    eager.manual_seed(0)
    d = eager.distributions.MultivariateNormal(eager.tensor(LOCS["one"]),
                                               covariance_matrix=eager.tensor(COV))
    x = d.sample((20000,)).numpy()
    np.testing.assert_allclose(x.mean(0), LOCS["one"], atol=0.06)
    np.testing.assert_allclose(np.cov(x.T), COV, rtol=0.06, atol=0.06)


def test_torch_errors():
    for lib in (torch, eager):
        mvn = lib.distributions.MultivariateNormal
        with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
            mvn(lib.zeros(2), covariance_matrix=lib.eye(2), scale_tril=lib.eye(2))
        with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
            mvn(lib.zeros(2))
        with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
            mvn(lib.tensor(0.0), covariance_matrix=lib.eye(1))
        with pytest.raises(ValueError, match="PositiveDefinite"):
            mvn(lib.zeros(2), covariance_matrix=-lib.eye(2))


@pytest.mark.parametrize("batch", [False, True])
def test_kl_divergence_as_torch(batch):
    rng = np.random.default_rng(3)
    b = rng.standard_normal((3, 3))
    cov_q = b @ b.T + np.eye(3)
    out = []
    for lib in (torch, eager):
        loc_p = lib.tensor(LOCS["batch" if batch else "one"], requires_grad=True)
        tril = lib.tensor(np.linalg.cholesky(COV), requires_grad=True)
        p = lib.distributions.MultivariateNormal(loc_p, scale_tril=tril)
        q = lib.distributions.MultivariateNormal(lib.zeros(3, dtype=lib.float64),
                                                 covariance_matrix=lib.tensor(cov_q))
        kl = lib.distributions.kl_divergence(p, q)
        kl.sum().backward()
        out.append((kl.detach().numpy(), loc_p.grad.numpy(), np.tril(tril.grad.numpy())))
    for w, g in zip(*out):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)
