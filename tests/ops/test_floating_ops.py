"""Ops whose result is floating (exp, sqrt, sigmoid, …: `ops.FLOATING`) give float32 for
integer and bool inputs in eager, compile() and the graphs compile() records, as PyTorch
does; a TF1 graph refuses them at build time, as tf.compat.v1 does. Generated from the
registry."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager, graph, ops
from dualgrad.graph.dtypes import FLOATS, TF1_TYPES

torch = pytest.importorskip("torch")

INPUTS = {
    "uint8": np.array([0, 1, 3, 20, 255], np.uint8),
    "int32": np.array([-7, 0, 1, 3, 20], np.int32),
    "int64": np.array([-7, 0, 1, 3, 20], np.int64),
    "bool": np.array([False, True, True], np.bool_),
}


# ops with a required attribute: its value here (torch takes it as the first argument)
ATTRS = {"polygamma": {"n": 2}}


def torch_fn(name):
    fn = (getattr(torch, name, None) or getattr(torch.special, name, None)
          or getattr(torch.nn.functional, name, None))
    if fn is None or name not in ATTRS:
        return fn
    return lambda t: fn(*ATTRS[name].values(), t)


def expected(name, x):
    """torch's result on x as float32, or (an op torch lacks: tf.math.erfcinv) the op's own
    NumPy-API reference on it."""
    fn = torch_fn(name)
    if fn is None:
        return ops.REGISTRY[name].ref(np, x.astype(np.float32), **ATTRS.get(name, {})), None
    want = fn(torch.from_numpy(x).to(torch.float32)).numpy()
    try:
        return want, fn(torch.from_numpy(x))
    except RuntimeError:
        return want, None   # NOTE: torch has no integer softplus; we compute it in float32 too


def engines(name, x):
    """{engine: result} of the op on x in eager, compile(), the graph and the fused graph."""
    fn = functools.partial(ops.REGISTRY[name].fn, **ATTRS.get(name, {}))
    out = {"eager": fn(eager.tensor(x)).numpy(),
           "compile": compiler.compile(lambda t: fn(t) * 2.0)(eager.tensor(x)).numpy() / 2}
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(x.dtype, x.shape)
        # NOTE: the floating dtypes, less those TF's CPU kernels lack (graph/dtypes.py)
        floats = ", ".join(sorted(d.name for d in TF1_TYPES.get(name, FLOATS)))
        with pytest.raises(TypeError, match=f"{name}: TF1 defines this op for {floats}, "
                                            f"not {x.dtype}"):
            fn(p)   # NOTE: a TF1 graph takes TF1's types (tf.exp of an int32 tensor raises)
    g.promote_dtypes = True     # NOTE: a graph compile() records: PyTorch's rule
    with g.as_default():
        y, y2 = fn(p), fn(p) * 2.0
    assert y.dtype == np.float32, f"{name}({x.dtype}) builds a {y.dtype} node"
    for opt in (False, True):
        with graph.Session(g, optimize=opt) as s:
            a, b = s.run([y, y2], {p: x})
        out[f"graph optimize={opt}"], out[f"graph optimize={opt}, chained"] = a, b / 2
    return out


@pytest.mark.parametrize("dtype", sorted(INPUTS))
@pytest.mark.parametrize("name", sorted(ops.FLOATING))
def test_integer_and_bool_inputs_give_float32_as_torch(name, dtype):
    x = INPUTS[dtype]
    want, direct = expected(name, x)
    if direct is not None:
        assert direct.dtype == torch.float32
        np.testing.assert_array_equal(direct.numpy(), want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # log(0), sqrt(-7), exp(255): as torch
        got = engines(name, x)
    for engine, y in got.items():
        assert y.dtype == np.float32, f"{name}({dtype}) in {engine}: {y.dtype}"
        np.testing.assert_allclose(y, want, rtol=_RTOL.get(name, 2e-6), atol=1e-7,
                                   err_msg=engine)


# NOTE: torch evaluates these in float32 with its own series; dualgrad rounds scipy's float64
# value once, which differs from torch's by up to 3e-5 relative (bessel_j1(255): 2.6e-5)
_RTOL = {"bessel_j0": 5e-5, "bessel_j1": 5e-5, "bessel_y0": 5e-5, "bessel_y1": 5e-5}
