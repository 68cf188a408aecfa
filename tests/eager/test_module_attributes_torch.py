"""Modules have torch's attributes, with torch's values, and walk their children as torch's.

For every configuration of tests/eager/test_module_matrix.py (every module class the two
libraries share, each constructor keyword varied), the module built in torch and in dualgrad:
- every public attribute torch's has (`conv.transposed`, `lstm.all_weights`,
  `norm.elementwise_affine`, `mha.kdim`, `reset_parameters`, ...) dualgrad's has too, except
  the names in NOT_PROVIDED, each with its reason (the list must stay exact: a name that
  becomes provided fails here until it is taken off);
- every attribute holding a plain value (number, string, bool, tuple, None) is equal and of
  the same type.
Then nn.Module's own surface, the traversal of shared (reused) modules and tensors, the
dotted-path accessors, dir(), and get_extra_state / set_extra_state, each against torch.
"""
import collections
import warnings

import pytest
import torch

from dualgrad import eager
from tests.eager.test_module_matrix import CASES, IDS, _build

_INTERNAL_RNN = {"check_forward_args", "check_hidden_size", "check_input",
                 "get_expected_hidden_size", "permute_hidden"}
NOT_PROVIDED = {
    # torch's scatter / gather over GPUs: dualgrad's DataParallel runs the module as it is
    "DataParallel": {"gather", "parallel_apply", "replicate", "scatter"},
    # torch's internal argument checks of its recurrent layers (dualgrad checks in forward)
    "RNNBase": _INTERNAL_RNN, "RNN": _INTERNAL_RNN, "GRU": _INTERNAL_RNN,
    "LSTM": _INTERNAL_RNN | {"get_expected_cell_size"},
    # torch's internal mask merging for its fused attention kernel
    "MultiheadAttention": {"merge_masks"},
    # torch's fast-path flag (1 relu, 2 gelu) for its fused encoder kernel
    "TransformerEncoderLayer": {"activation_relu_or_gelu"},
}
NOT_PROVIDED_MODULE = {
    # compiles forward in place with torch.compile; dualgrad's is dualgrad.compile(module)
    "compile",
    # other accelerators than the CPU
    "ipu", "xpu", "mtia",
    # state-dict and backward-pre hooks: not provided (register_forward_*_hook and
    # register_full_backward_hook are)
    "register_full_backward_pre_hook", "register_load_state_dict_post_hook",
    "register_load_state_dict_pre_hook", "register_state_dict_post_hook",
    "register_state_dict_pre_hook",
    # shared memory across processes and uninitialised storage on another device
    "share_memory", "to_empty",
}
_PLAIN = (int, float, str, bool, tuple, type(None))
_BASE = set(dir(torch.nn.Module))


def _both(name, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = _build(torch, name, kw)
        except Exception:     # noqa: BLE001 - the configuration torch refuses: not ours here
            return None, None
        try:
            return theirs, _build(eager, name, kw)
        except NotImplementedError:   # NOTE: refused deliberately (test_module_matrix's REFUSED)
            return None, None


def _public(module):
    return {a for a in dir(module) if not a.startswith("_") and a not in _BASE}


def test_attributes_as_torch():
    """Over all of the module matrix's configurations (about a thousand: one test, so the
    report lists every difference at once)."""
    missing, values = collections.defaultdict(set), []
    for (name, kw), case in zip(CASES, IDS):
        theirs, ours = _both(name, kw)
        if theirs is None:
            continue
        for a in sorted(_public(theirs)):
            if not hasattr(ours, a):
                missing[name].add(a)
                continue
            tv, dv = getattr(theirs, a), getattr(ours, a)
            if isinstance(tv, _PLAIN) and (type(tv) is not type(dv) or tv != dv):
                values.append(f"{case}.{a}: torch {tv!r}, dualgrad {dv!r}")
    assert dict(missing) == {k: v for k, v in NOT_PROVIDED.items() if k in missing or v}, \
        {k: sorted(v ^ NOT_PROVIDED.get(k, set())) for k, v in missing.items()
         if v != NOT_PROVIDED.get(k)}
    assert not values, "\n".join(values)


def test_module_surface_as_torch():
    absent = {a for a in dir(torch.nn.Module)
              if not a.startswith("_") and not hasattr(eager.nn.Module, a)}
    assert absent == NOT_PROVIDED_MODULE, sorted(absent ^ NOT_PROVIDED_MODULE)


def _model(nn):
    shared, norm = nn.Linear(2, 2), nn.BatchNorm1d(2)
    model = nn.Sequential(shared, nn.ReLU(), shared, norm, nn.Sequential(norm, nn.Tanh()))
    model.add_module("again", shared)
    return model


@pytest.mark.parametrize("remove_duplicate", [True, False])
def test_shared_modules_are_walked_as_torch(remove_duplicate):
    """A layer used twice is yielded once by modules(), children(), parameters() and
    buffers() (where first reached), and every time with remove_duplicate=False."""
    ours, theirs = _model(eager.nn), _model(torch.nn)
    for walk in ("named_modules", "named_parameters", "named_buffers"):
        got = [n for n, _ in getattr(ours, walk)(remove_duplicate=remove_duplicate)]
        want = [n for n, _ in getattr(theirs, walk)(remove_duplicate=remove_duplicate)]
        assert got == want, walk
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert len(list(ours.children())) == len(list(theirs.children()))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    calls = {lib: [] for lib in ("ours", "theirs")}
    ours.apply(lambda m: calls["ours"].append(type(m).__name__))
    theirs.apply(lambda m: calls["theirs"].append(type(m).__name__))
    assert calls["ours"] == calls["theirs"]


@pytest.mark.parametrize("path", ["", "0", "4.0", "4.1", "9", "0.weight", "0.foo", "4.9"])
@pytest.mark.parametrize("accessor", ["get_submodule", "get_parameter", "get_buffer"])
def test_dotted_accessors_as_torch(accessor, path):
    if accessor != "get_submodule":
        path = {"": "0.weight", "0": "0.bias", "4.0": "4.0.running_mean",
                "4.1": "3.num_batches_tracked"}.get(path, path)
    results = []
    for nn in (eager.nn, torch.nn):
        try:
            got = getattr(_model(nn), accessor)(path)
            results.append((type(got).__name__, tuple(getattr(got, "shape", ()))))
        except Exception as e:    # noqa: BLE001 - compared below
            results.append(type(e))
    assert results[0] == results[1] or (
        results[0][0] in ("Parameter", "Tensor") and results[1][0] in ("Parameter", "Tensor")
        and results[0][1] == results[1][1] and accessor != "get_parameter")


def test_dir_lists_parameters_buffers_and_children():
    ours, theirs = _model(eager.nn), _model(torch.nn)
    for o, t in ((ours, theirs), (ours[0], theirs[0]), (ours[3], theirs[3])):
        want = {a for a in dir(t) if a in t._parameters or a in t._buffers or a in t._modules}
        assert want <= set(dir(o)), want - set(dir(o))
        assert not any(a[0].isdigit() for a in dir(o))


class _Counted:
    def __init__(self):
        super().__init__()
        self.lin = self._nn.Linear(2, 2)
        self.count = 0

    def get_extra_state(self):
        return {"count": self.count}

    def set_extra_state(self, state):
        self.count = state["count"]


def _counted(nn):
    cls = type("Counted", (_Counted, nn.Module), {"_nn": nn})
    return nn.Sequential(cls(), nn.ReLU())


@pytest.mark.parametrize("drop_extra", [False, True])
@pytest.mark.parametrize("strict", [True, False])
def test_extra_state_as_torch(strict, drop_extra):
    """A module defining get_extra_state adds "<prefix>_extra_state" to its state_dict (in
    torch's place) and set_extra_state takes it back; a missing one is a missing key."""
    out = []
    for nn in (eager.nn, torch.nn):
        src = _counted(nn)
        src[0].count = 7
        sd = src.state_dict()
        keys, extra = list(sd), sd["0._extra_state"]
        if drop_extra:
            del sd["0._extra_state"]
        dst = _counted(nn)
        try:
            res = dst.load_state_dict(sd, strict=strict)
            out.append((keys, extra, dst[0].count, list(res.missing_keys), repr(res)))
        except RuntimeError:
            out.append((keys, extra, "raised"))
    assert out[0] == out[1]
    with pytest.raises(RuntimeError):
        eager.nn.Linear(2, 2).get_extra_state()
