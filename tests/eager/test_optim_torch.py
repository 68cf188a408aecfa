"""Optimizers, parameter groups, state dicts and schedulers, step by step against PyTorch."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import nn, optim

torch = pytest.importorskip("torch")


def _pair(seed=0):
    """The same two-layer model in both libraries (dualgrad, torch)."""
    eager.manual_seed(seed)
    ours = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p, q in zip(ours.parameters(), ref.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))
    return ours, ref


def _data(seed=1, n=16):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 3, n)


def _loss(lib, model, x, y):
    return lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))


def _groups(lib, model, kw):
    first, last = model[0], model[2]
    return [{"params": first.parameters()}, {"params": last.parameters(), **kw}]


def _close(ours, ref, rtol=2e-5, atol=1e-6):
    for p, q in zip(ours.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=rtol, atol=atol)


OPTIMIZERS = [
    ("SGD", dict(lr=0.1), {}),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2), {"lr": 0.01}),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.1), {"momentum": 0.9}),
    ("Adam", dict(lr=1e-2), {"lr": 1e-3, "betas": (0.8, 0.99)}),
    ("Adam", dict(lr=1e-2, weight_decay=0.1, maximize=False), {}),
    ("AdamW", dict(lr=1e-2), {"weight_decay": 0.5}),
    ("Adam", dict(lr=1e-2, amsgrad=True), {"betas": (0.5, 0.6)}),
    ("AdamW", dict(lr=1e-2, amsgrad=True, weight_decay=0.1), {}),
    ("RMSprop", dict(lr=1e-2), {"alpha": 0.9}),
    ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-3), {}),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1), {"lr": 0.05}),
    ("Adadelta", dict(lr=1.0), {"rho": 0.8}),
    ("Adamax", dict(lr=2e-2, weight_decay=0.1), {"betas": (0.8, 0.99)}),
    ("NAdam", dict(lr=1e-2), {"momentum_decay": 0.1}),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True), {"lr": 0.05}),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, maximize=True), {}),
    ("RAdam", dict(lr=1e-2), {"betas": (0.5, 0.6)}),      # rho_t > 5 from step 2 on
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True), {}),
    ("ASGD", dict(lr=0.05, t0=2, lambd=0.1), {"alpha": 0.5}),   # averaging from step 3 on
    ("ASGD", dict(lr=0.05, weight_decay=0.1), {}),
    ("Rprop", dict(lr=0.05), {"etas": (0.3, 1.5), "step_sizes": (1e-3, 0.06)}),
]


@pytest.mark.parametrize("name,kw,group_kw", OPTIMIZERS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(OPTIMIZERS)])
def test_optimizer_with_param_groups_matches_torch(name, kw, group_kw):
    ours, ref = _pair()
    opt = getattr(optim, name)(_groups(eager, ours, group_kw), **kw)
    topt = getattr(torch.optim, name)(_groups(torch, ref, group_kw), **kw)
    x, y = _data()
    for step in range(6):
        for lib, model, o in ((eager, ours, opt), (torch, ref, topt)):
            o.zero_grad()
            _loss(lib, model, x, y).backward()
            o.step()
        if step == 2:                        # a scheduler's write, by hand
            opt.param_groups[1]["lr"] *= 0.5
            topt.param_groups[1]["lr"] *= 0.5
    _close(ours, ref)


def test_param_group_options_and_errors():
    model = nn.Linear(2, 2)
    opt = optim.SGD([{"params": [model.weight]}, {"params": [model.bias], "lr": 1.0}], lr=0.1,
                    momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    assert opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [model.bias]})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([{"params": [1.0]}], lr=0.1)


def _train(lib, model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        _loss(lib, model, x, y).backward()
        opt.step()


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Adadelta", "Adamax",
                                  "NAdam", "RAdam", "ASGD", "Rprop"])
def test_state_dict_resumes_exactly(name, tmp_path):
    x, y = _data()
    kw = {"lr": 0.05, "momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    full, _ = _pair()
    opt_full = getattr(optim, name)(full.parameters(), **kw)
    _train(eager, full, opt_full, x, y, 6)

    first, _ = _pair()
    opt = getattr(optim, name)(first.parameters(), **kw)
    _train(eager, first, opt, x, y, 3)
    eager.save(first.state_dict(), tmp_path / "model.pt")
    eager.save(opt.state_dict(), tmp_path / "optim.pt")
    second, _ = _pair(seed=5)
    second.load_state_dict(eager.load(tmp_path / "model.pt"))
    opt2 = getattr(optim, name)(second.parameters(), **kw)
    opt2.load_state_dict(eager.load(tmp_path / "optim.pt"))
    _train(eager, second, opt2, x, y, 3)
    for p, q in zip(full.parameters(), second.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6)


def test_state_dict_layout_is_torchs():
    ours, ref = _pair()
    opt, topt = optim.Adam(ours.parameters(), lr=0.01), torch.optim.Adam(ref.parameters(),
                                                                         lr=0.01)
    x, y = _data()
    _train(eager, ours, opt, x, y, 2)
    _train(torch, ref, topt, x, y, 2)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"])
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])
    assert float(sd["state"][0]["step"].item()) == float(tsd["state"][0]["step"])
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})


def test_step_with_closure_returns_the_loss():
    ours, _ = _pair()
    opt = optim.SGD(ours.parameters(), lr=0.1)
    x, y = _data()

    def closure():
        opt.zero_grad()
        loss = _loss(eager, ours, x, y)
        loss.backward()
        return loss
    first = opt.step(closure).item()
    assert opt.step(closure).item() < first


def test_lbfgs_matches_torch():
    ours, ref = _pair()
    opt = optim.LBFGS(ours.parameters(), lr=0.5, max_iter=5, history_size=4)
    topt = torch.optim.LBFGS(ref.parameters(), lr=0.5, max_iter=5, history_size=4)
    x, y = _data()
    for lib, model, o in ((eager, ours, opt), (torch, ref, topt)):
        def closure(lib=lib, model=model, o=o):
            o.zero_grad()
            loss = _loss(lib, model, x, y)
            loss.backward()
            return loss
        for _ in range(3):
            o.step(closure)
    _close(ours, ref, rtol=2e-4, atol=2e-5)
    with pytest.raises(NotImplementedError, match="strong_wolfe"):
        optim.LBFGS(ours.parameters(), line_search_fn="strong_wolfe")


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.001)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (1 + e))),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.95)),
    ("LinearLR", dict(start_factor=0.25, total_iters=4)),
    ("ConstantLR", dict(factor=0.5, total_iters=3)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=12)),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], epochs=3, steps_per_epoch=4, anneal_strategy="linear",
                        three_phase=True)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.01)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3)),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=2, step_size_down=3,
                      mode="triangular2", base_momentum=0.7)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range", gamma=0.9)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2,
                      scale_fn=lambda x: 1.0 / (1 + x), scale_mode="iterations")),
]


@pytest.mark.parametrize("name,kw", SCHEDULERS, ids=[f"{n}-{i}" for i, (n, _) in
                                                      enumerate(SCHEDULERS)])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_scheduler_lrs_match_torch(name, kw, opt_name):
    ours, ref = _pair()
    okw = {"lr": 0.1, "momentum": 0.9} if opt_name == "SGD" else {"lr": 0.1}
    opt = getattr(optim, opt_name)(_groups(eager, ours, {"lr": 0.2}), **okw)
    topt = getattr(torch.optim, opt_name)(_groups(torch, ref, {"lr": 0.2}), **okw)
    s = getattr(optim.lr_scheduler, name)(opt, **kw)
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    for _ in range(12):
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        for g, tg in zip(opt.param_groups, topt.param_groups):
            for key in ("momentum", "betas"):
                if key in tg:
                    assert g[key] == pytest.approx(tg[key], rel=1e-12)
        opt.step()
        topt.step()
        s.step()
        ts.step()


def test_reduce_lr_on_plateau_matches_torch():
    ours, ref = _pair()
    opt, topt = optim.SGD(ours.parameters(), lr=1.0), torch.optim.SGD(ref.parameters(), lr=1.0)
    kw = dict(mode="min", factor=0.5, patience=2, cooldown=1, min_lr=0.05)
    s = optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kw)
    for metric in [5, 4, 4, 4, 4, 3.9999, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]:
        s.step(metric)
        ts.step(metric)
        assert s.get_last_lr() == ts.get_last_lr()
    assert opt.param_groups[0]["lr"] == 0.125


def test_scheduler_state_dict_round_trip():
    ours, _ = _pair()
    opt = optim.SGD(ours.parameters(), lr=0.1)
    s = optim.lr_scheduler.StepLR(opt, step_size=2)
    for _ in range(3):
        opt.step()
        s.step()
    opt2 = optim.SGD(ours.parameters(), lr=0.1)
    s2 = optim.lr_scheduler.StepLR(opt2, step_size=2)
    s2.load_state_dict(s.state_dict())
    assert s2.last_epoch == 3 and s2.get_last_lr() == s.get_last_lr()


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "RMSprop",
                                  "Adagrad", "Adadelta", "AdamW"])
def test_state_and_group_keys_are_torchs(name):
    """A checkpoint's optimizer state names what torch's does (so code reading
    state["exp_inf"] or group["etas"] works), after the same steps."""
    ours, ref = _pair()
    opt, topt = getattr(optim, name)(ours.parameters()), getattr(torch.optim, name)(
        ref.parameters())
    x, y = _data()
    _train(eager, ours, opt, x, y, 2)
    _train(torch, ref, topt, x, y, 2)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])
    assert sd["param_groups"] == tsd["param_groups"]


SWITCHES = {"foreach": [True, False], "fused": [False], "capturable": [False],
            "differentiable": [False], "maximize": [True]}


def _switch_cases():
    """Each optimizer of OPTIMIZERS' configurations, and each of torch's implementation
    switches its signature takes, given once (torch keeps them in the param group)."""
    for name, kw, group_kw in OPTIMIZERS:
        yield name, kw, group_kw
        params = inspect.signature(getattr(torch.optim, name)).parameters
        for key, values in SWITCHES.items():
            for v in values if key in params else ():
                yield name, {**kw, key: v}, group_kw


@pytest.mark.parametrize("name,kw,group_kw", list(_switch_cases()),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_param_groups_are_torchs(name, kw, group_kw):
    """Every param group holds torch's keys, in torch's order, with torch's values (the
    implementation switches foreach / fused / capturable / differentiable included), and so
    does state_dict()["param_groups"]."""
    ours, ref = _pair()
    opt = getattr(optim, name)(_groups(eager, ours, group_kw), **kw)
    topt = getattr(torch.optim, name)(_groups(torch, ref, group_kw), **kw)
    strip = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    tstrip = [{k: v for k, v in g.items() if k != "params"} for g in topt.param_groups]
    assert [list(g) for g in strip] == [list(g) for g in tstrip]
    assert strip == tstrip
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    # NOTE: == holds 0 == 0.0; the printed optimizer shows each default's type (torch's
    # weight_decay, momentum, dampening, lr_decay default to the int 0)
    assert repr(opt) == repr(topt)


@pytest.mark.parametrize("order", ["scheduler first", "optimizer first", "custom optimizer"])
def test_scheduler_before_optimizer_warns_as_torch(order):
    """torch warns once when the first scheduler.step() comes before any optimizer.step()
    (the schedule's first value is then skipped); so does dualgrad, for a subclass whose step
    is its own too."""
    import warnings
    got = []
    for lib in (torch, eager):
        class Plain(lib.optim.SGD):
            def step(self, closure=None):
                return super().step(closure)
        p = lib.nn.Parameter(lib.zeros(2))
        opt = (Plain if order == "custom optimizer" else lib.optim.SGD)([p], lr=0.1)
        sched = lib.optim.lr_scheduler.StepLR(opt, 1, 0.5)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(2):
                if order == "optimizer first":
                    opt.step()
                sched.step()
                if order != "optimizer first":
                    opt.step()
        got.append(([str(x.message)[:60] for x in w], opt.param_groups[0]["lr"]))
    assert got[1] == got[0]
