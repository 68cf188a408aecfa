"""compile() of a whole training step: zero_grad, backward() and the optimizer's step inside
the compiled function, against the same step run eagerly (compiler/tracer.py, side effects):
the forward and backward in the plan, the optimizer's own update after it at every call."""
import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F

OPTIMIZERS = [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
    (optim.Adam, dict(lr=1e-2)),
    (optim.Adam, dict(lr=1e-2, weight_decay=0.1, betas=(0.8, 0.99))),
    (optim.AdamW, dict(lr=1e-2)),
    (optim.RMSprop, dict(lr=1e-2)),
    (optim.RMSprop, dict(lr=1e-2, momentum=0.5, centered=True, weight_decay=1e-3)),
    (optim.Adagrad, dict(lr=0.1, initial_accumulator_value=0.1, lr_decay=1e-3)),
    (optim.Adadelta, dict()),
]


def _model(seed=0):
    eager.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def _batches(n, seed=1):
    rng = np.random.default_rng(seed)
    return [(eager.tensor(rng.standard_normal((5, 4)).astype(np.float32)),
             eager.tensor(rng.integers(0, 3, 5))) for _ in range(n)]


def _train(opt_cls, kw, compiled, steps=5, set_to_none=True, zero="first", scheduler=False):
    model = _model()
    opt = opt_cls(model.parameters(), **kw)
    sched = optim.lr_scheduler.StepLR(opt, 2, 0.5) if scheduler else None

    def step(x, y):
        if zero == "first":
            opt.zero_grad(set_to_none)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if zero == "last":
            opt.zero_grad(set_to_none)
        return loss

    fn = compiler.compile(step) if compiled else step
    losses = []
    for x, y in _batches(steps):
        losses.append(float(fn(x, y)))
        if sched is not None:
            sched.step()
    return model, opt, losses, fn


def _same(a, b, what):
    """Equal to float32 rounding (the graph's fused update rounds as the eager loop may not),
    relative to the array's scale: centered RMSprop's sqrt(E[g^2] - E[g]^2) amplifies it."""
    scale = max(1.0, float(np.max(np.abs(b)))) if np.size(b) else 1.0
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6 * scale, err_msg=what)


def _assert_same_training(eager_run, compiled_run):
    (m1, o1, l1, _), (m2, o2, l2, _) = eager_run, compiled_run
    _same(l1, l2, "losses")
    for (name, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
        _same(p1.detach().numpy(), p2.detach().numpy(), name)
        assert (p1.grad is None) == (p2.grad is None), name
        if p1.grad is not None:
            _same(p1.grad.numpy(), p2.grad.numpy(), name + ".grad")
    s1, s2 = o1.state_dict(), o2.state_dict()
    assert s1["param_groups"] == s2["param_groups"]
    assert {k: sorted(v) for k, v in s1["state"].items()} == \
        {k: sorted(v) for k, v in s2["state"].items()}
    for k, st in s1["state"].items():
        for name, v in st.items():
            a, b = np.asarray(v.numpy()), np.asarray(s2["state"][k][name].numpy())
            assert a.dtype == b.dtype and a.shape == b.shape, name
            _same(a, b, f"state {k} {name}")


@pytest.mark.parametrize("opt_cls,kw", OPTIMIZERS,
                         ids=[f"{c.__name__}-{'-'.join(map(str, k))}" for c, k in OPTIMIZERS])
@pytest.mark.parametrize("variant", [dict(), dict(set_to_none=False), dict(scheduler=True),
                                     dict(zero="last"), dict(zero="never")],
                         ids=["zero_grad", "zero_fill", "scheduler", "zero_after", "accumulate"])
def test_a_compiled_training_step_trains_as_the_eager_one(opt_cls, kw, variant):
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # no graph break, no retrace warning
        compiled = _train(opt_cls, kw, True, **variant)
    _assert_same_training(_train(opt_cls, kw, False, **variant), compiled)
    # one trace, or two where the .grad is None at the first call only and read (zero_fill)
    assert compiled[3].traces == (2 if variant.get("set_to_none") is False or
                                  variant.get("zero") == "never" else 1)


def test_the_optimizer_options_are_read_at_every_call():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @compiler.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    ref_model = _model()
    ref = optim.SGD(ref_model.parameters(), lr=0.1, momentum=0.9)
    for i, (x, y) in enumerate(_batches(8)):
        if i == 3:      # the step is the optimizer's own, run at every call
            opt.param_groups[0]["lr"] = ref.param_groups[0]["lr"] = 0.01
        if i == 5:
            opt.param_groups[0]["momentum"] = ref.param_groups[0]["momentum"] = 0.0
        step(x, y)
        ref.zero_grad()
        F.cross_entropy(ref_model(x), y).backward()
        ref.step()
        assert step.traces == 1
    for p, q in zip(model.parameters(), ref_model.parameters()):
        _same(p.detach().numpy(), q.detach().numpy(), "parameter")


def test_compiling_only_the_optimizer_step_reads_each_new_grad():
    model, ref_model = _model(), _model()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    ref = optim.Adam(ref_model.parameters(), lr=1e-2)
    update = compiler.compile(opt.step)
    for i, (x, y) in enumerate(_batches(5)):
        for m, o, run in ((model, opt, update), (ref_model, ref, ref.step)):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()   # a new .grad tensor at every step
            run()
        if i == 2:   # a checkpoint round trip replaces the state's tensors
            opt.load_state_dict(opt.state_dict())
    for p, q in zip(model.parameters(), ref_model.parameters()):
        _same(p.detach().numpy(), q.detach().numpy(), "parameter")
    _same(opt.state_dict()["state"][0]["exp_avg"].numpy(),
          ref.state_dict()["state"][0]["exp_avg"].numpy(), "exp_avg")


def test_a_manual_update_under_no_grad_is_compiled():
    def train(compiled):
        model = _model()

        def step(x, y):
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            with eager.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
            return loss
        fn = compiler.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [float(fn(x, y)) for x, y in _batches(4)]
        return model, losses
    (m1, l1), (m2, l2) = train(False), train(True)
    _same(l1, l2, "losses")
    for p, q in zip(m1.parameters(), m2.parameters()):
        _same(p.detach().numpy(), q.detach().numpy(), "parameter")


def test_gradients_reach_an_argument_that_requires_grad():
    w = eager.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    w2 = eager.tensor(np.arange(3, dtype=np.float32), requires_grad=True)

    def f(w, x):
        loss = ((w * x) ** 2).sum()
        loss.backward()
        return loss
    x = eager.ones(3) * 2
    cf = compiler.compile(f)
    for _ in range(2):      # no zero_grad: the second call accumulates, as eager
        out = cf(w, x)
        f(w2, x)
    _same(w.grad.numpy(), w2.grad.numpy(), "w.grad")
    assert not out.requires_grad   # its graph was used by the backward inside


@pytest.mark.parametrize("body,line", [
    ("loss.backward(create_graph=True)", "create_graph"),
    ("sched.step()", "scheduler"),
    ("opt.step(lambda: loss)", "closure"),
])
def test_what_a_step_cannot_trace_is_a_graph_break_with_eager_results(body, line):
    model, ref_model = _model(), _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = optim.lr_scheduler.StepLR(opt, 1, 0.5)
    ref = optim.SGD(ref_model.parameters(), lr=0.1)
    ref_sched = optim.lr_scheduler.StepLR(ref, 1, 0.5)
    namespace = {"model": model, "opt": opt, "sched": sched, "F": F}
    src = ("def step(x, y):\n"
           "    opt.zero_grad()\n"
           "    loss = F.cross_entropy(model(x), y)\n"
           "    loss.backward()\n" if line != "create_graph" else
           "def step(x, y):\n"
           "    opt.zero_grad()\n"
           "    loss = F.cross_entropy(model(x), y)\n")
    src += f"    {body}\n" + ("" if line == "closure" else "    opt.step()\n") + \
        "    return loss\n"
    exec(compile(src, "user_step.py", "exec"), namespace)   # noqa: S102 - the test's own code
    cf = compiler.compile(namespace["step"])
    for i, (x, y) in enumerate(_batches(3)):
        if i == 0:
            with pytest.warns(UserWarning, match="user_step.py:[45]: .*cannot be traced"):
                cf(x, y)
        else:
            cf(x, y)
        ref.zero_grad()
        F.cross_entropy(ref_model(x), y).backward(create_graph=line == "create_graph")
        if line == "scheduler":
            ref_sched.step()
        ref.step()
    assert opt.param_groups[0]["lr"] == ref.param_groups[0]["lr"]
    for p, q in zip(model.parameters(), ref_model.parameters()):
        _same(p.detach().numpy(), q.detach().numpy(), "parameter")


def test_writing_a_tensor_that_aliases_one_read_as_a_constant_is_a_graph_break():
    w = eager.tensor(np.ones(3, np.float32))

    def f(x):
        out = x * w          # w is not a parameter: a constant of the trace
        with eager.no_grad():
            w.data.add_(1.0)  # ... and then written through a view of it
        return out
    cf = compiler.compile(f)
    with pytest.warns(UserWarning, match="shares its memory"):
        first = cf(eager.ones(3))
    np.testing.assert_array_equal(first.numpy(), np.ones(3))
    np.testing.assert_array_equal(cf(eager.ones(3)).numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(w.numpy(), np.full(3, 3.0))


def test_reading_a_parameter_after_the_step_is_a_graph_break_with_eager_results():
    model, ref_model = _model(), _model()
    opt, ref = optim.SGD(model.parameters(), lr=0.1), optim.SGD(ref_model.parameters(), lr=0.1)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss, model(x).sum()    # the updated parameters: eager's answer
    cf = compiler.compile(step)
    for i, (x, y) in enumerate(_batches(2)):
        if i == 0:
            with pytest.warns(UserWarning, match="read after the optimizer's step"):
                got = cf(model, opt, x, y)
        else:
            got = cf(model, opt, x, y)
        want = step(ref_model, ref, x, y)
        _same(got[1].detach().numpy(), want[1].detach().numpy(), "after the step")


@pytest.mark.parametrize("clip", ["norm2", "norm_inf", "value"])
def test_gradient_clipping_inside_a_compiled_step(clip):
    def clip_grads(params):
        if clip == "norm2":
            return nn.utils.clip_grad_norm_(params, max_norm=0.5)
        if clip == "norm_inf":
            return nn.utils.clip_grad_norm_(params, max_norm=0.05, norm_type="inf")
        nn.utils.clip_grad_value_(params, 0.02)
        return None

    def train(compiled, external):
        model = _model()
        opt = optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y):
            if not external:
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
            norm = clip_grads(list(model.parameters()))
            opt.step()
            return norm
        fn = compiler.compile(step) if compiled else step
        norms = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for x, y in _batches(4):
                if external:    # the gradients come from an eager backward outside fn
                    opt.zero_grad()
                    F.cross_entropy(model(x), y).backward()
                norms.append(fn(x, y))
        return model, norms
    for external in (False, True):
        (m1, n1), (m2, n2) = train(False, external), train(True, external)
        if clip != "value":
            _same([float(n) for n in n2], [float(n) for n in n1], "norms")
        for p, q in zip(m1.parameters(), m2.parameters()):
            _same(q.detach().numpy(), p.detach().numpy(), "parameter")
            _same(q.grad.numpy(), p.grad.numpy(), "clipped grad")


def test_what_a_step_does_is_done_in_program_order():
    # the gradients come from outside; the function steps, then zeroes them in place: the
    # step must see them before they are zeroed, as eager's does
    model, ref_model = _model(), _model()
    opt, ref = optim.SGD(model.parameters(), lr=0.1), optim.SGD(ref_model.parameters(), lr=0.1)

    def update(opt):
        opt.step()
        opt.zero_grad(set_to_none=False)
    cf = compiler.compile(update)
    for x, y in _batches(3):
        for m, o, run in ((model, opt, cf), (ref_model, ref, update)):
            F.cross_entropy(m(x), y).backward()
            run(o)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        _same(p.detach().numpy(), q.detach().numpy(), "parameter")
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, np.float32))
