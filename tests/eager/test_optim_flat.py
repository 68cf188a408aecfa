"""An elementwise optimizer updates a group's parameters as one flat array (multi-tensor):
the result must be, bit for bit, what updating them one by one gives, and the per-parameter
state must stay torch's (views a user can read, save and load)."""
import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import optim
from dualgrad.ops import native as _native

ADAM_MANY = _native.adam_many_

CASES = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
         ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01, maximize=True)),
         ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, weight_decay=0.1, maximize=True)),
         ("AdamW", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
         ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adadelta", dict(lr=1.0))]


def _params(seed=0, dtypes=("float32",) * 3):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 3)]
    return [eager.tensor(rng.standard_normal(s).astype(d), requires_grad=True)
            for s, d in zip(shapes, dtypes)]


def _grads(step, params, skip=()):
    rng = np.random.default_rng(100 + step)
    for i, p in enumerate(params):
        g = rng.standard_normal(p.shape).astype(p.data.dtype)
        p.grad = None if i in skip else eager.tensor(g)


def _run(name, kw, flat, steps=4, dtypes=("float32",) * 3, skip_at=None):
    params = _params(dtypes=dtypes)
    opt = getattr(optim, name)(params, **kw)
    opt._elementwise = flat
    for k in range(steps):
        _grads(k, params, skip=(1,) if k == skip_at else ())
        opt.step()
    return params, opt


@pytest.mark.parametrize("name,kw", CASES)
def test_flat_update_equals_per_parameter_update(name, kw):
    flat, opt = _run(name, kw, flat=True)
    one, ref = _run(name, kw, flat=False)
    assert opt._flat and not ref.__dict__.get("_flat")   # the flat path did run
    for k in opt.state[flat[0]]:
        if opt.state[flat[0]][k].ndim:   # ... on the last step too: views of one array
            base = opt.state[flat[0]][k].numpy().base
            assert base is not None and opt.state[flat[2]][k].numpy().base is base
    for a, b in zip(flat, one):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for a, b in zip(flat, one):
        sa, sb = opt.state[a], ref.state[b]
        assert sa.keys() == sb.keys()
        for k in sa:
            np.testing.assert_array_equal(np.asarray(sa[k].data), np.asarray(sb[k].data))
            assert np.shape(sa[k].data) == np.shape(sb[k].data)


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01)), ("SGD", dict(lr=0.1, momentum=0.9))])
def test_skipped_parameter_and_mixed_dtypes_fall_back(name, kw):
    # a parameter without a gradient at step 1 has a different step count afterwards
    flat, _ = _run(name, kw, flat=True, skip_at=1)
    one, _ = _run(name, kw, flat=False, skip_at=1)
    for a, b in zip(flat, one):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    mixed = ("float32", "float64", "float32")
    flat, _ = _run(name, kw, flat=True, dtypes=mixed)
    one, _ = _run(name, kw, flat=False, dtypes=mixed)
    for a, b in zip(flat, one):
        assert a.data.dtype == b.data.dtype
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_state_dict_round_trip_with_flat_state():
    params, opt = _run("Adam", dict(lr=0.01), flat=True, steps=2)
    saved = opt.state_dict()
    twin = [eager.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt2 = optim.Adam(twin, lr=0.01)
    opt2.load_state_dict(saved)
    for k in range(2, 4):
        _grads(k, params)
        _grads(k, twin)
        opt.step()
        opt2.step()
    for a, b in zip(params, twin):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # the state a user reads is the parameter's own shape, and changing it takes effect
    exp_avg = opt.state[params[0]]["exp_avg"]
    assert exp_avg.shape == params[0].shape
    opt.state[params[0]]["exp_avg"] = eager.zeros(params[0].shape)
    opt.state[params[0]]["exp_avg_sq"] = eager.zeros(params[0].shape)
    _grads(9, params)
    before = params[0].detach().numpy().copy()
    opt.step()
    # zeroed moments: the first parameter moves by lr * (1-b1) g / (sqrt((1-b2) g^2) + eps)
    # scaled by bias correction, i.e. by about lr in each entry
    np.testing.assert_allclose(np.abs(params[0].detach().numpy() - before), 0.01 * (1 - 0.9) /
                               np.sqrt(1 - 0.999) * np.sqrt(1 - 0.999 ** 5) / (1 - 0.9 ** 5),
                               rtol=1e-3)


def _twins(name, kw):
    """The same optimizer over two copies of the parameters: flat, and one by one."""
    a, b = _params(), _params()
    fa, fb = getattr(optim, name)(a, **kw), getattr(optim, name)(b, **kw)
    fb._elementwise = False
    return (a, fa), (b, fb)


def _step_both(pairs, k):
    for params, opt in pairs:
        _grads(k, params)
        opt.step()


def _assert_same(pairs):
    (a, fa), (b, fb) = pairs
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
        for key in fa.state[x]:
            np.testing.assert_array_equal(fa.state[x][key].numpy(), fb.state[y][key].numpy())


def test_flat_state_persists_and_user_changes_to_it_take_effect():
    pairs = _twins("Adam", dict(lr=0.01))
    _step_both(pairs, 0)
    (a, fa), (b, fb) = pairs
    held = fa.state[a[0]]["exp_avg"]
    _step_both(pairs, 1)
    assert fa.state[a[0]]["exp_avg"] is held          # the same tensor, updated in place
    assert [float(fa.state[p]["step"]) for p in a] == [2.0, 2.0, 2.0]
    _assert_same(pairs)
    # written in place through the tensor a user reads: the next step sees it
    for opt, params in ((fa, a), (fb, b)):
        opt.state[params[1]]["exp_avg_sq"].numpy()[...] = 0.5
    _step_both(pairs, 2)
    _assert_same(pairs)
    # one parameter's step count changed in place: the flat update no longer applies to it
    for opt, params in ((fa, a), (fb, b)):
        opt.state[params[2]]["step"].numpy()[...] = 10.0
    _step_both(pairs, 3)
    _step_both(pairs, 4)
    _assert_same(pairs)
    assert float(fa.state[a[2]]["step"]) == 12.0 and float(fa.state[a[0]]["step"]) == 5.0


def test_flat_update_follows_a_parameter_given_new_values_of_another_shape():
    pairs = _twins("Adam", dict(lr=0.01))
    _step_both(pairs, 0)
    _step_both(pairs, 1)
    for params, opt in pairs:
        params[0].data = np.ones((3, 4), np.float32) * 2   # same shape: new array
    _step_both(pairs, 2)
    _assert_same(pairs)
    for params, opt in pairs:   # another shape: its state no longer fits, as in torch
        params[1].data = np.ones((5,), np.float32)
        opt.state[params[1]] = {}
    _step_both(pairs, 3)
    _assert_same(pairs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01)),
                                     ("Adam", dict(lr=0.02, weight_decay=0.1, maximize=True)),
                                     ("AdamW", dict(lr=0.01, weight_decay=0.05, eps=1e-6))])
def test_adam_in_place_loop_equals_the_numpy_rule_bit_for_bit(name, kw, dtype, monkeypatch):
    """After the first step Adam and AdamW run one in-place numba loop over the group
    (ops/native.adam_many_), 8 parameters per call: 11 parameters take calls of 8, 2 and 1.
    Parameters, moments and step counts must equal the per-parameter NumPy rule's, bit for
    bit, and the parameters' arrays stay the same objects (torch updates in place)."""
    from dualgrad.ops import native
    calls = []
    monkeypatch.setattr(native, "adam_many_", lambda *a, **k: (calls.append(len(a[0])),
                                                                ADAM_MANY(*a, **k))[1])
    rng = np.random.default_rng(3)
    shapes = [(3, 4), (4,), (2, 2, 3), (1,), (5, 1), (7,), (2, 3), (3,), (4, 4), (2,), (6,)]
    start = [rng.standard_normal(s).astype(dtype) for s in shapes]
    runs = []
    for flat in (True, False):
        params = [eager.tensor(a.copy(), requires_grad=True) for a in start]
        arrays = [p.detach().numpy() for p in params]
        opt = getattr(optim, name)(params, **kw)
        opt._elementwise = flat
        for k in range(4):
            g = np.random.default_rng(50 + k)
            for p in params:
                p.grad = eager.tensor(g.standard_normal(p.shape).astype(dtype))
            opt.step()
        assert all(p.detach().numpy() is a for p, a in zip(params, arrays))
        runs.append((params, opt))
    assert calls == [3, 3, 3]                 # steps 2-4, chunks of 8, 2 and 1 parameters
    (a, fa), (b, fb) = runs
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
        for key in ("exp_avg", "exp_avg_sq", "step"):
            np.testing.assert_array_equal(fa.state[x][key].numpy(), fb.state[y][key].numpy())


def test_adam_in_place_loop_leaves_a_strided_parameter_to_the_numpy_rule():
    base = np.arange(24, dtype=np.float32).reshape(4, 6) / 10
    runs = []
    for flat in (True, False):
        params = [eager.tensor(base.copy(), requires_grad=True),
                  eager.tensor(np.ones(3, np.float32), requires_grad=True)]
        opt = optim.Adam(params, lr=0.1)
        opt._elementwise = flat
        for k in range(3):
            if k == 1:
                params[0].data = eager.from_numpy(base.copy()[:, ::2])   # strided from now on
                opt.state[params[0]] = {}
            for p in params:
                p.grad = eager.ones(*p.shape) * (k + 1)
            opt.step()
        runs.append(params)
    for x, y in zip(*runs):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.1)), ("AdamW", dict(lr=0.1)),
                                     ("SGD", dict(lr=0.1, momentum=0.9))])
def test_float16_parameters_take_the_numpy_rule(name, kw):
    """numba has no float16 arithmetic: the in-place loops leave such parameters to the NumPy
    rule (they raised on the second step before), which keeps them float16, as torch's."""
    runs = []
    for flat in (True, False):
        params = [eager.tensor(np.ones((3, 4), np.float16), requires_grad=True),
                  eager.tensor(np.ones(4, np.float16), requires_grad=True)]
        opt = getattr(optim, name)(params, **kw)
        opt._elementwise = flat and opt._elementwise
        for k in range(3):
            for p in params:
                p.grad = eager.tensor(np.full(p.shape, 0.5 + k, np.float16))
            opt.step()
        assert all(p.dtype == np.float16 and np.all(p.detach().numpy() < 1) for p in params)
        runs.append(params)
    for x, y in zip(*runs):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
