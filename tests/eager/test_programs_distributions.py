"""torch.distributions as VAE and reinforcement-learning scripts use it (a Gaussian
posterior with rsample and kl_divergence to the prior, a REINFORCE policy step with
Categorical log_prob and an entropy bonus, Bernoulli and Uniform, Independent), run on
dualgrad.eager and on torch: log-probabilities, entropies, KLs and gradients agree."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results, load, state

real_torch = pytest.importorskip("torch")


def distributions_program(torch):
    D = torch.distributions
    r = {}
    mu = torch.tensor([[0.5, -1.0], [0.0, 2.0]], requires_grad=True)
    log_std = torch.tensor([[0.1, -0.3], [0.0, 0.5]], requires_grad=True)
    posterior = D.Normal(mu, log_std.exp())
    x = torch.tensor([[0.3, 0.0], [1.0, 2.5]])
    r["log_prob"], r["entropy"], r["cdf"] = posterior.log_prob(x), posterior.entropy(), posterior.cdf(x)
    prior = D.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    kl = D.kl_divergence(posterior, prior).sum()
    joint = D.Independent(posterior, 1)
    r["kl"], r["independent_log_prob"] = kl, joint.log_prob(x)
    r["independent_kl"] = D.kl_divergence(joint, D.Independent(prior, 1))
    r["shapes"] = str([tuple(posterior.batch_shape), tuple(joint.batch_shape),
                       tuple(joint.event_shape), tuple(posterior.sample((3,)).shape),
                       tuple(posterior.rsample().shape)])
    (kl + posterior.log_prob(x).sum() + joint.entropy().sum()).backward()
    r["mu.grad"], r["log_std.grad"] = mu.grad, log_std.grad
    cp = D.Categorical(probs=torch.tensor([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]]))
    r["probs_log_prob"], r["probs_entropy"] = cp.log_prob(torch.tensor([2, 0])), cp.entropy()
    r["categorical_kl"] = D.kl_divergence(cp, D.Categorical(logits=torch.zeros(2, 3)))
    b = D.Bernoulli(logits=torch.tensor([0.3, -2.0, 5.0]))
    bp = D.Bernoulli(probs=torch.tensor([0.0, 0.3, 1.0]))
    r["bernoulli"] = [b.log_prob(torch.tensor([1.0, 0.0, 0.0])), b.entropy(), bp.logits,
                      bp.log_prob(torch.tensor([0.0, 1.0, 1.0])), D.kl_divergence(bp, b)]
    u = D.Uniform(torch.tensor([0.0, -1.0]), torch.tensor([2.0, 1.0]))
    r["uniform"] = [u.log_prob(torch.tensor([1.0, 0.5])), u.entropy(), u.cdf(torch.tensor([0.5, 0.0]))]
    r["scalar_normal"] = D.Normal(0.0, 1.0).log_prob(torch.tensor(0.5))
    return {k: (torch.stack([t.detach() for t in v]) if k in ("bernoulli", "uniform") else v)
            for k, v in r.items()}


def policy(torch):
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def reinforce_program(torch, weights, states, actions, rewards):
    model = policy(torch)
    load(torch, model, weights)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gamma, returns, running = 0.99, [], 0.0
    for rwd in reversed(rewards):
        running = rwd + gamma * running
        returns.insert(0, running)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    losses = []
    for _ in range(3):
        dist = torch.distributions.Categorical(logits=model(torch.from_numpy(states)))
        log_probs = dist.log_prob(torch.from_numpy(actions))
        loss = -(log_probs * returns).sum() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, **state(model)}


def test_distributions_equal_torch():
    assert_same_results(distributions_program(dualgrad.eager), distributions_program(real_torch),
                        rtol=1e-5, atol=1e-6)


def test_reinforce_step_equals_torch():
    rng = np.random.default_rng(0)
    states = rng.standard_normal((6, 4)).astype(np.float32)
    actions, rewards = rng.integers(0, 3, 6), [1.0, 0.0, 0.5, 1.0, 0.0, 2.0]
    real_torch.manual_seed(0)
    weights = state(policy(real_torch))
    assert_same_results(reinforce_program(dualgrad.eager, weights, states, actions, rewards),
                        reinforce_program(real_torch, weights, states, actions, rewards),
                        rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("build", [
    lambda D, t: D.Normal(0.0, -1.0),
    lambda D, t: D.Categorical(logits=t.zeros(3)).log_prob(t.tensor(3)),
    lambda D, t: D.Bernoulli(probs=t.tensor([0.5])).log_prob(t.tensor([0.5])),
    lambda D, t: D.Uniform(t.tensor(0.0), t.tensor(1.0)).log_prob(t.tensor(2.0))])
def test_arguments_outside_the_support_raise_as_torch(build):
    for lib in (dualgrad.eager, real_torch):
        with pytest.raises(ValueError):
            build(lib.distributions, lib)
