"""nn.LSTM on `lstm_seq` / `lstm_seq_grad` (ops/lstm_sequence.py), the whole sequence as one op
each way: the per-step ops' values and gradients bit for bit, torch.nn.LSTM's values and
gradients (double backward too), finite differences in float64, inference without the saved
gates, and compile() tracing the per-step composite."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import eager, ops
from dualgrad.eager import nn
from dualgrad.eager.nn import rnn

from tests.eager._compare import eager_and_compiled

_LSTM_SEQ = ops.lstm_seq

CONFIGS = [dict(), dict(bias=False), dict(num_layers=2, bidirectional=True),
           dict(batch_first=True, initial=False), dict(steps=1, batch=1, hidden=1),
           dict(num_layers=2, batch_first=True, bidirectional=True, bias=False)]


def _data(dtype, steps=5, batch=3, n_in=4, hidden=6, num_layers=1, bidirectional=False,
          batch_first=False, initial=True, **_):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((batch, steps, n_in) if batch_first else (steps, batch, n_in))
    dirs = num_layers * (2 if bidirectional else 1)
    state = [rng.standard_normal((dirs, batch, hidden)) for _ in range(2)] if initial else None
    out_shape = x.shape[:2] + (hidden * (2 if bidirectional else 1),)
    return [a.astype(dtype) if a is not None else None
            for a in (x, rng.standard_normal(out_shape))], \
        None if state is None else [s.astype(dtype) for s in state]


def _layer(lib, dtype, n_in=4, hidden=6, num_layers=1, bias=True, bidirectional=False,
           batch_first=False, **_):
    return lib.nn.LSTM(n_in, hidden, num_layers=num_layers, bias=bias, batch_first=batch_first,
                       bidirectional=bidirectional, dtype=getattr(lib, np.dtype(dtype).name))


def _step(lib, model, x, w, state):
    """(out, h_n, c_n, loss) of one forward and backward, the loss reading all three."""
    t = lib.tensor if lib is eager else lib.from_numpy
    x = t(x).requires_grad_()
    hx = None if state is None else tuple(t(s).requires_grad_() for s in state)
    out, (h, c) = model(x, hx)
    loss = (out * t(w)).sum() + (h * h).sum() + (c * c * c).sum()
    loss.backward()
    grads = [x.grad] + [p.grad for p in model.parameters()] + \
        ([] if hx is None else [s.grad for s in hx])
    return [a.detach().numpy() for a in (out, h, c, loss)] + [g.numpy() for g in grads]


def _torch_twin(torch, model, dtype, config):
    theirs = _layer(torch, dtype, **config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            getattr(theirs, name).copy_(torch.from_numpy(p.detach().numpy().copy()))
    return theirs


def _ours(config, dtype, per_step=False, monkeypatch=None):
    eager.manual_seed(0)
    model = _layer(eager, dtype, **config)
    (x, w), state = _data(dtype, **config)
    if per_step:
        monkeypatch.setattr(rnn, "_one_op", lambda *a: False)
    return model, _step(eager, model, x, w, state)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_values_and_gradients_are_the_per_step_ops_bit_for_bit(config, dtype, monkeypatch):
    calls = []
    monkeypatch.setattr(ops, "lstm_seq", lambda *a, **k: calls.append(k) or _LSTM_SEQ(*a, **k))
    _, got = _ours(config, dtype)
    dirs = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    assert [k["save"] for k in calls] == [True] * dirs    # NOTE: one op per layer and direction
    _, want = _ours(config, dtype, per_step=True, monkeypatch=monkeypatch)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)


def test_training_size_is_the_per_step_ops_bit_for_bit(monkeypatch):
    """The benchmark's layer (128 -> 256, T 50, batch 64): products large enough that
    ops/gemm.py cuts them into blocks, w_hh's gradient summed over 50 steps."""
    config = dict(steps=50, batch=64, n_in=128, hidden=256, batch_first=True)
    _, got = _ours(config, np.float32)
    _, want = _ours(config, np.float32, per_step=True, monkeypatch=monkeypatch)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_values_and_gradients_match_torch(config, dtype):
    torch = pytest.importorskip("torch")
    model, got = _ours(config, dtype)
    theirs = _torch_twin(torch, model, dtype, config)
    (x, w), state = _data(dtype, **config)
    want = _step(torch, theirs, x, w, state)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, err_msg=f"result {i}", **tol)


def test_the_op_matches_finite_differences_in_float64():
    rng = np.random.default_rng(5)
    steps, n, h = 4, 3, 2
    shapes = ((steps, n, 4 * h), (n, h), (n, h), (4 * h, h), (4 * h,))
    args = [rng.standard_normal(s) for s in shapes]
    probe = rng.standard_normal((6 * steps, n, h))   # NOTE: every row: h_t, the gates, c_t

    def loss(*arrays):
        return float((ops.lstm_seq(*arrays, reverse=True) * probe).sum())

    ts = [eager.tensor(a, requires_grad=True) for a in args]
    (ops.lstm_seq(*ts, reverse=True) * eager.tensor(probe)).sum().backward()
    for k, (a, t) in enumerate(zip(args, ts)):
        numeric = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            up, down = [x.copy() for x in args], [x.copy() for x in args]
            up[k][i] += 1e-6
            down[k][i] -= 1e-6
            numeric[i] = (loss(*up) - loss(*down)) / 2e-6
        np.testing.assert_allclose(t.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_double_backward_matches_torch():
    """A gradient penalty through the layer: create_graph=True takes the rule written in
    differentiable ops (the per-step composite's gradient)."""
    torch = pytest.importorskip("torch")
    config = dict(steps=4, batch=2, n_in=3, hidden=4)
    eager.manual_seed(0)
    ours = _layer(eager, np.float64, **config)
    theirs = _torch_twin(torch, ours, np.float64, config)
    (x, w), _ = _data(np.float64, **config)
    got = []
    for lib, model, t in ((eager, ours, eager.tensor), (torch, theirs, torch.from_numpy)):
        xt = t(x).requires_grad_()
        out, (h, c) = model(xt)
        ((out * t(w)).sum() + (c * c).sum()).backward(create_graph=True)
        gx = xt.grad
        first = gx.detach().numpy().copy()   # NOTE: before the next backward adds into x.grad
        (gx * gx).sum().backward()
        got.append([first] + [p.grad.detach().numpy() for p in model.parameters()])
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_inference_keeps_only_the_outputs_and_gives_the_same_values(monkeypatch):
    config = dict(num_layers=2, bidirectional=True)
    model, got = _ours(config, np.float32)
    (x, _), state = _data(np.float32, **config)
    calls = []
    monkeypatch.setattr(ops, "lstm_seq", lambda *a, **k: calls.append(k) or _LSTM_SEQ(*a, **k))
    with eager.no_grad():
        out, (h, c) = model(eager.tensor(x), tuple(eager.tensor(s) for s in state))
    assert [k["save"] for k in calls] == [False] * 4
    for a, b in zip((out, h, c), got):
        np.testing.assert_array_equal(a.numpy(), b)
    gx, s = np.zeros((3, 2, 8), np.float32), np.zeros((2, 2), np.float32)
    w = np.ones((8, 2), np.float32)
    full, short = ops.lstm_seq(gx, s, s, w), ops.lstm_seq(gx, s, s, w, save=False)
    assert full.shape == (18, 2, 2) and short.shape == (4, 2, 2)
    np.testing.assert_array_equal(full[:3], short[:3])
    np.testing.assert_array_equal(full[-1], short[-1])


def test_autocast_lowers_each_steps_product_as_before(monkeypatch):
    config = dict(num_layers=2)
    got = []
    for per_step in (False, True):
        with eager.autocast("cpu"):
            got.append(_ours(config, np.float32, per_step, monkeypatch)[1])
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


def test_the_output_takes_in_place_writes_as_before():
    model = nn.LSTM(3, 4)
    x = eager.tensor(np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32))
    out, _ = model(x)
    out.mul_(2)     # NOTE: the per-step path's output is a stack, not a view: allowed
    out.sum().backward()
    assert model.weight_hh_l0.grad is not None


def test_compile_traces_the_per_step_composite_and_matches_eager():
    config = dict(steps=4, batch=3, n_in=5, hidden=4)
    eager.manual_seed(0)
    model = _layer(eager, np.float32, **config)
    (x, w), _ = _data(np.float32, **config)

    def loss_fn(x):
        out, (h, c) = model(x)
        return (out * eager.tensor(w)).sum() + (c * c).sum()

    got, compiled = eager_and_compiled(loss_fn, model, x)
    names = {n.op.name for n in compiled.graph.get_operations()}
    assert not names & {"lstm_seq", "lstm_seq_grad", "lstm_cell_c", "lstm_cell_h"}, names
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_state_of_another_batch_is_torchs_error():
    model = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \(1, 3, 4\)"):
        model(eager.zeros((5, 2, 3)), (eager.zeros((1, 3, 4)), eager.zeros((1, 3, 4))))
