"""The registry's samples with a dtype axis: every elementwise op and reduction, on bool,
uint8, int32, int64, float16 and float64 inputs, gives one dtype and value unoptimised and
optimised (inputs as constants, so `constant_fold` runs the kernel, and as fed placeholders),
the dtype its shape rule declares, and under compile() exactly eager's.

A sample whose inputs an op refuses in a dtype (a ShapeError or TypeError when the graph is
built, or eager raising) is not a case: the refusal happens before any engine runs. Cap: the
first 3 samples of each op (about 1,000 cases, a few seconds); fusion over all dtypes is
covered by the random programs (test_random_programs.py).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager, graph, ops
from dualgrad.ops.core import ELEMENTWISE, REDUCTION

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float64"]
SAMPLES_PER_OP = 3
_TOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-10}
_NAMES = sorted(n for n in ELEMENTWISE | REDUCTION if not ops.REGISTRY[n].stateful)


def _inputs(sample, dtype, seed):
    rng = np.random.default_rng(seed)
    lo, hi = sample.domain
    out = []
    for a in sample.args:
        if not isinstance(a, tuple):
            out.append(a)
        elif dtype == "bool":
            out.append(rng.random(a) < 0.5)
        elif np.dtype(dtype).kind in "iu":
            out.append(np.round(rng.uniform(max(lo, 0 if dtype == "uint8" else lo), hi, a))
                       .astype(dtype))
        else:
            out.append(rng.uniform(lo, hi, a).astype(dtype))
    return out


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = _TOL[want.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol, equal_nan=True, err_msg=what)


def _graph_runs(op, args, attrs, as_constants):
    g = graph.Graph()
    with g.as_default():
        feeds, ins = {}, []
        for a in args:
            if isinstance(a, np.ndarray) and not as_constants:
                p = graph.placeholder(a.dtype, a.shape)
                feeds[p] = a
                ins.append(p)
            elif isinstance(a, np.ndarray):
                ins.append(graph.constant(a))
            else:
                ins.append(a)
        y = op.fn(*ins, **attrs)
    with graph.Session(g, optimize=False) as s:
        plain = s.run(y, feeds)
    with graph.Session(g, optimize=True) as s:
        opt = s.run(y, feeds)
    return y.dtype, plain, opt


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", _NAMES)
def test_every_dtype_gives_one_result_in_every_engine(name):
    op = ops.REGISTRY[name]
    cases = 0
    for k, sample in enumerate([s for s in op.samples if s.match is None][:SAMPLES_PER_OP]):
        for dtype in DTYPES:
            args = _inputs(sample, dtype, k)
            what = f"{name} sample {k} in {dtype}"
            try:
                want = op.fn(*[eager.tensor(a) if isinstance(a, np.ndarray) else a
                               for a in args], **sample.attrs)
                declared, plain, opt = _graph_runs(op, args, sample.attrs, as_constants=False)
            except (ops.ShapeError, TypeError, ops.KernelError, ZeroDivisionError):
                continue   # NOTE: refused in this dtype, before any engine computed
            cases += 1
            assert np.asarray(plain).dtype == declared, \
                f"{what}: the shape rule says {declared}, the kernel gave {plain.dtype}"
            _same(opt, plain, f"{what}: optimised vs unoptimised")
            _, _, folded = _graph_runs(op, args, sample.attrs, as_constants=True)
            _same(folded, plain, f"{what}: folded vs unoptimised")
            tensors = [eager.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
            pos = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

            def fn(*xs):
                full = list(args)
                for i, x in zip(pos, xs):
                    full[i] = x
                return op.fn(*full, **sample.attrs)
            with warnings.catch_warnings():
                warnings.simplefilter("error", UserWarning)
                got = compiler.compile(fn)(*[tensors[i] for i in pos])
            _same(got.numpy(), want.numpy(), f"{what}: compile() vs eager")
    assert cases, f"{name}: no dtype ran any sample"
