"""Tensors print as torch's and shapes are torch.Size: `str(t)` and `repr(t)` of the same
data in both libraries must be the same text.

The matrix: (SMALL + BIG shapes) x VALUES x dtypes, built from the same NumPy data in both
libraries (1,395 tensors). Its size is capped so the file runs in well under 30 s (8-14 s on
a shared two-core machine): the four BIG shapes past the 1000-element threshold (which print
summarised, and cost the most) take three value kinds (magnitudes, specials, normals) for
the floating and complex dtypes and one (normals) for the integer ones, instead of all; the
integer and bool dtypes take only the five value kinds they can hold (no nan / inf, nothing
that only tests a float notation).
"""
import math
import pickle

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402

SMALL = [(), (0,), (0, 3), (2, 0, 4), (1,), (6,), (25,), (3, 4), (2, 3, 5), (2, 2, 2, 3),
         (1, 90)]
BIG = [(1001,), (35, 30), (11, 10, 10), (3, 4, 5, 20)]   # > threshold: summarised
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


def _values(kind, n, rng):
    if kind == "small_ints":
        return rng.integers(-5, 10, n).astype(np.float64)
    if kind == "magnitudes":   # 1e-6 .. 1e9, both signs: scientific notation
        return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-6, 9, n)
    if kind == "negative":
        return -rng.uniform(0.01, 300.0, n)
    if kind == "specials":     # nan, inf, -0. among ordinary numbers
        return np.resize([np.nan, 1.5, np.inf, -0.0, -2.25, -np.inf, 0.0, 7.0], n)
    if kind == "nonfinite":    # no finite non-zero value at all
        return np.resize([np.nan, -0.0, np.inf, 0.0], n)
    if kind == "all_equal":
        return np.full(n, 3.25)
    if kind == "tiny":         # all under 1e-4, ratio small: scientific
        return rng.uniform(1.5e-5, 9e-5, n)
    if kind == "huge":         # all over 1e8, ratio small: scientific
        return -rng.uniform(2e8, 9e8, n)
    if kind == "ratio_999":    # largest / smallest just under 1000: fixed
        return np.resize([1.0, 999.0, 12.5, -3.75], n)
    if kind == "ratio_1001":   # and just over: scientific
        return np.resize([1.0, 1001.0, 12.5, -3.75], n)
    if kind == "wide_ints":
        return rng.integers(-10 ** 6, 10 ** 6, n).astype(np.float64)
    return rng.standard_normal(n)   # "normals"


VALUES = ["small_ints", "magnitudes", "negative", "specials", "nonfinite", "all_equal",
          "wide_ints", "normals", "tiny", "huge", "ratio_999", "ratio_1001"]
INT_VALUES = ["small_ints", "negative", "all_equal", "wide_ints", "normals"]


def _numpy_data(shape, kind, dtype, seed):
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    x = _values(kind, n, rng)
    if dtype in COMPLEX:   # NOTE: nan * 1j warns
        with np.errstate(invalid="ignore"):
                return (x + 1j * _values(kind, n, rng)[::-1]).reshape(shape).astype(dtype)
    if dtype == "bool":
        return (x > 0).reshape(shape)
    if dtype in INTS:
        info = np.iinfo(dtype)
        x = np.round(x * (10 if kind == "normals" else 1))
        return np.clip(x, max(info.min, -2 ** 53), min(info.max, 2 ** 53)).reshape(shape).astype(dtype)
    return x.reshape(shape)


def pair(data, dtype):
    """The same tensor in both libraries (bfloat16: float32 data rounded by each)."""
    if dtype == "bfloat16":
        return (eager.tensor(data.astype(np.float32)).to(eager.bfloat16),
                torch.tensor(data.astype(np.float32)).to(torch.bfloat16))
    with np.errstate(over="ignore"):   # NOTE: 1e9 is inf in float16, in both libraries
        data = np.asarray(data, dtype=dtype)
    return eager.tensor(data), torch.tensor(data)


def _cases():
    for shape in SMALL + BIG:
        big = shape in BIG
        for kind in VALUES:
            if big and kind not in ("magnitudes", "specials", "normals"):
                continue
            for dtype in FLOATS + COMPLEX + INTS:
                if dtype in INTS and kind not in INT_VALUES:
                    continue
                if big and dtype in INTS and kind != "normals":
                    continue
                yield shape, kind, dtype


CASES = list(_cases())   # every one prints as torch's (known differences: GRAD_FN_DIFFERS)


@pytest.fixture(autouse=True)
def default_options():
    yield
    for lib in (eager, torch):
        lib.set_printoptions(profile="default", sci_mode=None)
        lib.set_default_dtype(lib.float32)


def test_matrix_size():
    assert len(CASES) >= 500, len(CASES)


@pytest.mark.parametrize("shape,kind,dtype", CASES, ids=[f"{s}-{k}-{d}" for s, k, d in CASES])
def test_prints_as_torch(shape, kind, dtype):
    ours, theirs = pair(_numpy_data(shape, kind, dtype, seed=len(CASES)), dtype)
    assert str(ours) == str(theirs)
    assert repr(ours) == repr(theirs)


def _both(build):
    return build(eager), build(torch)


def _same(build):
    ours, theirs = _both(build)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


AUTOGRAD = {
    "leaf": lambda t: t.tensor([1.5, -2.0, 3.25], requires_grad=True),
    "leaf_float64": lambda t: t.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True),
    "mul": lambda t: t.tensor([1.5, -2.0], requires_grad=True) * 2,
    "add": lambda t: t.tensor([1.5, -2.0], requires_grad=True) + 1,
    "sum": lambda t: t.tensor([[1.5, -2.0]], requires_grad=True).sum(),
    "exp": lambda t: t.tensor([0.5, 1e-5], requires_grad=True).exp(),
    "wrapped": lambda t: t.linspace(0, 1, 60, requires_grad=True) * 3,
    "long_last_line": lambda t: (t.arange(12.0, requires_grad=True) * 1e-3).reshape(3, 4) * 7,
    "float64_grad_fn": lambda t: t.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True) * 2,
    "detached": lambda t: (t.tensor([1.0], requires_grad=True) * 2).detach(),
    "empty_grad": lambda t: t.zeros(0, 2, requires_grad=True),
}


@pytest.mark.parametrize("name", AUTOGRAD)
def test_autograd_suffixes(name):
    _same(AUTOGRAD[name])


PARAMETERS = {
    "plain": lambda t: t.nn.Parameter(t.tensor([0.5, -1.0])),
    "no_grad": lambda t: t.nn.Parameter(t.tensor([0.5, -1.0]), requires_grad=False),
    "float64": lambda t: t.nn.Parameter(t.ones(2, 3, dtype=t.float64)),
    "linear_weight": lambda t: t.nn.init.constant_(t.nn.Linear(3, 2).weight, 0.25),
    "scalar": lambda t: t.nn.Parameter(t.tensor(2.0)),
    "uninitialized": lambda t: t.nn.UninitializedParameter(),
}


@pytest.mark.parametrize("name", PARAMETERS)
def test_parameters(name):
    _same(PARAMETERS[name])


OPTIONS = [
    dict(precision=2), dict(precision=8), dict(precision=0), dict(threshold=5),
    dict(threshold=5, edgeitems=1), dict(threshold=5, edgeitems=0), dict(edgeitems=5),
    dict(linewidth=40), dict(linewidth=120), dict(linewidth=10), dict(profile="short"),
    dict(profile="full"), dict(sci_mode=True), dict(sci_mode=False),
    dict(profile="short", precision=6), dict(profile="nonsense"),
]
OPTION_TENSORS = {
    "range": lambda t: t.arange(30.0) / 7,
    "ints": lambda t: t.arange(1200).reshape(40, 30),
    "magnitudes": lambda t: t.tensor([[1e-6, 2.5], [3e9, -4.0]]),
    "cube": lambda t: t.arange(2000.0).reshape(10, 10, 20) - 7.5,
    "complex": lambda t: t.tensor([1 + 2j, -0.5j, 3e5 + 1j]),
    "scalar": lambda t: t.tensor(3.14159),
    "whole": lambda t: t.tensor([1.0, -2.0, 3.0]),
}


@pytest.mark.parametrize("name", OPTION_TENSORS)
@pytest.mark.parametrize("options", OPTIONS, ids=[repr(o) for o in OPTIONS])
def test_set_printoptions(options, name):
    for lib in (eager, torch):
        lib.set_printoptions(**options)
    _same(OPTION_TENSORS[name])


def test_printoptions_stay_dualgrads():
    before = np.get_printoptions()
    eager.set_printoptions(precision=1, threshold=3, linewidth=20, edgeitems=1)
    torch.set_printoptions(precision=1, threshold=3, linewidth=20, edgeitems=1)
    assert np.get_printoptions() == before
    assert str(eager.tensor([1.25, 2.5, 3.75, 5.0])) == str(torch.tensor([1.25, 2.5, 3.75, 5.0]))
    assert str(np.arange(5.0)) == "[0. 1. 2. 3. 4.]"   # NumPy prints as before


def test_set_printoptions_sticky_as_torch():
    # precision stays when later calls leave it out; sci_mode always resets
    for lib in (eager, torch):
        lib.set_printoptions(precision=2, sci_mode=True)
        lib.set_printoptions(linewidth=60)
    _same(lambda t: t.tensor([1.23456, 20.5]))


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_default_dtype_suffix(dtype):
    for lib in (eager, torch):
        lib.set_default_dtype(getattr(lib, dtype) if dtype == "float64" else lib.float32)
    for build in (lambda t: t.tensor([1.5, 2.0]),
                  lambda t: t.tensor([1.5, 2.0], dtype=t.float32),
                  lambda t: t.tensor([1.5, 2.0], dtype=t.float64),
                  lambda t: t.tensor([1 + 1j]), lambda t: t.tensor([1 + 1j], dtype=t.complex64),
                  lambda t: t.zeros(0, dtype=t.int64), lambda t: t.zeros(0, dtype=t.float64),
                  lambda t: t.zeros(0, dtype=t.bool), lambda t: t.tensor([True])):
        _same(build)


def test_format_of_tensors_as_torch():
    for spec in ("", ".2f", ".3e", ">12"):
        assert f"{eager.tensor(3.14159):{spec}}" == f"{torch.tensor(3.14159):{spec}}"
    assert f"{eager.tensor([1.0, 2.0])}" == f"{torch.tensor([1.0, 2.0])}"
    for lib in (eager, torch):
        with pytest.raises(TypeError):
            f"{lib.tensor([1.0, 2.0]):.2f}"


def test_print_of_containers():
    def build(t):
        x = t.tensor([[1.0, 2.5], [3.0, 4.0]])
        return str([x, x.shape, {"w": x[0]}, (x.sum(), x.size())])
    ours, theirs = _both(build)
    assert ours == theirs


SIZES = {
    "shape": lambda t: t.zeros(2, 3, 4).shape,
    "size": lambda t: t.zeros(2, 3, 4).size(),
    "scalar": lambda t: t.tensor(1.0).shape,
    "empty": lambda t: t.zeros(0, 5).shape,
    "slice": lambda t: t.zeros(2, 3, 4).shape[1:],
    "step": lambda t: t.zeros(2, 3, 4).shape[::-1],
    "add": lambda t: t.zeros(2, 3).shape + (5,),
    "radd": lambda t: (5,) + t.zeros(2, 3).shape,
    "mul": lambda t: t.zeros(2, 3).shape * 2,
    "rmul": lambda t: 2 * t.zeros(2, 3).shape,
    "numel": lambda t: t.zeros(2, 3, 4).shape.numel(),
    "numel_scalar": lambda t: t.tensor(1.0).shape.numel(),
    "index": lambda t: t.zeros(2, 3, 4).shape[-1],
    "size_dim": lambda t: t.zeros(2, 3, 4).size(1),
    "size_neg_dim": lambda t: t.zeros(2, 3, 4).size(-1),
    "constructed": lambda t: t.Size([2, 3]),
    "from_range": lambda t: t.Size(range(3)),
    "from_tensor": lambda t: t.Size(t.tensor([2, 3])),
    "constructed_empty": lambda t: t.Size(),
    "pickled": lambda t: pickle.loads(pickle.dumps(t.zeros(2, 3).shape)),
    "eq_tuple": lambda t: t.zeros(2, 3).shape == (2, 3),
    "eq_list": lambda t: t.zeros(2, 3).shape == [2, 3],
    "eq_empty": lambda t: t.tensor(1.0).shape == (),
    "hash": lambda t: hash(t.zeros(2, 3).shape) == hash((2, 3)),
    "dict_key": lambda t: {(2, 3): "a"}[t.zeros(2, 3).shape],
    "unpack": lambda t: [d * 2 for d in t.zeros(2, 3).shape],
    "is_tuple": lambda t: isinstance(t.zeros(2).shape, tuple),
    "type_name": lambda t: type(t.zeros(2).shape).__name__,
    "count": lambda t: t.zeros(2, 2, 3).shape.count(2),
    "str": lambda t: str(t.zeros(2, 3).shape),
    "fstring": lambda t: f"{t.zeros(2, 3).shape}",
    "list": lambda t: list(t.zeros(2, 3).shape),
    "tuple": lambda t: tuple(t.zeros(2, 3).shape),
    "param_size": lambda t: t.nn.Linear(3, 2).weight.size(),
    "factory": lambda t: t.zeros(t.ones(2, 3).shape).shape,
    "factory_star": lambda t: t.ones(*t.ones(2, 3).shape).shape,
    "full": lambda t: t.full(t.Size([2, 2]), 1.5),
    "view": lambda t: t.arange(6.0).view(t.Size([2, 3])),
    "reshape": lambda t: t.arange(6.0).reshape(t.zeros(3, 2).shape),
    "expand": lambda t: t.ones(1, 3).expand(t.Size([2, 3])),
    "new_zeros": lambda t: t.ones(2).new_zeros(t.Size([1, 2])),
    "empty_like_shape": lambda t: t.empty(t.Size([2, 0])).shape,
    "broadcast_shapes": lambda t: t.broadcast_shapes((2, 1), (1, 3)),
    "randn_shape": lambda t: t.randn(t.Size([4, 1])).shape,
    "reshape_minus_one": lambda t: t.zeros(2, 3, 4).reshape(t.zeros(6, 4).shape[:1] + (-1,)).shape,
}


@pytest.mark.parametrize("name", SIZES)
def test_size_as_torch(name):
    ours, theirs = _both(SIZES[name])
    assert repr(ours) == repr(theirs)
    assert type(ours).__name__ == type(theirs).__name__


@pytest.mark.parametrize("bad", [[2.0], [None], ["a"], 3])
def test_size_refuses_as_torch(bad):
    with pytest.raises(TypeError) as theirs:
        torch.Size(bad)
    with pytest.raises(TypeError) as ours:
        eager.Size(bad)
    assert str(ours.value) == str(theirs.value)


def test_shape_is_cached_but_follows_the_array():
    x = eager.zeros(2, 3)
    assert x.shape is x.shape
    x.data = eager.zeros(4)
    assert x.shape == (4,) and repr(x.shape) == "torch.Size([4])"
    x.resize_(2, 2)
    assert x.size() == (2, 2)


def test_bfloat16_data_is_exact():
    # the same float32 data rounds to the same bfloat16 in both libraries
    data = np.float32([1 / 3, 1e-3, 300.7])
    ours, theirs = pair(data, "bfloat16")
    assert np.array_equal(ours.float().numpy(), theirs.float().numpy())
    assert np.array_equal(ours.float().numpy(), data.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_saved_size_loads_back_a_size(tmp_path):
    path = tmp_path / "ckpt.pt"
    for lib in (eager, torch):
        lib.save({"shape": lib.zeros(2, 3).shape, "plain": (2, 3)}, path)
        back = lib.load(path)
        assert repr(back["shape"]) == "torch.Size([2, 3])" and type(back["plain"]) is tuple


def test_module_docstrings_run():
    import doctest
    from dualgrad.eager import printing, size
    for mod in (printing, size):
        failed, tried = doctest.testmod(mod)
        assert tried > 0 and failed == 0, mod.__name__


def test_shape_inside_compile_is_a_size():
    from dualgrad import compiler
    seen = []

    @compiler.compile
    def flat(x):
        seen.append(repr(x.shape[1:]))
        n, *rest = x.shape
        return x.reshape(n, -1) * x.size(0)

    out = flat(eager.ones(2, 3, 4))
    assert out.shape == (2, 12) and repr(out.shape) == "torch.Size([2, 12])"
    assert seen == ["torch.Size([3, 4])"] and flat.traces == 1


def test_a_module_holding_a_size_retraces_when_it_changes():
    from dualgrad import compiler

    class Reshape(eager.nn.Module):
        def __init__(self, shape):
            super().__init__()
            self.shape = shape

        def forward(self, x):
            return x.reshape(self.shape)

    m = Reshape(eager.zeros(3, 4).shape)
    f = compiler.compile(m)
    assert f(eager.ones(12)).shape == (3, 4)
    m.shape = eager.zeros(4, 3).shape
    assert f(eager.ones(12)).shape == (4, 3)


# NOTE: known differences. A tensor's grad_fn is named after the dualgrad op that made it
# (docs/pytorch-compat.md, autograd), and many torch functions are compositions of other ops
# here (mean is a sum times 1/n, softmax ends in a division, cross_entropy in a product) or
# map to one op where torch has several nodes (reshape, view and flatten are all `reshape`;
# `.T` and permute are `transpose`). Naming torch's node would need each composite to record
# one node of torch's kind, not a printing change. Each row: (dualgrad's name, torch's);
# the rest of the text must agree, and the test fails once a name does.
GRAD_FN_DIFFERS = {
    "matmul": (lambda t, x: x @ x.T, "MatmulBackward0", "MmBackward0"),
    "mean": (lambda t, x: x.mean(), "MulBackward0", "MeanBackward0"),
    "view": (lambda t, x: x.view(-1), "ReshapeBackward0", "ViewBackward0"),
    "T": (lambda t, x: x.T, "TransposeBackward0", "PermuteBackward0"),
    "select": (lambda t, x: x[0], "SliceBackward0", "SelectBackward0"),
    "softmax": (lambda t, x: t.softmax(x, dim=1), "DivBackward0", "SoftmaxBackward0"),
    "linear": (lambda t, x: t.nn.functional.linear(x, x), "MatmulNtBackward0", "MmBackward0"),
    "cross_entropy": (lambda t, x: t.nn.functional.cross_entropy(x, t.tensor([0, 1])),
                      "MulBackward0", "NllLossBackward0"),
    "sum_dim": (lambda t, x: x.sum(1), "SumBackward0", "SumBackward1"),
    "cat": (lambda t, x: t.cat([x, x]), "ConcatBackward0", "CatBackward0"),
    "unsqueeze": (lambda t, x: x.unsqueeze(0), "ExpandDimsBackward0", "UnsqueezeBackward0"),
    "double": (lambda t, x: x.double(), "CastBackward0", "ToCopyBackward0"),
    "expand": (lambda t, x: x[:1].expand(3, 2), "BroadcastToBackward0", "ExpandBackward0"),
}


@pytest.mark.parametrize("name", GRAD_FN_DIFFERS)
def test_grad_fn_names_known_to_differ(name):
    build, ours_name, torch_name = GRAD_FN_DIFFERS[name]
    ours, theirs = (build(lib, lib.tensor([[1.5, -2.0], [0.5, 3.0]], requires_grad=True))
                    for lib in (eager, torch))
    assert repr(ours) == repr(theirs).replace(torch_name, ours_name)
    assert f"grad_fn=<{ours_name}>" in repr(ours) and ours_name != torch_name
