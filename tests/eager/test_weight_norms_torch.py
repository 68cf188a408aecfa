"""nn.utils.weight_norm / spectral_norm (and their remove_ forms) against torch's: the same
layer (Linear, Conv1d, Conv2d, ConvTranspose2d) with torch's state loaded, wrapped in each
library, then in train, eval and train again: outputs, gradients of every parameter, and the
state (weight_g / weight_v, or weight_orig and the power iteration's u / v buffers, which
advance in training only); after remove_*, the state dict and the weight Parameter; the errors
and the deprecation warning. 4 layers x 6 configurations.
"""
import warnings

import numpy as np
import pytest
import torch

from dualgrad import eager

LAYERS = {"Linear": (lambda nn: nn.Linear(5, 3), (4, 5)),
          "Conv1d": (lambda nn: nn.Conv1d(3, 2, 2), (2, 3, 7)),
          "Conv2d": (lambda nn: nn.Conv2d(2, 4, 3), (2, 2, 6, 6)),
          "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(2, 4, 3), (2, 2, 5, 5))}
CONFIGS = [("weight_norm", {}), ("weight_norm", {"dim": None}), ("weight_norm", {"dim": 1}),
           ("spectral_norm", {}), ("spectral_norm", {"n_power_iterations": 3}),
           ("spectral_norm", {"dim": 1, "eps": 1e-6})]


def _load(ours, theirs):
    ours.load_state_dict({k: eager.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})


def _close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=rtol,
                               atol=atol)


def _train_eval_train(theirs, ours, shape):
    """Forward and backward in train, eval and train mode: outputs, the input's and every
    parameter's gradient, and the state (the power iteration advances in training only)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for mode in ("train", "eval", "train"):
        getattr(theirs, mode)()
        getattr(ours, mode)()
        tx, ox = torch.tensor(x, requires_grad=True), eager.tensor(x, requires_grad=True)
        ty, oy = theirs(tx), ours(ox)
        ty.square().sum().backward()
        oy.square().sum().backward()
        _close(oy, ty)
        _close(ox.grad, tx.grad, 1e-3)
        mine = dict(ours.named_parameters())
        for n, p in theirs.named_parameters():
            _close(mine[n].grad, p.grad, 1e-3)
            p.grad, mine[n].grad = None, None
        state = ours.state_dict()
        for k, v in theirs.state_dict().items():
            _close(state[k], v)


@pytest.mark.parametrize("kind,kw", CONFIGS, ids=lambda v: str(v))
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_norm_wrapped_layer_as_torch(layer, kind, kw):
    build, shape = LAYERS[layer]
    theirs, ours = build(torch.nn), build(eager.nn)
    _load(ours, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        theirs = getattr(torch.nn.utils, kind)(theirs, **kw)
        ours = getattr(eager.nn.utils, kind)(ours, **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _load(ours, theirs)     # NOTE: spectral_norm's u and v start from each library's RNG
    _train_eval_train(theirs, ours, shape)
    getattr(torch.nn.utils, "remove_" + kind)(theirs)
    getattr(eager.nn.utils, "remove_" + kind)(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.weight, eager.nn.Parameter)
    _close(ours.weight, theirs.weight)


@pytest.mark.parametrize("call", [
    "weight_norm(weight_norm(nn.Linear(3, 2)))",
    "spectral_norm(spectral_norm(nn.Linear(3, 2)))",
    "remove_weight_norm(nn.Linear(3, 2))",
    "remove_spectral_norm(weight_norm(nn.Linear(3, 2)))",
    "spectral_norm(nn.Linear(3, 2), n_power_iterations=0)",
    "weight_norm(nn.Linear(3, 2), name='nope')",
])
def test_errors_as_torch(call):
    got = []
    for lib in (torch, eager):
        scope = {**{n: getattr(lib.nn.utils, n) for n in (
            "weight_norm", "spectral_norm", "remove_weight_norm", "remove_spectral_norm")},
            "nn": lib.nn}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            try:
                eval(call, scope)     # noqa: S307 - the calls above, in each library
                got.append(None)
            except Exception as e:    # noqa: BLE001 - compared below
                got.append(type(e))
    assert got[0] is not None and got[1] is not None and issubclass(got[1], got[0]), got


def test_weight_norm_warns_as_torch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        eager.nn.utils.weight_norm(eager.nn.Linear(3, 2))


# -- the parametrization forms (nn.utils.parametrizations, nn.utils.parametrize) -------------
@pytest.mark.parametrize("kind,kw", CONFIGS, ids=lambda v: str(v))
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_parametrized_layer_as_torch(layer, kind, kw):
    build, shape = LAYERS[layer]
    theirs, ours = build(torch.nn), build(eager.nn)
    _load(ours, theirs)
    theirs = getattr(torch.nn.utils.parametrizations, kind)(theirs, **kw)
    ours = getattr(eager.nn.utils.parametrizations, kind)(ours, **kw)
    assert type(ours).__name__ == type(theirs).__name__
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _load(ours, theirs)
    _train_eval_train(theirs, ours, shape)
    for leave in (True,):
        torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight", leave)
        eager.nn.utils.parametrize.remove_parametrizations(ours, "weight", leave)
    assert type(ours).__name__ == type(theirs).__name__
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.weight, theirs.weight)


def _symmetric(nn):
    class Symmetric(nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()
    return Symmetric


def _split(nn):
    class Split(nn.Module):     # two originals: a scale and a direction
        def forward(self, s, d):
            return s * d

        def right_inverse(self, w):
            s = w.abs().max()
            return s, w / s
    return Split


def _scaled(nn):
    class Double(nn.Module):    # no right_inverse
        def forward(self, x):
            return 2 * x
    return Double


@pytest.mark.parametrize("chain", [["symmetric"], ["split"], ["symmetric", "double"],
                                   ["split", "double"]])
def test_register_parametrization_as_torch(chain):
    makers = {"symmetric": _symmetric, "split": _split, "double": _scaled}
    got = []
    for lib in (torch, eager):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 3)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(np.arange(9.0, dtype=np.float32).reshape(3, 3) / 7))
        for name in chain:
            lib.nn.utils.parametrize.register_parametrization(layer, "weight",
                                                              makers[name](lib.nn)())
        P = lib.nn.utils.parametrize
        w1 = layer.weight.detach().numpy().copy()
        out = layer(lib.ones(2, 3)).sum()
        out.backward()
        grads = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
        try:
            layer.weight = lib.tensor(np.eye(3, dtype=np.float32))
            assigned = layer.weight.detach().numpy().copy()
        except Exception as e:    # noqa: BLE001 - compared below
            assigned = type(e).__name__
        calls = []
        with P.cached():
            a, b = layer.weight, layer.weight
            calls.append(a is b)
        state = list(layer.state_dict())
        info = (P.is_parametrized(layer), P.is_parametrized(layer, "weight"),
                P.is_parametrized(layer, "bias"), P.type_before_parametrizations(layer).__name__)
        P.remove_parametrizations(layer, "weight")
        got.append((w1.round(5).tolist(), {k: v.round(5).tolist() for k, v in grads.items()},
                    assigned if isinstance(assigned, str) else assigned.round(5).tolist(), calls,
                    state, info, type(layer).__name__, list(layer.state_dict()),
                    layer.weight.detach().numpy().round(5).tolist()))
    assert got[1] == got[0]


@pytest.mark.parametrize("call", [
    "P.register_parametrization(nn.Linear(2, 2), 'nope', nn.Identity())",
    "P.remove_parametrizations(nn.Linear(2, 2), 'weight')",
    "nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)",
    "nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), dim=3)",
])
def test_parametrize_errors_as_torch(call):
    got = []
    for lib in (torch, eager):
        try:
            eval(call, {"P": lib.nn.utils.parametrize, "nn": lib.nn})     # noqa: S307
            got.append(None)
        except Exception as e:    # noqa: BLE001 - compared below
            got.append(type(e))
    assert got[0] is not None and got[1] is not None and issubclass(got[1], got[0]), got
