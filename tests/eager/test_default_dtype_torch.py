"""torch.set_default_dtype(torch.float64) and what follows it, against torch: integer inputs
to floating functions (exp, sqrt, ...) compute in the default dtype, and modules make their
parameters and buffers in it (dualgrad kept float32 for both); and the float-drawing random
functions refuse integer and bool dtypes with torch's NotImplementedError (they computed and
truncated)."""
import contextlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import compiler, eager  # noqa: E402


@contextlib.contextmanager
def default_dtype(lib, dtype):
    old = lib.get_default_dtype()
    lib.set_default_dtype(dtype)
    try:
        yield
    finally:
        lib.set_default_dtype(old)


FLOATING = ["exp", "sqrt", "sigmoid", "sin", "cos", "log", "tanh", "erf", "rsqrt", "log1p",
            "expm1", "log2", "log10", "reciprocal", "atan", "asinh", "acos", "tan", "sinh",
            "erfc", "lgamma", "digamma", "exp2", "sinc", "logit", "special.entr",
            "special.expit", "special.i0", "special.ndtr"]


@pytest.mark.parametrize("default", ["float64", "float32"])
@pytest.mark.parametrize("name", FLOATING)
def test_floating_functions_of_integers_give_the_default_dtype(name, default):
    got = []
    for lib in (torch, eager):
        with default_dtype(lib, getattr(lib, default)):
            for dt in ("int64", "int32", "bool"):
                x = lib.tensor(np.array([1, 2, 3]).astype(dt))
                fn = lib
                for part in name.split("."):
                    fn = getattr(fn, part)
                got.append(str(fn(x).dtype).split(".")[-1])
    assert got[3:] == got[:3]


def test_compiled_floating_functions_of_integers_give_the_default_dtype():
    with default_dtype(eager, eager.float64):
        step = compiler.compile(lambda t: t.exp() + t.sqrt() * t.sigmoid())
        x = eager.tensor([1, 2, 3])
        out = step(x)
        assert out.dtype == np.float64
        np.testing.assert_allclose(out.numpy(), (x.exp() + x.sqrt() * x.sigmoid()).numpy())


MODULES = ["Linear(3, 4)", "Conv2d(2, 3, 3)", "ConvTranspose2d(2, 3, 3)", "Conv1d(2, 3, 3)",
           "BatchNorm2d(3)", "LayerNorm(4)", "GroupNorm(2, 4)", "InstanceNorm2d(3, affine=True)",
           "Embedding(5, 3)", "EmbeddingBag(5, 3)", "LSTM(3, 4)", "GRU(3, 4)", "RNN(3, 4)",
           "LSTMCell(3, 4)", "GRUCell(3, 4)", "PReLU()", "MultiheadAttention(4, 2)",
           "TransformerEncoderLayer(4, 2, 8)"]


@pytest.mark.parametrize("text", MODULES)
def test_modules_make_their_parameters_in_the_default_dtype(text):
    dtypes = []
    for lib in (torch, eager):
        with default_dtype(lib, lib.float64):
            module = eval(text, {n: getattr(lib.nn, n) for n in dir(lib.nn) if n[0].isupper()})
        dtypes.append({k: str(v.dtype).split(".")[-1] for k, v in module.state_dict().items()})
    assert dtypes[1] == dtypes[0]


RANDOM = {"rand": lambda L, dt: L.rand(3, dtype=dt), "randn": lambda L, dt: L.randn(3, dtype=dt),
          "rand_like": lambda L, dt: L.rand_like(L.zeros(3, dtype=dt)),
          "randn_like": lambda L, dt: L.randn_like(L.zeros(3, dtype=dt)),
          "uniform_": lambda L, dt: L.zeros(3, dtype=dt).uniform_(),
          "normal_": lambda L, dt: L.zeros(3, dtype=dt).normal_()}


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool"])
@pytest.mark.parametrize("name", list(RANDOM))
def test_float_random_functions_refuse_integer_dtypes(name, dtype):
    with pytest.raises(NotImplementedError) as theirs:
        RANDOM[name](torch, getattr(torch, dtype))
    with pytest.raises(NotImplementedError) as ours:
        RANDOM[name](eager, getattr(eager, dtype))
    assert str(ours.value) == str(theirs.value)
    assert RANDOM[name](eager, eager.float16).dtype == np.float16
