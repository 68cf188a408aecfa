"""compiler.codegen, fused_spec and fused_kernel: generated fused kernels against NumPy.

Many checks share one multi-output spec so that the suite compiles few kernels (each costs
0.15-0.6 s); arrays are tiny except where noted. The whole file runs against a fresh kernel
cache in a temporary directory.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dualgrad import ops
from dualgrad.compiler import codegen, fused_kernel, kernel_cache
from dualgrad.compiler.fused_kernel import compile_fused
from dualgrad.compiler.fused_spec import CodegenError, FusedSpec

REPO = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(1234)
_erf = np.vectorize(math.erf, otypes=[np.float64])


@pytest.fixture(scope="module", autouse=True)
def fresh_cache(tmp_path_factory):
    old = os.environ.get("DUALGRAD_CACHE_DIR")
    os.environ["DUALGRAD_CACHE_DIR"] = str(tmp_path_factory.mktemp("dualgrad-cache"))
    yield
    if old is None:
        del os.environ["DUALGRAD_CACHE_DIR"]
    else:
        os.environ["DUALGRAD_CACHE_DIR"] = old


class Prog:
    """Tiny builder: p = Prog(); x = p.input("float32", "full"); y = p.ew("exp({0})", x)."""

    def __init__(self, dtype="float32"):
        self.dtype, self.inputs, self.nodes = dtype, [], []

    def _add(self, node):
        self.nodes.append(node)
        return len(self.nodes) - 1

    def input(self, dtype=None, kind="full"):
        self.inputs.append((dtype or self.dtype, kind))
        return self._add(("in", len(self.inputs) - 1))

    def const(self, value, dtype=None):
        return self._add(("const", value, dtype or self.dtype))

    def ew(self, template, *args, dtype=None):
        return self._add(("ew", template, args, dtype or self.dtype))

    def reduce(self, how, arg, dtype=None):
        return self._add(("reduce", how, arg, dtype or self.dtype))

    def spec(self, *outputs):
        return FusedSpec(tuple(self.inputs), tuple(self.nodes), outputs)


def rand(shape, dtype="float32", lo=-3.0, hi=3.0):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def tol(dtype):
    return dict(rtol=2e-6, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)


# -- every template function and operator, float32 and float64 --------------------------------
UNARY = {
    "exp({0})": np.exp, "tanh({0})": np.tanh, "erf({0})": _erf, "abs({0})": np.abs,
    "(-{0})": np.negative, "{0}": lambda x: x, "sin({0})": np.sin, "cos({0})": np.cos,
    "0.5 + 0.5 * tanh(0.5 * {0})": lambda x: 1 / (1 + np.exp(-x)),
    "maximum({0}, 0)": lambda x: np.maximum(x, 0), "-2 * {0} ** 2 + 1": lambda x: 1 - 2 * x * x,
    "where({0} != {0}, {0}, where({0} > 0, 1, where({0} < 0, -1, 0)))": np.sign,
}
POSITIVE = {"log({0})": np.log, "sqrt({0})": np.sqrt, "log1p({0})": np.log1p}
BINARY = {
    "({0} + {1})": np.add, "({0} - {1})": np.subtract, "({0} * {1})": np.multiply,
    "({0} / {1})": np.divide, "maximum({0}, {1})": np.maximum,
    "minimum({0}, {1})": np.minimum,
}
COMPARE = {"({0} < {1})": np.less, "({0} <= {1})": np.less_equal, "({0} > {1})": np.greater,
           "({0} >= {1})": np.greater_equal, "({0} == {1})": np.equal,
           "({0} != {1})": np.not_equal}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_functions_and_operators(dtype):
    p = Prog(dtype)
    x, y, pos = p.input(), p.input(), p.input()
    outs, refs = [], []
    R, C = 3, 7
    xv, yv, pv = rand((R, C), dtype), rand((R, C), dtype), rand((R, C), dtype, 0.1, 5.0)
    yv[0, :3] = xv[0, :3]  # some equal pairs for ==, <=, >=
    x64, y64, p64 = (a.astype(np.float64) for a in (xv, yv, pv))
    for t, f in UNARY.items():
        outs.append(p.ew(t, x))
        refs.append(f(x64))
    for t, f in POSITIVE.items():
        outs.append(p.ew(t, pos))
        refs.append(f(p64))
    for t, f in BINARY.items():
        outs.append(p.ew(t, x, y))
        refs.append(f(x64, y64))
    outs.append(p.ew("({0} ** {1})", pos, y))
    refs.append(np.power(p64, y64))
    for t, f in COMPARE.items():
        outs.append(p.ew(t, x, y, dtype="bool"))
        refs.append(f(xv, yv))
    c = p.ew("({0} > {1})", x, y, dtype="bool")
    outs.append(p.ew("where({0}, {1}, {2})", c, x, y))
    refs.append(np.where(xv > yv, x64, y64))
    fn = compile_fused(p.spec(*outs))
    got = fn(R, C, xv, yv, pv)
    assert len(got) == len(refs)
    for node, g, r in zip(outs, got, refs):
        assert g.shape == (R, C)
        if g.dtype == np.bool_:
            np.testing.assert_array_equal(g, r, err_msg=str(p.nodes[node]))
        else:
            assert g.dtype == dtype
            np.testing.assert_allclose(g, r, **tol(dtype), err_msg=str(p.nodes[node]))


def test_float32_approximations_accuracy_and_specials():
    p = Prog("float32")
    x = p.input()
    outs = [p.ew(t, x) for t in ("tanh({0})", "erf({0})", "exp({0})",
                                 ops.REGISTRY["sigmoid"].scalar)]
    grid = np.concatenate([np.linspace(-12, 12, 20001), np.linspace(-0.01, 0.01, 2001),
                           np.linspace(-104, 89, 4001)]).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 7.9, -7.9, 4.0, -4.0], np.float32)
    xs = np.concatenate([grid, special])
    tanh, erf, exp, sig = (o[0] for o in compile_fused(p.spec(*outs))(1, xs.size, xs))
    x64 = xs.astype(np.float64)
    with np.errstate(over="ignore"):
        ref_exp = np.exp(x64)
    for got, ref, bound in ((tanh, np.tanh(x64), 5e-7), (erf, _erf(x64), 5e-7),
                            (sig, 1 / (1 + np.exp(-x64)), 5e-7)):
        ok = ~np.isnan(x64)
        assert np.max(np.abs(got[ok] - ref[ok])) <= bound
        assert np.isnan(got[~ok]).all()
    normal = (ref_exp > 1.2e-38) & (ref_exp < 3.4e38)
    assert np.max(np.abs(exp[normal] / ref_exp[normal] - 1)) <= 1.5e-7
    assert exp[-8] == np.inf and exp[-7] == 0.0 and np.isnan(exp[-9])
    assert (exp[xs > 88.73] == np.inf).all() and (exp[xs < -104] == 0).all()


def test_float32_log_accuracy_and_specials():
    p = Prog("float32")
    fn = compile_fused(p.spec(p.ew("log({0})", p.input())))
    xs = np.concatenate([np.geomspace(1e-45, 3e38, 20001), np.linspace(0.5, 2.0, 20001),
                         [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1.0]]).astype(np.float32)
    got = fn(1, xs.size, xs)[0][0]
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(xs.astype(np.float64))
        np.testing.assert_array_equal(got[-7:], np.log(xs[-7:]))
    normal = np.isfinite(ref) & (ref != 0) & (xs >= 1.2e-38)
    assert np.max(np.abs(got[normal] / ref[normal] - 1)) <= 1.5e-7
    fin = np.isfinite(ref)
    assert np.max(np.abs(got[fin] - ref[fin])) <= 8e-6    # subnormals included


def test_pow_expansion():
    p = Prog("float32")
    x, pos = p.input(), p.input()
    exps = [0, 1, 2, 3, 4, 0.5, -1, 2.5]
    outs = [p.ew("({0} ** {1})", pos if e in (0.5, 2.5) else x, p.const(e)) for e in exps]
    fn = compile_fused(p.spec(*outs))
    body = fn.source.split("def kernel_serial")[1].split("@njit")[0]
    assert body.count("**") == 1  # only the 2.5 power calls pow
    assert "math.sqrt" in body
    xv, pv = rand((2, 5)), rand((2, 5), lo=0.1, hi=4.0)
    for e, got in zip(exps, fn(2, 5, xv, pv)):
        base = pv if e in (0.5, 2.5) else xv
        np.testing.assert_allclose(got, np.power(base.astype(np.float64), e), rtol=2e-6)


# -- input kinds and outputs of each kind --------------------------------------------------------
def test_input_kinds_and_output_shapes():
    p = Prog("float64")
    x, r, c, s = p.input(kind="full"), p.input(kind="row"), p.input(kind="col"), \
        p.input(kind="scalar")
    full = p.ew("(({0} * {1}) + ({2} - {3}))", x, r, c, s)
    outer = p.ew("({0} * {1})", r, c)             # row x col -> full
    row = p.ew("({0} * {1})", r, s)
    col = p.ew("({0} + {1})", c, s)
    scal = p.ew("({0} * {1})", s, p.const(2.0))
    R, C = 4, 3
    xv, rv, cv = rand((R, C), "float64"), rand(R, "float64"), rand(C, "float64")
    sv = np.array(1.5)
    fn = compile_fused(p.spec(full, outer, row, col, scal, x))
    assert fn.layout == "rows"
    got = fn(R, C, xv, rv, cv, sv)
    want = (xv * rv[:, None] + (cv - 1.5), np.outer(rv, cv), rv * 1.5, cv + 1.5, np.array(3.0), xv)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # the same call with a Python scalar and row/col given as (R, 1) / (1, C) keepdims arrays
    got2 = fn(R, C, xv, rv[:, None], cv[None, :], 1.5)
    for g, w in zip(got2, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_flat_layout_full_and_scalar():
    p = Prog("float32")
    x, s = p.input(), p.input(kind="scalar")
    y = p.ew("({0} * {1})", x, s)
    fn = compile_fused(p.spec(y, s))
    assert fn.layout == "flat"
    xv = rand((3, 5))
    y_got, s_got = fn(3, 5, xv, np.array(2.0, np.float32))
    np.testing.assert_allclose(y_got, xv * 2, rtol=1e-7)
    assert s_got.shape == () and s_got == 2.0


# -- integers, booleans, casts -------------------------------------------------------------------
def test_int_bool_and_casts():
    p = Prog("int32")
    a, b = p.input("int32"), p.input("int64")
    f = p.input("float32")
    outs, want = [], []
    av = np.array([[2_000_000_000, -7, 5, 0]], np.int32)
    bv = np.array([[3, 2, -4, 9]], np.int64)
    fv = np.array([[1.7, -2.5, np.nan, 0.0]], np.float32)
    outs.append(p.ew("({0} + {1})", a, a, dtype="int32"))          # wraps like NumPy
    want.append(av + av)
    outs.append(p.ew("({0} * {1})", a, b, dtype="int64"))
    want.append(av.astype(np.int64) * bv)
    outs.append(p.ew("({0} / {1})", a, b, dtype="float64"))
    want.append(av / bv)
    outs.append(p.ew("({0} ** {1})", a, p.const(2, "int32"), dtype="int32"))
    want.append(av * av)
    outs.append(p.ew("abs({0})", a, dtype="int32"))
    want.append(np.abs(av))
    outs.append(p.ew("(-{0})", b, dtype="int64"))
    want.append(-bv)
    outs.append(p.ew(ops.REGISTRY["sign"].scalar, b, dtype="int64"))
    want.append(np.sign(bv))
    outs.append(p.ew(ops.REGISTRY["relu"].scalar, b, dtype="int64"))
    want.append(np.maximum(bv, 0))
    outs.append(p.ew("({0} * 3 + 1) * 0.5", a, dtype="float64"))   # int * weak float -> f64
    want.append((av * 3 + 1) * 0.5)
    outs.append(p.ew("maximum({0}, {1})", a, b, dtype="int64"))
    want.append(np.maximum(av, bv))
    outs.append(p.ew("minimum({0}, {1})", a, b, dtype="int64"))
    want.append(np.minimum(av, bv))
    gt = p.ew("({0} > {1})", a, b, dtype="bool")
    outs.append(gt)
    want.append(av > bv)
    outs.append(p.ew("where({0}, {1}, {2})", gt, a, b, dtype="int64"))
    want.append(np.where(av > bv, av, bv))
    for to in ("float32", "float64", "int32", "int64", "bool"):
        src = f if to in ("int32", "int64") else a
        srcv = np.nan_to_num(fv) if to in ("int32", "int64") else av
        if to in ("int32", "int64"):
            src = p.ew("cast_float32({0})", p.ew("where({0}, {1}, {2})",
                       p.ew("({0} != {1})", f, f, dtype="bool"), p.const(0.0, "float32"), f,
                       dtype="float32"), dtype="float32")
        outs.append(p.ew(f"cast_{to}({{0}})", src, dtype=to))
        want.append(srcv.astype(to))
    outs.append(p.ew("cast_bool({0})", f, dtype="bool"))            # NaN -> True
    want.append(fv.astype(bool))
    nb = p.ew("cast_bool({0})", a, dtype="bool")
    outs.append(p.ew("({0} + {1})", nb, gt, dtype="bool"))          # bool + is logical or
    want.append((av != 0) | (av > bv))
    outs.append(p.ew("({0} * {1})", nb, gt, dtype="bool"))          # bool * is logical and
    want.append((av != 0) & (av > bv))
    outs.append(p.reduce("sum", gt, dtype="int64"))
    want.append((av > bv).sum(-1))
    outs.append(p.reduce("max", a, dtype="int32"))
    want.append(av.max(-1))
    outs.append(p.reduce("sum", a, dtype="int32"))
    want.append(av.sum(-1, dtype=np.int32))
    got = compile_fused(p.spec(*outs))(1, 4, av, bv, fv)
    for node, g, w in zip(outs, got, want):
        assert g.dtype == w.dtype, p.nodes[node]
        np.testing.assert_array_equal(g, w, err_msg=str(p.nodes[node]))


# -- reductions and the programs the optimiser cares about ---------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_max_min_reductions(dtype):
    p = Prog(dtype)
    x = p.input()
    sq = p.ew("({0} * {1})", x, x)
    outs = (p.reduce("sum", sq), p.reduce("max", x), p.reduce("min", x))
    fn = compile_fused(p.spec(*outs))
    xv = rand((5, 33), dtype)
    xv[3, 7] = np.nan
    s, mx, mn = fn(5, 33, xv)
    np.testing.assert_allclose(s, (xv.astype(np.float64) ** 2).sum(-1), rtol=1e-5)
    np.testing.assert_array_equal(mx, xv.max(-1))       # NaN propagates as in NumPy
    np.testing.assert_array_equal(mn, xv.min(-1))
    assert np.isnan(mx[3]) and np.isnan(mn[3])


def test_reductions_of_col_row_and_scalar_values():
    p = Prog("float64")
    c, r, s = p.input(kind="col"), p.input(kind="row"), p.input(kind="scalar")
    outs = (p.reduce("sum", c), p.reduce("sum", r), p.reduce("max", s),
            p.reduce("max", p.ew("({0} * {1})", r, c)))
    cv, rv = rand(4, "float64"), rand(3, "float64")
    got = compile_fused(p.spec(*outs))(3, 4, cv, rv, np.array(2.5))
    want = (np.full(3, cv.sum()), rv * 4, np.full(3, 2.5), (rv[:, None] * cv).max(-1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def layernorm_prog(dtype="float32", eps=1e-5):
    p = Prog(dtype)
    x, res, g, b = p.input(), p.input(), p.input(kind="col"), p.input(kind="col")
    n = p._add(("dim", "C", dtype))
    mean = p.ew("({0} / {1})", p.reduce("sum", x), n)
    xc = p.ew("({0} - {1})", x, mean)
    var = p.ew("({0} / {1})", p.reduce("sum", p.ew("({0} * {1})", xc, xc)), n)
    y = p.ew("((({0} / sqrt(({1} + {2}))) * {3}) + {4})", xc, var, p.const(eps), g, b)
    return p.spec(p.ew("({0} + {1})", y, res), mean, var)


def layernorm_np(x, r, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b + r, mu[:, 0], var[:, 0]


def test_layernorm_program():
    fn = compile_fused(layernorm_prog())
    assert fn.layout == "rows"
    x, r = rand((6, 40)) * 2 + 1, rand((6, 40))
    g, b = rand(40, lo=0.5, hi=1.5), rand(40, lo=-0.5, hi=0.5)
    got = fn(6, 40, x, r, g, b)
    want = layernorm_np(*(a.astype(np.float64) for a in (x, r, g, b)))
    for gv, wv in zip(got, want):
        np.testing.assert_allclose(gv, wv, rtol=2e-5, atol=2e-5)


def gelu_prog():
    p = Prog("float32")
    x = p.input()
    cube = p.ew("({0} ** {1})", x, p.const(3))
    inner = p.ew("({0} * ({1} + ({2} * {3})))", p.const(0.7978845608), x, p.const(0.044715), cube)
    return p.spec(p.ew("(({0} * {1}) * ({2} + tanh({3})))", p.const(0.5), x, p.const(1.0), inner))


def gelu_np(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def test_gelu_program():
    fn = compile_fused(gelu_prog())
    assert fn.layout == "flat"
    x = rand((4, 50), lo=-6, hi=6)
    np.testing.assert_allclose(fn(4, 50, x)[0], gelu_np(x.astype(np.float64)), atol=5e-6,
                               rtol=2e-6)


def softmax_prog(dtype="float32"):
    p = Prog(dtype)
    x = p.input()
    e = p.ew("exp(({0} - {1}))", x, p.reduce("max", x))
    return p.spec(p.ew("({0} / {1})", e, p.reduce("sum", e)))


def test_softmax_program():
    fn = compile_fused(softmax_prog())
    x = rand((5, 17), lo=-30, hi=30)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(fn(5, 17, x)[0], e / e.sum(-1, keepdims=True), rtol=2e-6,
                               atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_long_row_sums_add_compensated_blocks(dtype):
    p = Prog(dtype)
    x = p.input()
    outs = (p.reduce("sum", p.ew("({0} * {1})", x, p.const(0.5))), p.reduce("max", x),
            p.reduce("sum", p.ew("cast_int32({0})", x, dtype="int32"), dtype="int32"))
    fn = compile_fused(p.spec(*outs))
    assert f"range(0, C, {codegen.SUM_BLOCK})" in fn.source
    big = np.finfo(dtype).max
    for C in (codegen.SUM_BLOCK, codegen.SUM_BLOCK + 1, 3 * codegen.SUM_BLOCK + 17):
        xv = (1 + 0.01 * RNG.random((6, C))).astype(dtype)
        xv[1, 5], xv[2, -1], xv[3, [0, -1]], xv[4, 7] = np.nan, np.inf, (np.inf, -np.inf), -np.inf
        xv[5, :3] = big   # the float32 total overflows, as NumPy's does
        with np.errstate(over="ignore", invalid="ignore"):
            s, mx, si = fn(6, C, xv)
            want = (xv * np.asarray(0.5, dtype)).sum(-1)
        np.testing.assert_array_equal(s[1:], want[1:])
        np.testing.assert_allclose(s[0], (xv[0].astype(np.float64) * 0.5).sum(),
                                   rtol=4 * np.finfo(dtype).eps)
        np.testing.assert_array_equal(mx, xv.max(-1))
        np.testing.assert_array_equal(si[0], xv[0].astype(np.int32).sum())


def test_expensive_values_are_kept_in_a_scratch_row_between_passes():
    # normalise tanh(x) over the row: tanh is computed once (pass 1), then loaded twice
    # NOTE: each reduction pass is written twice, a plain loop for rows up to SUM_BLOCK and
    # a blocked one for longer rows; only one of them runs.
    p = Prog("float64")
    x = p.input()
    t = p.ew("tanh({0})", x)
    n = p._add(("dim", "C", "float64"))
    mean = p.ew("({0} / {1})", p.reduce("sum", t), n)
    tc = p.ew("({0} - {1})", t, mean)
    var = p.ew("({0} / {1})", p.reduce("sum", p.ew("({0} * {1})", tc, tc)), n)
    fn = compile_fused(p.spec(p.ew("({0} / sqrt({1}))", tc, var), mean))
    body = fn.source.split("def kernel_serial")[1].split("@njit")[0]
    assert body.count("np.tanh(") == 2 and body.count(f"= st{t}[j]") == 3
    for R, C in ((70, 9), (1, 5), (3, 1), (2, 2 * codegen.SUM_BLOCK + 3)):
        xv = rand((R, C), "float64")
        y, m = fn(R, C, xv)
        tv = np.tanh(xv)
        np.testing.assert_allclose(m, tv.mean(-1), rtol=1e-12, atol=1e-15)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = (tv - tv.mean(-1, keepdims=True)) / tv.std(-1, keepdims=True)
        np.testing.assert_allclose(y, want, rtol=1e-9, atol=1e-9)
    soft = compile_fused(softmax_prog()).source.split("def kernel_serial")[1]
    assert soft.split("@njit")[0].count("exp_f32(") == 2
    # a square is cheaper to redo than to keep: no scratch row
    p = Prog("float64")
    xc = p.ew("({0} - {1})", p.input(), p.input(kind="row"))
    sq = p.ew("({0} ** {1})", xc, p.const(2.0))
    src, _ = codegen.generate_source(p.spec(p.ew("({0} / {1})", sq, p.reduce("sum", sq))))
    assert "np.empty" not in src


def test_float32_programs_compute_in_float32():
    """numba must not see a float64 temporary (Python float literals, widening helpers)."""
    for spec in (gelu_prog(), layernorm_prog(), softmax_prog()):
        fn = compile_fused(spec)
        cres = fn._serial.overloads[fn._sig]
        if getattr(cres, "type_annotation", None) is None:
            pytest.skip("kernel was loaded from a cache: no typing information")
        wide = {k: str(t) for k, t in cres.type_annotation.typemap.items()
                if k.startswith(("v", "acc")) and str(t) not in ("float32", "bool")}
        assert not wide, wide


@pytest.mark.parametrize("R,C", [(1, 9), (9, 1), (1, 1)])
def test_single_row_and_single_column(R, C):
    ln = compile_fused(layernorm_prog("float64"))
    x, r = rand((R, C), "float64"), rand((R, C), "float64")
    g, b = rand(C, "float64"), rand(C, "float64")
    for gv, wv in zip(ln(R, C, x, r, g, b), layernorm_np(x, r, g, b)):
        np.testing.assert_allclose(gv, wv, rtol=1e-9, atol=1e-12)
    gelu = compile_fused(gelu_prog())
    x32 = rand((R, C))
    np.testing.assert_allclose(gelu(R, C, x32)[0], gelu_np(x32.astype(np.float64)), atol=5e-6)


def test_parallel_path(monkeypatch):
    monkeypatch.setattr(fused_kernel, "PARALLEL_MIN_ELEMENTS", 64)
    gelu = compile_fused(gelu_prog())
    x = rand((1, 1000), lo=-5, hi=5)        # one row: the flat loop still goes parallel
    np.testing.assert_allclose(gelu(1, 1000, x)[0], gelu_np(x.astype(np.float64)), atol=5e-6)
    assert gelu.parallel_compiled and gelu.parallel_error is None
    ln = compile_fused(layernorm_prog())
    x, r, g, b = rand((16, 8)), rand((16, 8)), rand(8), rand(8)
    got = ln(16, 8, x, r, g, b)
    assert ln.parallel_compiled and ln.parallel_error is None
    for gv, wv in zip(got, layernorm_np(*(a.astype(np.float64) for a in (x, r, g, b)))):
        np.testing.assert_allclose(gv, wv, rtol=2e-5, atol=2e-5)
    # above the threshold both variants get timed; whichever runs, the results are the same
    monkeypatch.setattr(fused_kernel, "PROBE_EVERY", 2)
    for _ in range(6):
        for gv, wv in zip(ln(16, 8, x, r, g, b), got):
            np.testing.assert_array_equal(gv, wv)
    assert all(t > 0 for t in ln.timing.values())


def test_serial_path_below_threshold():
    fn = compile_fused(softmax_prog("float64"))
    fn(2, 3, rand((2, 3), "float64"))
    assert not fn.parallel_compiled


# -- calling convention ----------------------------------------------------------------------------
def test_out_buffers_and_argument_checks():
    fn = compile_fused(layernorm_prog())
    x, r, g, b = rand((3, 4)), rand((3, 4)), rand(4), rand(4)
    bufs = (np.empty((3, 4), np.float32), np.empty(3, np.float32), np.empty(3, np.float32))
    got = fn(3, 4, x, r, g, b, out=bufs)
    assert all(gv is bv for gv, bv in zip(got, bufs))
    for gv, wv in zip(got, fn(3, 4, x, r, g, b)):
        np.testing.assert_array_equal(gv, wv)
    with pytest.raises(ValueError, match=r"out\[0\] must be a writeable C-contiguous float32"):
        fn(3, 4, x, r, g, b, out=(np.empty((4, 3), np.float32), *bufs[1:]))
    with pytest.raises(TypeError, match="input 0 has dtype float64, expected float32"):
        fn(3, 4, x.astype(np.float64), r, g, b)
    # the loops are compiled with noalias arguments: an output may not overlap an array
    with pytest.raises(ValueError, match=r"out\[0\] overlaps input 1"):
        fn(3, 4, x, r, g, b, out=(r, *bufs[1:]))
    with pytest.raises(ValueError, match=r"out\[2\] overlaps out 1"):
        fn(3, 4, x, r, g, b, out=(bufs[0], bufs[1], bufs[1]))
    with pytest.raises(ValueError, match=r"input 2 \(col\) has shape \(5,\)"):
        fn(3, 4, x, r, rand(5), b)
    # a non-contiguous view is accepted (copied), as is a read-only array
    xt = np.asfortranarray(x)
    ro = r.copy()
    ro.setflags(write=False)
    np.testing.assert_array_equal(fn(3, 4, xt, ro, g, b)[0], got[0])


def test_in_process_cache_returns_same_callable():
    a, b = compile_fused(softmax_prog()), compile_fused(softmax_prog())
    assert a is b
    assert Path(a.module_path).is_file() and a.module_path.endswith(a.module_name + ".py")
    assert a.compile_seconds > 0


_CHILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {repo!r})
    from dualgrad.compiler import FusedSpec, compile_fused
    import numpy as np
    spec = FusedSpec(inputs=(("float32", "full"),),
                     nodes=(("in", 0), ("ew", "tanh({{0}})", (0,), "float32"),
                            ("reduce", "sum", 1, "float32")),
                     outputs=(2,))
    fn = compile_fused(spec)
    y = fn(2, 3, np.ones((2, 3), np.float32))[0]
    print(json.dumps(dict(hit=fn.cache_hit, secs=fn.compile_seconds, path=fn.module_path,
                          y=y.tolist())))
""")


def test_disk_cache_second_process_loads(tmp_path):
    env = dict(os.environ, DUALGRAD_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)   # NOTE: with it set (as CI does), numba's index goes there
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(repo=str(REPO))], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["hit"] is False and second["hit"] is True
    assert first["path"] == second["path"]
    assert Path(first["path"]).parent == tmp_path / "kernels"
    assert list((tmp_path / "kernels" / "__pycache__").glob("*.nbi"))
    np.testing.assert_allclose(second["y"], [3 * np.tanh(1.0)] * 2, rtol=1e-6)


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALGRAD_CACHE_DIR", str(tmp_path / "a"))
    assert kernel_cache.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("DUALGRAD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernel_cache.cache_dir() == tmp_path / "xdg" / "dualgrad"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert kernel_cache.cache_dir() == Path.home() / ".cache" / "dualgrad"


def test_module_name_is_stable_and_depends_on_dtype():
    s32, s64 = softmax_prog("float32"), softmax_prog("float64")
    src32, _ = codegen.generate_source(s32)
    assert codegen.module_name(s32, src32) == codegen.module_name(softmax_prog("float32"), src32)
    assert codegen.module_name(s64, codegen.generate_source(s64)[0]) != \
        codegen.module_name(s32, src32)


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("template,why", [
    ("floor({0})", "unknown function 'floor'"),
    ("({0} * 'a')", "only numeric literals are allowed"),
    ("({0} // {0})", "unsupported syntax BinOp"),
    ("({0} < {0} < {0})", "only single comparisons"),
    ("tanh({0}, {0})", "tanh takes 1 positional argument"),
    ("({0}", "cannot parse it"),
])
def test_unsupported_template_raises_codegen_error(template, why):
    p = Prog()
    x = p.input()
    with pytest.raises(CodegenError, match=why) as e:
        compile_fused(p.spec(p.ew(template, x)))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("nodes,outputs,match", [
    ((("in", 0), ("ew", "exp({0})", (1,), "float32")), (1,), "may only use nodes 0..0"),
    ((("in", 3),), (0,), "reads input 3"),
    ((("in", 0), ("reduce", "mean", 0, "float32")), (1,), "reduction 'mean'"),
    ((("in", 0),), (5,), "outputs"),
])
def test_malformed_spec_is_a_value_error(nodes, outputs, match):
    with pytest.raises(ValueError, match=match):
        FusedSpec(inputs=(("float32", "full"),), nodes=nodes, outputs=outputs)


def test_numba_failure_becomes_one_line_codegen_error(monkeypatch):
    def broken(template, args, consts, dtype, prefix, lines):
        lines.append(f"{prefix}0 = no_such_helper({args[0][0]})")
        return f"{prefix}0", dtype
    monkeypatch.setattr(codegen, "lower_template", broken)
    p = Prog()
    x = p.input()
    with pytest.raises(CodegenError, match="numba cannot compile .*no_such_helper") as e:
        compile_fused(p.spec(p.ew("sign(abs(exp({0})))", x)))
    assert "\n" not in str(e.value)
