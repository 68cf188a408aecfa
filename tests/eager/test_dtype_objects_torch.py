"""dtypes are torch.dtype objects, as torch's: `x.dtype`, `torch.float32` and the functions
that answer with a dtype give one object per dtype that prints, compares, pickles and answers
`is_floating_point` and its kin as torch's does, for every dtype eager names and each alias.

Programs print dtypes (`print(x.dtype)`, f-strings in log lines and assertion messages, the
repr of a dict of dtypes) and test them (`x.dtype.is_floating_point`, `if dtype in {...}`):
a dtype that prints `float32` where torch prints `torch.float32`, or lacks an attribute, is a
silent difference in the program's output or an AttributeError.
"""
import copy
import pickle

import numpy as np
import pytest
import torch

from dualgrad import eager

DTYPES = ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "bool", "complex64", "complex128")
ALIASES = ("float", "double", "half", "long", "int", "short", "cfloat", "cdouble")


def _outcome(fn):
    """repr of fn()'s result, or its exception's type and message."""
    try:
        return repr(fn())
    except Exception as e:   # noqa: BLE001 - the exception is the outcome compared
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("name", DTYPES + ALIASES)
def test_prints_as_torch(name):
    ours, theirs = getattr(eager, name), getattr(torch, name)
    assert isinstance(ours, eager.dtype) and type(ours) is eager.dtype
    for show in (repr, str, lambda d: f"{d}", lambda d: f"dtype={d!r}", lambda d: "%s" % d,
                 lambda d: repr([d]), lambda d: repr({"x": d}), lambda d: format(d, "")):
        assert show(ours) == show(theirs)


@pytest.mark.parametrize("name", DTYPES + ALIASES)
def test_attributes_as_torch(name):
    ours, theirs = getattr(eager, name), getattr(torch, name)
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize", "abbr"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert _outcome(ours.to_real) == _outcome(theirs.to_real)
    if name in ("float16", "half"):   # NOTE: torch's answer is complex32, which dualgrad lacks
        with pytest.raises(RuntimeError, match="complex32"):
            ours.to_complex()
    else:
        assert _outcome(ours.to_complex) == _outcome(theirs.to_complex)


@pytest.mark.parametrize("name", ALIASES)
def test_alias_is_the_same_object(name):
    canonical = repr(getattr(torch, name)).removeprefix("torch.")
    assert getattr(eager, name) is getattr(eager, canonical)


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_dtype_is_the_object(name):
    d = getattr(eager, name)
    x = eager.zeros(3, dtype=d)
    assert x.dtype is d and type(x.dtype) is eager.dtype
    assert repr(x.dtype) == repr(torch.zeros(3, dtype=getattr(torch, name)).dtype)
    assert x.to(eager.complex128).dtype is eager.complex128 and x[0].dtype is d
    assert d in {x.dtype} and {d: 1}[x.dtype] == 1 and x.dtype == d and not x.dtype != d


@pytest.mark.parametrize("name", DTYPES)
def test_pickle_and_copy_give_the_same_object(name):
    d = getattr(eager, name)
    assert pickle.loads(pickle.dumps(d)) is d
    assert copy.copy(d) is d and copy.deepcopy({"dtype": d})["dtype"] is d
    state = pickle.loads(pickle.dumps({"w": eager.ones(2, dtype=d)}))
    assert state["w"].dtype is d


def test_cannot_be_instantiated_nor_ordered_as_torch():
    assert _outcome(lambda: eager.dtype("float32")) == _outcome(lambda: torch.dtype("float32"))
    with pytest.raises(TypeError):
        eager.float32 < eager.float64   # noqa: B015 - torch's dtypes have no order
    with pytest.raises(TypeError):
        torch.float32 < torch.float64   # noqa: B015


def test_functions_answering_a_dtype_answer_torch_dtypes():
    w = eager.nn.Parameter(eager.ones(2))
    (w * 2).sum().backward()
    answers = {
        "get_default_dtype": (eager.get_default_dtype(), torch.get_default_dtype()),
        "result_type": (eager.result_type(eager.ones(1, dtype=eager.int32), 1.5),
                        torch.result_type(torch.ones(1, dtype=torch.int32), 1.5)),
        "promote_types": (eager.promote_types(eager.int32, eager.float16),
                          torch.promote_types(torch.int32, torch.float16)),
        "Parameter": (w.dtype, torch.nn.Parameter(torch.ones(2)).dtype),
        "grad": (w.grad.dtype, torch.float32),
        "autocast": (eager.get_autocast_dtype("cpu"), torch.get_autocast_dtype("cpu")),
        "fast_dtype": (eager.autocast("cpu").fast_dtype, torch.autocast("cpu").fast_dtype),
        "LongTensor": (eager.LongTensor.dtype, torch.LongTensor.dtype),
        "finfo": (eager.finfo(eager.float16).dtype, torch.finfo(torch.float16).dtype),
        "iinfo": (eager.iinfo(eager.int8).dtype, torch.iinfo(torch.int8).dtype),
    }
    for what, (ours, theirs) in answers.items():
        assert (type(ours).__name__, repr(ours)) == (type(theirs).__name__, repr(theirs)), what


def test_default_dtype_follows_set_default_dtype():
    try:
        eager.set_default_dtype(eager.float64)
        assert eager.get_default_dtype() is eager.float64
        assert eager.tensor([1.0]).dtype is eager.float64
    finally:
        eager.set_default_dtype(eager.float32)


def test_dtype_in_a_message_and_a_log_line():
    x, t = eager.ones(2, dtype=eager.float16), torch.ones(2, dtype=torch.float16)
    assert f"expected float32, got {x.dtype}" == f"expected float32, got {t.dtype}"
    assert str(dict(a=x.dtype, b=eager.bool)) == str(dict(a=t.dtype, b=torch.bool))
    assert repr(eager.tensor([1.0, 2.0], dtype=eager.float64)) == \
        repr(torch.tensor([1.0, 2.0], dtype=torch.float64))


def test_idioms_that_test_a_dtype():
    x = eager.arange(3)
    assert not x.dtype.is_floating_point and x.float().dtype.is_floating_point
    assert x.dtype in (eager.int64, eager.long) and x.dtype not in {eager.float32}
    assert (eager.float if x.dtype == eager.long else eager.double) is eager.float32


def test_numpy_reads_the_dtype_and_it_equals_numpy_s():
    """dualgrad's documented difference (docs/pytorch-compat.md): a torch.dtype equals the
    NumPy dtype it stands for, where torch's does not."""
    x = eager.ones(2)
    assert x.dtype == np.float32 and x.dtype == np.dtype("float32") and x.dtype != np.float64
    assert np.zeros(2, x.dtype).dtype == np.float32 and np.dtype(eager.bfloat16).name == "bfloat16"
    assert x.numpy().astype(eager.float64).dtype == np.float64


def test_numpy_dtypes_and_names_are_still_taken():
    assert eager.zeros(2, dtype=np.float64).dtype is eager.float64
    assert eager.ones(2).to(np.int32).dtype is eager.int32
    assert eager.tensor([1, 2], dtype="int16").dtype is eager.int16
    assert eager.ones(2).type(eager.float16).dtype is eager.float16
    assert eager.ones(2).type("torch.DoubleTensor").dtype is eager.float64


def test_modules_init_and_collate_take_dtypes():
    net = eager.nn.Linear(3, 2).to(eager.float64)
    assert net.weight.dtype is eager.float64 and net(eager.ones(1, 3, dtype=eager.float64)).dtype \
        is eager.float64
    w = eager.empty(2, 2, dtype=eager.float64)
    eager.nn.init.xavier_uniform_(w)
    assert w.dtype is eager.float64
    from dualgrad.eager.utils.data import default_collate
    batch = default_collate([eager.ones(2, dtype=eager.float16), eager.zeros(2, dtype=eager.float16)])
    assert batch.dtype is eager.float16
    assert default_collate([1, 2]).dtype is eager.int64
    d = eager.distributions.Normal(eager.zeros(2, dtype=eager.float64), 1.0)
    assert d.sample().dtype is eager.float64


def test_save_load_keeps_dtypes(tmp_path):
    names = [n for n in DTYPES if n != "complex128"]   # NOTE: safetensors has no complex128
    state = {n: eager.ones(2, dtype=getattr(eager, n)) for n in names}
    eager.save(state, tmp_path / "s.pt")
    back = eager.load(tmp_path / "s.pt")
    assert {n: back[n].dtype for n in names} == {n: getattr(eager, n) for n in names}
    assert all(back[n].dtype is getattr(eager, n) for n in names)


def test_compiled_function_sees_torch_dtypes():
    from dualgrad import compiler
    seen = []

    @compiler.compile
    def f(x):
        seen.append((repr(x.dtype), x.dtype.is_floating_point))
        return x.to(eager.float64) + eager.ones(2, dtype=x.dtype)

    out = f(eager.ones(2))
    assert out.dtype is eager.float64 and seen[0] == ("torch.float32", True)
    assert f(eager.ones(2, dtype=eager.float16)).dtype is eager.float64
