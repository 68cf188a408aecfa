"""compile() keeps eager's meaning: random draws per call, guards on what the trace read,
buffers as inputs, and an interrupted trace that leaves eager state as it found it."""
import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager, graph, ops
import dualgrad.eager.nn as nn


def _quiet():
    """Warnings are errors: a frozen draw or a graph break must not pass unnoticed."""
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("error")
    return w


# -- random numbers ---------------------------------------------------------------------------
def _vae(seed):
    eager.manual_seed(seed)
    enc, dec = nn.Linear(4, 4), nn.Linear(2, 4)
    opt = eager.optim.SGD(list(enc.parameters()) + list(dec.parameters()), lr=0.1)

    def step(x):
        opt.zero_grad()
        h = enc(x)
        mu, logvar = h[:, :2], h[:, 2:]
        z = mu + eager.randn_like(mu) * (0.5 * logvar).exp()
        loss = ((dec(z) - x) ** 2).mean() + (-0.5 * (1 + logvar - mu ** 2 - logvar.exp())).mean()
        loss.backward()
        opt.step()
        return loss, z.detach()
    return step, enc


def test_a_compiled_vae_step_draws_new_noise_each_call_and_trains_as_eager():
    x = eager.tensor(np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    step, enc = _vae(0)
    eager_run = [step(x) for _ in range(4)]
    step_c, enc_c = _vae(0)
    compiled = compiler.compile(step_c)
    w = _quiet()
    try:
        comp_run = [compiled(x) for _ in range(4)]
    finally:
        w.__exit__(None, None, None)
    assert compiled.traces == 1
    zs = [z.numpy() for _, z in comp_run]
    assert not np.allclose(zs[0], zs[1])          # new noise on every call
    for (le, ze), (lc, zc) in zip(eager_run, comp_run):
        np.testing.assert_allclose(float(lc), float(le), rtol=1e-5)
        np.testing.assert_allclose(zc.numpy(), ze.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(enc_c.weight.detach().numpy(), enc.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    step_again, _ = _vae(0)                        # reproducible under manual_seed
    again = compiler.compile(step_again)
    for _, zc in comp_run:
        np.testing.assert_array_equal(again(x)[1].numpy(), zc.numpy())


@pytest.mark.parametrize("draw", [
    lambda x: x + eager.rand(3, 4),
    lambda x: x + eager.randn(3, 4, dtype=eager.float64).float(),
    lambda x: x + eager.randint(0, 10, (3, 4)),
    lambda x: x * eager.bernoulli(eager.full((3, 4), 0.5)),
    lambda x: x + eager.randn_like(x) + eager.rand_like(x),
    lambda x: x + eager.zeros(3, 4).normal_(),
    lambda x: x + eager.normal(0.0, 2.0, size=(3, 4)),
    lambda x: nn.functional.dropout(x, 0.5, training=True),
], ids=["rand", "randn", "randint", "bernoulli", "like", "normal_", "normal", "dropout"])
def test_random_ops_draw_as_eager_from_the_same_stream(draw):
    x = eager.ones(3, 4)
    eager.manual_seed(3)
    want = [draw(x).numpy() for _ in range(3)]
    f = compiler.compile(draw)
    eager.manual_seed(3)
    w = _quiet()
    try:
        got = [f(x).numpy() for _ in range(3)]
    finally:
        w.__exit__(None, None, None)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    assert not np.array_equal(got[0], got[1])
    assert f.traces == 1


# -- guards -----------------------------------------------------------------------------------
class _Holder:
    pass


def test_eval_reached_through_a_helper_a_dict_and_an_attribute_changes_the_compiled_result():
    eager.manual_seed(0)
    holder = _Holder()
    holder.net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    table = {"m": holder.net}

    def helper(x):
        return table["m"](x)
    f = compiler.compile(lambda x: helper(x) * 2.0)
    x = eager.ones(2, 4)
    f(x)
    holder.net.eval()
    np.testing.assert_allclose(f(x).detach().numpy(), (holder.net(x) * 2.0).detach().numpy())
    holder.net.train()
    eager.manual_seed(9)
    want = (holder.net(x) * 2.0).detach().numpy()
    eager.manual_seed(9)
    np.testing.assert_allclose(f(x).detach().numpy(), want)
    assert f.traces == 2      # train and eval, each traced once


def test_buffers_are_inputs_so_load_state_dict_is_seen():
    bn = nn.BatchNorm1d(4)
    bn.eval()
    f = compiler.compile(lambda x: bn(x))
    x = eager.ones(2, 4)
    f(x)
    bn.load_state_dict({k: v + 1 if v.dtype.kind == "f" else v
                        for k, v in bn.state_dict().items()})
    np.testing.assert_allclose(f(x).detach().numpy(), bn(x).detach().numpy())
    assert f.traces == 1


def test_a_changed_global_closure_value_or_module_attribute_retraces():
    x = eager.ones(2, 3)
    scale = [2.0]

    def make(s):
        return compiler.compile(lambda x: x * s)
    g = make(3.0)
    assert float(g(x)[0, 0]) == 3.0
    globals()["_SCALE"] = 2.0
    f = compiler.compile(_scaled)
    assert float(f(x)[0, 0]) == 2.0
    globals()["_SCALE"] = 5.0
    assert float(f(x)[0, 0]) == 5.0            # the helper's global is read anew
    drop = nn.Dropout(0.0)
    h = compiler.compile(lambda x: drop(x))
    np.testing.assert_array_equal(h(x).numpy(), x.numpy())
    drop.p = 1.0
    np.testing.assert_array_equal(h(x).numpy(), np.zeros((2, 3), np.float32))
    assert scale == [2.0]


_SCALE = 2.0


def _helper_scale():
    return _SCALE


def _scaled(x):
    return x * _helper_scale()


# -- an interrupted trace ---------------------------------------------------------------------
class _Interrupt(BaseException):
    pass


def _state(model, opt):
    return ([None if p.grad is None else (type(p.grad), p.grad.numpy().copy())
             for p in model.parameters()],
            [b.numpy().copy() for b in model.buffers()], eager.is_grad_enabled(),
            ops.core.TRACING[0], ops.core.current_trace())


def _where_to_fail(point, monkeypatch):
    """Raise at one point of a traced training step."""
    if point == "gradients":
        real = graph.gradients
        monkeypatch.setattr(graph, "gradients", lambda *a, **k: (_ for _ in ()).throw(
            _Interrupt()) if True else real(*a, **k))
    elif point == "session":
        monkeypatch.setattr(graph, "Session", lambda *a, **k: (_ for _ in ()).throw(
            KeyboardInterrupt()))


@pytest.mark.parametrize("point", ["after_backward", "in_forward", "after_step", "gradients",
                                   "session", "error"])
def test_an_interrupted_trace_leaves_eager_state_as_before(point, monkeypatch):
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    model.eval()
    opt = eager.optim.SGD(model.parameters(), lr=0.1)
    x = eager.ones(5, 3)
    model(x).sum().backward()          # .grad set before the call: must stay these values
    before = _state(model, opt)

    def step(x):
        loss = model(x).sum()
        if point == "in_forward":
            raise KeyboardInterrupt
        loss.backward()
        if point == "after_backward":
            raise KeyboardInterrupt
        if point == "error":
            raise _Interrupt
        opt.step()
        if point == "after_step":
            raise KeyboardInterrupt
        return loss
    _where_to_fail(point, monkeypatch)
    with pytest.raises((KeyboardInterrupt, _Interrupt)):
        compiler.compile(step)(x)
    after = _state(model, opt)
    for b, a in zip(before[0], after[0]):
        assert a[0] is eager.Tensor or issubclass(a[0], eager.Tensor)
        assert a[0].__name__ != "Tracer"
        np.testing.assert_array_equal(a[1], b[1])
    for b, a in zip(before[1], after[1]):
        np.testing.assert_array_equal(a, b)
    assert after[2:] == before[2:]
    opt.step()                          # the next eager step works
    monkeypatch.undo()
    assert np.isfinite(compiler.compile(lambda x: model(x).sum())(x).item())


class _Config:
    def __init__(self):
        self.scale = 2.0
        self.calls = 0


_CFG = _Config()


def _configured(x):
    _CFG.calls += 1              # a side effect: done once per trace, no retrace for it
    return x * _CFG.scale


def test_a_config_objects_attribute_and_a_bound_methods_object_are_guarded():
    x = eager.ones(2)
    f = compiler.compile(_configured)
    assert float(f(x)[0]) == 2.0 and float(f(x)[0]) == 2.0
    assert f.traces == 1
    _CFG.scale = 3.0
    assert float(f(x)[0]) == 3.0

    class Trainer:
        def __init__(self):
            self.lr = 0.5

        def step(self, x):
            return x * self.lr
    t = Trainer()
    g = compiler.compile(t.step)
    assert float(g(x)[0]) == 0.5
    t.lr = 0.25
    assert float(g(x)[0]) == 0.25


def test_a_global_or_closure_tensor_changed_in_place_is_never_stale():
    table = eager.tensor([1.0, 2.0, 3.0])
    shift = eager.tensor([0.5, 0.5, 0.5])
    f = compiler.compile(lambda x: x * table + shift * 2.0)
    x = eager.ones(3)
    np.testing.assert_allclose(f(x).numpy(), [2.0, 3.0, 4.0])
    table.add_(1.0)                     # read as a graph constant
    shift.mul_(0.0)                     # read by an op computed while tracing
    np.testing.assert_allclose(f(x).numpy(), [2.0, 3.0, 4.0])
    assert f.traces == 2
    np.testing.assert_allclose(f(x).numpy(), (x * table + shift * 2.0).numpy())


def test_batchnorm_counts_every_compiled_call_as_eager_does():
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    twin = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    twin.load_state_dict(model.state_dict())
    f = compiler.compile(lambda x: model(x).sum())
    x = eager.randn(5, 3)
    for _ in range(3):
        f(x)
        twin(x)
    assert int(model[1].num_batches_tracked) == int(twin[1].num_batches_tracked) == 3
    np.testing.assert_allclose(model[1].running_mean.numpy(), twin[1].running_mean.numpy(),
                               rtol=1e-6)
