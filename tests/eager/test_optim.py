"""eager.optim: three steps of SGD and Adam against NumPy written from torch.optim's formulas,
and against torch.optim itself when torch is importable."""
import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn, optim

P0 = {"w": np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32),
      "b": np.array([0.1, -0.2], np.float32)}
A = {"w": np.array([[1.0, 2.0, 0.5], [0.3, 1.0, 3.0]], np.float32),
     "b": np.array([2.0, 0.5], np.float32)}
C = {"w": np.array([[0.2, -0.1, 0.0], [0.4, 0.0, -0.3]], np.float32),
     "b": np.array([-0.5, 0.3], np.float32)}
STEPS = 3


def _loss(params):
    """sum(a * p^2 + c * p): the gradient 2 a p + c depends on p, so each step matters."""
    total = None
    for k, p in params.items():
        term = (eager.tensor(A[k]) * p * p + eager.tensor(C[k]) * p).sum()
        total = term if total is None else total + term
    return total


def _grad_np(k, p):
    return 2.0 * A[k] * p + C[k]


def _run_ours(make_opt):
    params = {k: nn.Parameter(v) for k, v in P0.items()}
    opt = make_opt(list(params.values()))
    for _ in range(STEPS):
        opt.zero_grad()
        _loss(params).backward()
        opt.step()
    return {k: p.detach().numpy() for k, p in params.items()}


def _sgd_np(lr, momentum=0.0, weight_decay=0.0, nesterov=False):
    """torch.optim.SGD's documented update (dampening 0)."""
    out = {}
    for k, p in P0.items():
        p, buf = p.astype(np.float64), None
        for t in range(STEPS):
            g = _grad_np(k, p)
            if weight_decay:
                g = g + weight_decay * p
            if momentum:
                buf = g.copy() if t == 0 else momentum * buf + g
                g = g + momentum * buf if nesterov else buf
            p = p - lr * g
        out[k] = p
    return out


def _adam_np(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    """torch.optim.Adam's documented update (L2 weight decay added to the gradient)."""
    b1, b2 = betas
    out = {}
    for k, p in P0.items():
        p = p.astype(np.float64)
        m, v = np.zeros_like(p), np.zeros_like(p)
        for t in range(1, STEPS + 1):
            g = _grad_np(k, p)
            if weight_decay:
                g = g + weight_decay * p
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
            p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out[k] = p
    return out


def _run_torch(make_opt):
    torch = pytest.importorskip("torch")
    params = {k: torch.tensor(v, requires_grad=True) for k, v in P0.items()}
    opt = make_opt(torch, list(params.values()))
    for _ in range(STEPS):
        opt.zero_grad()
        sum((torch.from_numpy(A[k]) * p * p + torch.from_numpy(C[k]) * p).sum()
            for k, p in params.items()).backward()
        opt.step()
    return {k: p.detach().numpy() for k, p in params.items()}


SGD_CASES = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.05, momentum=0.9),
    "nesterov": dict(lr=0.05, momentum=0.9, nesterov=True),
    "weight_decay": dict(lr=0.1, weight_decay=0.01),
    "all": dict(lr=0.05, momentum=0.8, weight_decay=0.05, nesterov=True),
}
ADAM_CASES = {
    "defaults": dict(lr=0.1),
    "weight_decay": dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
}


def _close(got, expected):
    for k in P0:
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("case", SGD_CASES, ids=str)
def test_sgd_three_steps_match_numpy(case):
    kw = SGD_CASES[case]
    _close(_run_ours(lambda ps: optim.SGD(ps, **kw)), _sgd_np(**kw))


@pytest.mark.parametrize("case", ADAM_CASES, ids=str)
def test_adam_three_steps_match_numpy(case):
    kw = ADAM_CASES[case]
    _close(_run_ours(lambda ps: optim.Adam(ps, **kw)), _adam_np(**kw))


@pytest.mark.parametrize("case", SGD_CASES, ids=str)
def test_sgd_matches_torch(case):
    kw = SGD_CASES[case]
    theirs = _run_torch(lambda torch, ps: torch.optim.SGD(ps, **kw))
    _close(_run_ours(lambda ps: optim.SGD(ps, **kw)), theirs)


@pytest.mark.parametrize("case", ADAM_CASES, ids=str)
def test_adam_matches_torch(case):
    kw = ADAM_CASES[case]
    theirs = _run_torch(lambda torch, ps: torch.optim.Adam(ps, **kw))
    _close(_run_ours(lambda ps: optim.Adam(ps, **kw)), theirs)


def test_parameters_keep_their_identity_and_dtype():
    p = nn.Parameter(np.ones(3, np.float32))
    data = p.detach().numpy()
    opt = optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    assert p.detach().numpy() is data and p.dtype == np.float32
    assert not np.allclose(p.detach().numpy(), 1.0)


def test_zero_grad_and_params_without_grad():
    a, b = nn.Parameter(np.ones(2, np.float32)), nn.Parameter(np.ones(2, np.float32))
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    (a * 2.0).sum().backward()
    opt.step()                                        # b has no grad: it is left alone
    np.testing.assert_allclose(a.detach().numpy(), [0.0, 0.0])
    np.testing.assert_allclose(b.detach().numpy(), [1.0, 1.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_bad_arguments():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD([nn.Parameter(np.ones(1, np.float32))], lr=-1.0)


def test_training_a_linear_model_converges():
    eager.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    model = nn.Linear(3, 1)
    opt = optim.Adam(model.parameters(), lr=0.1)
    for _ in range(200):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(eager.tensor(x)), eager.tensor(y))
        loss.backward()
        opt.step()
    assert loss.item() < 1e-3
    np.testing.assert_allclose(model.weight.detach().numpy(), [[1.0, -2.0, 0.5]], atol=0.02)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [dict(lr=0.05, momentum=0.9),
                                dict(lr=0.1, momentum=0.5, dampening=0.3),
                                dict(lr=0.05, momentum=0.8, weight_decay=0.05, nesterov=True),
                                dict(lr=0.03, momentum=0.9, maximize=True)], ids=str)
def test_sgd_momentum_in_place_equals_the_numpy_rule_bit_for_bit(kw, dtype):
    """SGD with momentum runs one in-place loop per parameter after its first step: each step
    must give exactly the float results of ops/updates.sgd_update, and write the momentum
    buffer tensor in place, as torch does."""
    from dualgrad.ops.updates import sgd_update
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((37, 11)).astype(dtype)
    grads = [rng.standard_normal(p0.shape).astype(dtype) for _ in range(4)]
    p = nn.Parameter(p0.copy())
    opt = optim.SGD([p], **kw)
    ref_p, ref_buf = p0.copy(), None
    sign = -1 if kw.get("maximize") else 1
    for t, g in enumerate(grads):
        p.grad = eager.tensor(g)
        opt.step()
        ref_p, ref_buf = sgd_update(ref_p, sign * g, ref_buf, kw["lr"], kw["momentum"],
                                    kw.get("weight_decay", 0.0), kw.get("nesterov", False),
                                    t == 0, kw.get("dampening", 0.0))
        if t == 0:
            ref_buf = ref_buf.copy()
            buf = opt.state[p]["momentum_buffer"]
        assert opt.state[p]["momentum_buffer"] is buf       # the same tensor, updated in place
        np.testing.assert_array_equal(p.detach().numpy(), ref_p)
        np.testing.assert_array_equal(buf.numpy(), ref_buf)
        assert p.dtype == dtype and buf.dtype == dtype


def test_sgd_momentum_on_a_non_contiguous_parameter_takes_the_numpy_rule():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    p = nn.Parameter(base.copy())
    p.data = eager.from_numpy(base.copy()[:, ::2])     # a strided view as the parameter
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    for _ in range(3):
        p.grad = eager.ones(4, 3)
        opt.step()
    expected = base[:, ::2] - 0.1 * (1 + 1.9 + 2.71)
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-6)


def test_sgd_momentum_with_a_transposed_gradient_equals_the_numpy_rule():
    from dualgrad.ops.updates import sgd_update
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal((5, 7)).astype(np.float32)
    p = nn.Parameter(p0.copy())
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    ref_p, ref_buf = p0.copy(), None
    for t in range(3):
        g = np.ascontiguousarray(rng.standard_normal((7, 5)).astype(np.float32)).T  # F-ordered
        p.grad = eager.from_numpy(g)
        opt.step()
        ref_p, ref_buf = sgd_update(ref_p, g, ref_buf, 0.1, 0.9, 0.0, False, t == 0)
        ref_buf = np.array(ref_buf, copy=True)
        np.testing.assert_array_equal(p.detach().numpy(), ref_p)
