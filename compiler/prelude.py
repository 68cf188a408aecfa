"""Scalar helpers that generated fused kernels call (imported by every generated module).

Each helper is written so that LLVM can vectorise a loop that calls it: plain arithmetic
and selects, no libm calls, no branches that survive if-conversion. numba has no SVML on
this project's machines, so `np.tanh` or `math.exp` in a loop is a scalar libm call (libm
tanhf is 5x slower than NumPy's SIMD tanh, expf 5x slower than np.exp); the float32
approximations here are the ones Eigen and XLA use (tanh, erf) and Cephes' expf, logf.

The approximations are compiled on their own with fastmath limited to FMA contraction and
reciprocals (`contract` alone makes the GELU loop 1.3x faster), never `reassoc`, which the
calling kernels use: it would let LLVM fold the Cody-Waite split `n*ln2_hi + n*ln2_lo` of
exp back into one rounded constant (measured: inf relative error). LLVM still inlines them
into the calling loop and vectorises them there (exp_f32: 0.65 ns/element vs 2.1 for libm).

Accuracy against the float64 reference (tests/compiler/test_codegen.py checks it):
`tanh_f32` within 3e-7, `erf_f32` 4e-7 absolute; `exp_f32` and `log_f32`
within 1.5 ulp on normal results, with inf/0/NaN where NumPy has them.

The generated modules bake these helpers into their cached machine code, so codegen.py
hashes this file's text into every kernel's cache key: editing this file recompiles.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.compiler import Compiler
from numba.extending import intrinsic

# -- float32 tanh: Eigen/XLA rational, clamp to +-7.9053 (where tanhf rounds to +-1) --------
_TANH_CLAMP = np.float32(7.90531110763549805)
_TA13, _TA11, _TA9, _TA7, _TA5, _TA3, _TA1 = (np.float32(v) for v in (
    -2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
    1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03))
_TB6, _TB4, _TB2, _TB0 = (np.float32(v) for v in (
    1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03))


_EXACT = dict(error_model="numpy", fastmath={"contract", "arcp", "nsz"}, nogil=True)


@njit(**_EXACT)
def tanh_f32(x):
    # NOTE: comparisons written so that NaN falls through both clamps unchanged.
    z = _TANH_CLAMP if x > _TANH_CLAMP else x
    z = -_TANH_CLAMP if z < -_TANH_CLAMP else z
    z2 = z * z
    p = z2 * _TA13 + _TA11
    p = z2 * p + _TA9
    p = z2 * p + _TA7
    p = z2 * p + _TA5
    p = z2 * p + _TA3
    p = z2 * p + _TA1
    q = z2 * _TB6 + _TB4
    q = z2 * q + _TB2
    q = z2 * q + _TB0
    return z * p / q


# -- float32 erf: Eigen/XLA rational on [-4, 4] (erf rounds to +-1 in float32 beyond) ---------
_ERF_CLAMP = np.float32(4.0)
_EA13, _EA11, _EA9, _EA7, _EA5, _EA3, _EA1 = (np.float32(v) for v in (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02))
_EB8, _EB6, _EB4, _EB2, _EB0 = (np.float32(v) for v in (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
    -1.42647390514189e-02))
_ONE32 = np.float32(1.0)
_HALF32 = np.float32(0.5)


@njit(**_EXACT)
def erf_f32(x):
    z = _ERF_CLAMP if x > _ERF_CLAMP else x
    z = -_ERF_CLAMP if z < -_ERF_CLAMP else z
    z2 = z * z
    p = z2 * _EA13 + _EA11
    p = z2 * p + _EA9
    p = z2 * p + _EA7
    p = z2 * p + _EA5
    p = z2 * p + _EA3
    p = z2 * p + _EA1
    q = z2 * _EB8 + _EB6
    q = z2 * q + _EB4
    q = z2 * q + _EB2
    q = z2 * q + _EB0
    r = z * p / q
    # NOTE: the rational overshoots 1 by ~1e-7 near |x| = 4; clamp like Eigen does.
    r = _ONE32 if r > _ONE32 else r
    return -_ONE32 if r < -_ONE32 else r


# -- float32 exp: Cody-Waite range reduction + Cephes' degree-6 polynomial ------------------
@intrinsic
def _i32_as_f32(typingctx, a):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


_LOG2E = np.float32(1.44269504088896341)
_LN2_HI, _LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
_XP5, _XP4, _XP3, _XP2, _XP1, _XP0 = (np.float32(v) for v in (
    1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
    5.0000001201e-1))
_EXP_HI, _EXP_LO = np.float32(88.8), np.float32(-104.0)   # beyond: inf / 0 (NaN kept)


@njit(**_EXACT)
def exp_f32(x):
    z = _EXP_HI if x > _EXP_HI else x
    z = _EXP_LO if z < _EXP_LO else z
    n = math.floor(z * _LOG2E + _HALF32)
    nf = np.float32(n)
    r = z - nf * _LN2_HI
    r = r - nf * _LN2_LO
    p = _XP5 * r + _XP4
    p = p * r + _XP3
    p = p * r + _XP2
    p = p * r + _XP1
    p = p * r + _XP0
    p = p * (r * r) + r + _ONE32
    # NOTE: 2**n as two normal powers of two, so that n in [-150, 128] gives subnormals and
    # overflow to inf exactly where expf does.
    n1 = np.int32(n) >> 1
    n2 = np.int32(n) - n1
    y = p * _i32_as_f32(np.int32((n1 + 127) << 23)) * _i32_as_f32(np.int32((n2 + 127) << 23))
    return x if x != x else y


# -- float32 log: exponent/mantissa split + Cephes' degree-9 polynomial -------------------------
@intrinsic
def _f32_as_i32(typingctx, a):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


_LP = tuple(np.float32(v) for v in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_LP0, _LP1, _LP2, _LP3, _LP4, _LP5, _LP6, _LP7, _LP8 = _LP
_SQRTHF = np.float32(0.707106781186547524)
_FLT_MIN = np.float32(1.17549435e-38)
_TWO23 = np.float32(8388608.0)
_ZERO32 = np.float32(0.0)
_INF32 = np.float32(np.inf)


@njit(**_EXACT)
def log_f32(x):
    sub = x < _FLT_MIN                        # subnormal (or <= 0: fixed up at the end)
    xs = x * _TWO23 if sub else x
    bits = _f32_as_i32(xs)
    e = ((bits >> 23) & 0xFF) - 126 - (23 if sub else 0)
    m = _i32_as_f32((bits & 0x007FFFFF) | 0x3F000000)   # in [0.5, 1)
    small = m < _SQRTHF
    e = e - 1 if small else e
    m = (m + m - _ONE32) if small else (m - _ONE32)
    ef = np.float32(e)
    z = m * m
    y = _LP0 * m + _LP1
    y = y * m + _LP2
    y = y * m + _LP3
    y = y * m + _LP4
    y = y * m + _LP5
    y = y * m + _LP6
    y = y * m + _LP7
    y = y * m + _LP8
    y = y * m * z
    y = y + _LN2_LO * ef
    y = y - _HALF32 * z
    r = (m + y) + _LN2_HI * ef
    # NOTE: NaN and +inf pass through, log(0) = -inf, log(x < 0) = NaN, as np.log.
    r = x if (x != x) | (x == _INF32) else r
    r = -_INF32 if x == _ZERO32 else r
    return np.float32(np.nan) if x < _ZERO32 else r


# -- IEEE-754-2019 maximum/minimum: NaN-propagating like np.maximum, and vectorisable ----------
# NOTE: a select-based `a if a > b else b` max-reduction is not recognised by LLVM's loop
# vectoriser without `nnan` (2.4 ms vs 0.40 ms on a 4096x1024 float32 row max); the
# llvm.maximum/llvm.minimum intrinsics are, and they propagate NaN as NumPy does.
def _float_intrinsic(llvm_name):
    def typer(typingctx, a, b):
        def codegen(context, builder, signature, args):
            t = args[0].type
            suffix = "f32" if t == ir.FloatType() else "f64"
            fnty = ir.FunctionType(t, [t, t])
            fn = cgutils.get_or_insert_function(builder.module, fnty, f"{llvm_name}.{suffix}")
            return builder.call(fn, args)
        return a(a, b), codegen
    typer.__name__ = llvm_name.replace(".", "_")
    return intrinsic(typer)


fmaximum = _float_intrinsic("llvm.maximum")
fminimum = _float_intrinsic("llvm.minimum")


# -- the kernels' array arguments never overlap: tell LLVM -------------------------------------
class NoAliasPipeline(Compiler):
    """numba's pipeline, with every pointer argument of the compiled function marked
    `noalias` (the flag numba's parallel back end sets on its own gufuncs).

    Without it LLVM must assume that any output may overlap any input, and a loop over many
    arrays needs more run-time overlap checks than it is willing to emit: it stays scalar.
    The LSTM cell's fused forward (7 inputs, 13 outputs, 32x64) ran in 86 µs unvectorised
    and in 7.5 µs with the flag. A generated kernel's outputs are fresh or the plan's own
    buffers (never live at the same time as the step's inputs), and `FusedKernel` refuses
    `out=` arrays that overlap an input or each other, so the promise holds.
    """

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        flags = flags.copy()
        flags.noalias = True
        super().__init__(typingctx, targetctx, library, args, return_type, flags, locals)


# -- compensated sums: the row total of a fused floating sum's block sums --------------------
# NOTE: compiled without 'reassoc' (see the module docstring): under it LLVM may fold the
# rounding error (s - t) + x to 0, which is exactly what this keeps.
@njit(**_EXACT)
def sum_step(s, c, x):
    """Neumaier's step: (s + x, c plus the rounding error of that addition)."""
    t = s + x
    err = (s - t) + x if abs(s) >= abs(x) else (x - t) + s
    return t, c + err


@njit(**_EXACT)
def sum_total(s, c):
    # NOTE: once the total is inf or NaN the compensation is NaN: the total alone is right.
    return s + c if math.isfinite(s) else s
