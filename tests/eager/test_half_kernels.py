"""float16 and bfloat16 kernels that round where torch's CPU kernels round, against real torch
bit for bit (not within a tolerance): addmm and baddbmm, batch_norm and instance_norm, eager
and inside compile(), on random inputs of several shapes (op_db's samples are in
tests/eager/test_opdb.py; these are more of them).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager
from dualgrad.eager.nn import half_conv

torch = pytest.importorskip("torch")

HALVES = ("float16", "bfloat16")


def _pair(rng, shape, dtype, low=-3.0):
    """The same random tensor in torch and in dualgrad, of a half dtype."""
    t = torch.from_numpy(rng.uniform(low, 3.0, shape).astype(np.float32)).to(getattr(torch, dtype))
    return t, eager.tensor(t.float().numpy(), dtype=getattr(eager, dtype))


def _bits(ours, ref):
    """dualgrad's result equals torch's exactly (same dtype, same values)."""
    assert str(ours.dtype) == str(ref.dtype)
    a = np.asarray(ours.detach()).astype(np.float32)
    b = ref.detach().float().numpy()
    mism = np.flatnonzero((a != b) & ~(np.isnan(a) & np.isnan(b)))
    assert mism.size == 0, f"{mism.size} of {a.size} differ, e.g. {a.flat[mism[0]]} != {b.flat[mism[0]]}"


def _both_modes(fn, *args):
    """fn's result eagerly and compiled (the tensors as the compiled function's arguments)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args), compiler.compile(fn)(*args)


@pytest.mark.parametrize("dtype", HALVES)
def test_addmm_and_baddbmm_round_once(dtype):
    rng = np.random.default_rng(0)
    for n, k, m in ((2, 3, 4), (5, 7, 3), (1, 16, 9)):
        (tc, c), (ta, a), (tb, b) = (_pair(rng, s, dtype) for s in ((n, m), (n, k), (k, m)))
        ref = torch.addmm(tc, ta, tb, beta=0.2, alpha=0.6)
        for out in _both_modes(lambda c, a, b: eager.addmm(c, a, b, beta=0.2, alpha=0.6), c, a, b):
            _bits(out, ref)
        (tc, c), (ta, a), (tb, b) = (_pair(rng, s, dtype) for s in ((2, n, m), (2, n, k),
                                                                    (2, k, m)))
        ref = torch.baddbmm(tc, ta, tb, beta=0.2, alpha=0.6)
        _bits(eager.baddbmm(c, a, b, beta=0.2, alpha=0.6), ref)


SHAPES = ((5, 5, 5), (3, 2, 4), (4, 3), (2, 3, 4, 5), (8, 16, 3), (2, 3, 40))


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("training", (True, False))
def test_batch_norm_rounds_as_torch(dtype, training):
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        c = shape[1]
        (tx, x), (tw, w), (tb, b), (tm, m) = (_pair(rng, s, dtype) for s in (shape, (c,), (c,), (c,)))
        tv, v = _pair(rng, (c,), dtype, low=0.1)
        ref = torch.nn.functional.batch_norm(tx, tm.clone(), tv.clone(), tw, tb,
                                             training=training, eps=1e-5)
        out, compiled = _both_modes(lambda x, m, v, w, b: eager.nn.functional.batch_norm(
            x, m, v, w, b, training=training, eps=1e-5), x, m * 1, v * 1, w, b)
        _bits(out, ref)
        _bits(compiled, ref)
        ref = torch.nn.functional.batch_norm(tx, tm, tv, training=training, eps=0.6)
        _bits(eager.nn.functional.batch_norm(x, m * 1, v * 1, training=training, eps=0.6), ref)


@pytest.mark.parametrize("dtype", HALVES)
def test_instance_norm_rounds_as_torch(dtype):
    rng = np.random.default_rng(2)
    for shape in ((5, 5, 5), (2, 3, 4, 5), (3, 2, 40)):
        c = shape[1]
        (tx, x), (tw, w), (tb, b), (tm, m) = (_pair(rng, s, dtype) for s in (shape, (c,), (c,), (c,)))
        tv, v = _pair(rng, (c,), dtype, low=0.1)
        for stats in (True, False):
            ref = torch.nn.functional.instance_norm(tx, tm.clone(), tv.clone(), tw, tb,
                                                    use_input_stats=stats)
            _bits(eager.nn.functional.instance_norm(x, m * 1, v * 1, w, b, use_input_stats=stats),
                  ref)
        ref = torch.nn.functional.instance_norm(tx)
        for out in _both_modes(eager.nn.functional.instance_norm, x):
            _bits(out, ref)


@pytest.mark.parametrize("dtype", HALVES)
def test_adaptive_avg_pool3d_sums_in_its_dtype(dtype):
    rng = np.random.default_rng(3)
    for shape, size in (((2, 3, 8, 8, 8), (5, 7, 4)), ((1, 2, 9, 5, 7), (4, None, 3)),
                        ((2, 4, 3, 7), (1, 1, 1)), ((1, 2, 6, 6, 6), 4)):
        tx, x = _pair(rng, shape, dtype)
        ref = torch.nn.functional.adaptive_avg_pool3d(tx, size)
        for out in _both_modes(lambda x: eager.nn.functional.adaptive_avg_pool3d(x, size), x):
            _bits(out, ref)


def test_half_conv_reads_the_cpu_as_torch():
    """eager/nn/half_conv.py chooses torch's slow path where oneDNN lacks the half dtype on
    this CPU: its reading of the CPU must be torch's (the project's machines have had
    bfloat16 without float16, AVX-512, and neither, AVX2 only)."""
    assert half_conv.onednn_supports("float16") == torch.ops.mkldnn._is_mkldnn_fp16_supported()
    assert half_conv.onednn_supports("bfloat16") == torch.ops.mkldnn._is_mkldnn_bf16_supported()


CONV_T = (  # (input shape, weight shape, keyword arguments)
    ((2, 3, 5), (3, 2, 3), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 5, 6), (4, 3, 3, 3), dict(stride=(2, 1), padding=(2, 0), output_padding=(1, 0))),
    ((2, 4, 4, 4), (4, 2, 2, 3), dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3),
                                      groups=2, dilation=(4, 4))),
    ((1, 3, 4, 4, 4), (3, 2, 3, 3, 3), dict(stride=2, padding=2, output_padding=1)),
    ((1, 2, 3, 4, 3), (2, 2, 2, 3, 2), dict(stride=(1, 2, 1), output_padding=(0, 1, 2),
                                            dilation=(1, 1, 3))),
)


@pytest.mark.parametrize("dtype", HALVES)
def test_conv_transpose_rounds_as_torch(dtype):
    """A half dtype oneDNN lacks on this CPU (float16 on the project's machines, bfloat16
    too without AVX-512), and any with an output_padding >= its stride, take torch's slow
    path, bit for bit; otherwise oneDNN's float32, within an ulp."""
    rng = np.random.default_rng(4)
    for xs, ws, kw in CONV_T:
        name = f"conv_transpose{len(xs) - 2}d"
        (tx, x), (tw, w), (tb, b) = (_pair(rng, s, dtype) for s in (xs, ws, (ws[1] * kw.get(
            "groups", 1),)))
        ref = getattr(torch.nn.functional, name)(tx, tw, tb, **kw)
        fn = getattr(eager.nn.functional, name)
        nd = len(xs) - 2
        op, st = (np.broadcast_to(kw.get(k, d), nd) for k, d in (("output_padding", 0),
                                                                 ("stride", 1)))
        slow = not half_conv.onednn_supports(dtype) or any(op >= st)
        for out in _both_modes(lambda x, w, b: fn(x, w, b, **kw), x, w, b):
            if slow:
                _bits(out, ref)
            else:
                np.testing.assert_allclose(np.asarray(out).astype(np.float32),
                                           ref.float().numpy(), rtol=1e-2, atol=1e-2)


RESAMPLE = (  # (mode, input shape, keyword arguments of interpolate)
    ("linear", (2, 3, 5), dict(size=7, align_corners=True)),
    ("linear", (1, 2, 9), dict(scale_factor=0.6)),
    ("trilinear", (2, 3, 4, 3, 5), dict(size=(5, 4, 6), align_corners=True)),
    ("trilinear", (1, 2, 3, 4, 4), dict(scale_factor=1.7)),
    ("bicubic", (2, 3, 5, 4), dict(size=(7, 6), align_corners=False)),
    ("bicubic", (1, 2, 4, 6), dict(scale_factor=1.5, align_corners=True)),
    ("area", (2, 3, 4, 5, 6), dict(size=(3, 6, 4))),
)


@pytest.mark.parametrize("dtype", HALVES)
def test_interpolate_rounds_as_torch(dtype):
    """torch's CPU resampling of a half input: the weights rounded to its dtype (linear,
    trilinear, bicubic), the sums in float32, rounded once; area of a 5-d input is
    adaptive_avg_pool3d, summed in the dtype. Bit for bit, eagerly and compiled."""
    rng = np.random.default_rng(5)
    for mode, shape, kw in RESAMPLE:
        tx, x = _pair(rng, shape, dtype)
        ref = torch.nn.functional.interpolate(tx, mode=mode, **kw)
        for out in _both_modes(lambda x: eager.nn.functional.interpolate(x, mode=mode, **kw), x):
            _bits(out, ref)


@pytest.mark.parametrize("dtype", HALVES)
def test_bilinear_contracts_in_two_rounded_steps(dtype):
    """F.bilinear: over the first input's features, rounded, then the second's, rounded, then
    the bias (torch's _trilinear)."""
    rng = np.random.default_rng(6)
    for n, i, j, o in ((8, 3, 4, 5), (2, 8, 8, 8), (5, 1, 6, 2)):
        (t1, x1), (t2, x2), (tw, w), (tb, b) = (_pair(rng, s, dtype) for s in
                                                ((n, i), (n, j), (o, i, j), (o,)))
        _bits(eager.nn.functional.bilinear(x1, x2, w, b),
              torch.nn.functional.bilinear(t1, t2, tw, tb))
        _bits(eager.nn.functional.bilinear(x1, x2, w), torch.nn.functional.bilinear(t1, t2, tw))


@pytest.mark.parametrize("dtype", HALVES)
def test_index_put_accumulates_in_index_order(dtype):
    """index_put(accumulate=True) of repeated indices: each value added into
    self in turn, every addition rounded (a sum first and one addition differs)."""
    rng = np.random.default_rng(7)
    for rows, k in ((5, 12), (3, 40)):
        tx, x = _pair(rng, (rows, 4), dtype, low=-200.0)
        tv, v = _pair(rng, (k, 4), dtype)
        idx = rng.integers(0, rows, k)
        ref = tx.index_put((torch.from_numpy(idx),), tv, accumulate=True)
        _bits(x.index_put((eager.tensor(idx),), v, accumulate=True), ref)


@pytest.mark.parametrize("dtype", HALVES)
def test_conv3d_sums_in_float32_once(dtype):
    """conv3d of a half input (depth slices summed in the dtype were off by up to 1.0 in
    bfloat16): every product of an output in float32, bias included, rounded once, within
    torch's tolerance of its kernel (oneDNN's summation order)."""
    rng = np.random.default_rng(8)
    cases = (((1, 1, 10, 11, 12), (1, 1, 4, 4, 4), dict(padding="same", dilation=3)),
             ((3, 9, 3, 1, 9), (3, 3, 3, 1, 9), dict(groups=3)),
             ((2, 2, 5, 5, 5), (4, 2, 3, 3, 3), dict(stride=2, padding=1)))
    for xs, ws, kw in cases:
        (tx, x), (tw, w), (tb, b) = (_pair(rng, s, dtype) for s in (xs, ws, (ws[0],)))
        ref = torch.nn.functional.conv3d(tx, tw, tb, **kw)
        tol = 1e-3 if dtype == "float16" else 1e-2
        for out in _both_modes(lambda x, w, b: eager.nn.functional.conv3d(x, w, b, **kw),
                               x, w, b):
            np.testing.assert_allclose(np.asarray(out.detach()).astype(np.float32),
                                       ref.float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", HALVES + ("float32",))
def test_var_and_std_round_once_from_float64(dtype):
    """torch's var and std accumulate in float64 (Welford) and round once, whatever the dtype:
    a correction applied after rounding, or a float32 mean, is a last bit off."""
    rng = np.random.default_rng(3)
    for shape, dim in (((2000, 7), 1), ((50, 300), 0), ((4, 5, 6), (0, 2)), ((300,), None)):
        tx, x = _pair(rng, shape, "float32")
        tx, x = tx.to(getattr(torch, dtype)), x.to(getattr(eager, dtype))
        for c in (0, 1, 1.3):
            _bits(eager.var(x, dim, correction=c), torch.var(tx, dim, correction=c))
            _bits(eager.std(x, dim, correction=c), torch.std(tx, dim, correction=c))
        _bits(eager.var_mean(x, dim)[0], torch.var_mean(tx, dim)[0])


@pytest.mark.parametrize("dtype", HALVES + ("float32", "float64", "int64", "int16"))
def test_linspace_is_torchs_to_the_bit(dtype):
    """start + step * i over the first half, end - step * (steps - 1 - i) over the rest: fused
    multiply-adds in float32 / float64 (integers: float64, truncated), every step rounded in
    float16 and bfloat16 (i too, which bfloat16 holds exactly only to 256)."""
    rng = np.random.default_rng(4)
    for trial in range(40):
        a, b = rng.uniform(-300, 300, 2) if trial % 2 else sorted(rng.uniform(-20, 20, 2))
        if dtype.startswith("int"):
            a, b = int(a), int(b)
        n = int(rng.integers(1, 3000))
        ref = torch.linspace(a, b, n, dtype=getattr(torch, dtype))
        ours = eager.linspace(a, b, n, dtype=getattr(eager, dtype))
        np.testing.assert_array_equal(np.asarray(ours).astype(np.float64), ref.double().numpy())


@pytest.mark.parametrize("dtype", HALVES + ("float32", "float64"))
def test_histc_bins_as_torch(dtype):
    """A value's bin is (x - lo) * bins / (hi - lo) in the input's dtype, lo and hi the ends of
    linspace's edges: in float16 a value on an edge can land in the bin below."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        tx, x = _pair(rng, (int(rng.integers(0, 300)),), "float32")
        tx, x = (tx * 3).to(getattr(torch, dtype)), (x * 3).to(getattr(eager, dtype))
        bins = int(rng.integers(1, 200))
        lo, hi = (0, 0) if trial % 3 == 0 else sorted(rng.uniform(-10, 10, 2).round(1))
        _bits(eager.histc(x, bins, lo, hi), torch.histc(tx, bins, lo, hi))
    with pytest.raises(RuntimeError, match=r"range of \[.*nan.*\] is not finite"):
        eager.histc(eager.tensor([1.0, float("nan")], dtype=getattr(eager, dtype)))


@pytest.mark.parametrize("dtype", HALVES + ("float32", "float64"))
def test_floor_divide_is_torchs_exact_floor(dtype):
    """torch's // is the floor of the exact quotient (fmod-based, Python's: 1 // 0.1 is 9),
    each step rounded in float16 / bfloat16, not floor of the rounded quotient."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal(20000) * 10
    b = rng.standard_normal(20000) * 3
    b[:4] = 0.0
    a[:2] = 0.0
    ta, tb = (torch.from_numpy(v).to(getattr(torch, dtype)) for v in (a, b))
    ea, eb = (eager.tensor(v.double().numpy()).to(getattr(eager, dtype)) for v in (ta, tb))
    want = torch.floor_divide(ta, tb)
    _bits(eager.floor_divide(ea, eb), want)
    _bits(eager.div(ea, eb, rounding_mode="floor"), want)
    for got in _both_modes(lambda x, y: x // y, ea, eb):
        _bits(got, want)


@pytest.mark.parametrize("dtype", HALVES + ("float32",))
@pytest.mark.parametrize("reduce", ("mean", "prod"))
def test_index_reduce_accumulates_in_index_order(dtype, reduce):
    """torch adds (multiplies) each source slice into self in index order, every step rounded
    in the dtype, then divides by the count; a product that overflows is inf, not NaN."""
    rng = np.random.default_rng(7)
    for include_self in (True, False):
        tx, x = _pair(rng, (5, 6, 4), dtype)
        ts, s = _pair(rng, (5, 12, 4), dtype)
        if reduce == "prod":
            tx, x, ts, s = tx * 40, x * 40, ts * 40, s * 40
        index = rng.integers(0, 6, 12)
        want = tx.index_reduce(1, torch.from_numpy(index), ts, reduce, include_self=include_self)
        _bits(x.index_reduce(1, eager.tensor(index), s, reduce, include_self=include_self), want)


@pytest.mark.parametrize("dtype", HALVES)
def test_multi_dot_vecdot_and_einsum_round_as_torch(dtype):
    """multi_dot multiplies in torch's matrix-chain order (its three-matrix rule on ties),
    each product rounded; vecdot rounds the products, then sums in float32; a two-operand
    einsum is one bmm, its products summed in float32 and rounded once."""
    rng = np.random.default_rng(8)
    for trial in range(40):
        n = int(rng.integers(2, 7))
        dims = rng.integers(1, 7, n + 1)
        pairs = [_pair(rng, (dims[i], dims[i + 1]), dtype) for i in range(n)]
        want = torch.linalg.multi_dot([t for t, _ in pairs])
        _bits(eager.linalg.multi_dot([e for _, e in pairs]), want)
    for shape, dim in (((5, 3), 0), ((3, 40), -1), ((2, 3, 9), 1)):
        (ta, a), (tb, b) = _pair(rng, shape, dtype), _pair(rng, shape, dtype)
        _bits(eager.linalg.vecdot(a, b, dim=dim), torch.linalg.vecdot(ta, tb, dim=dim))
    for eq, sa, sb in (("aij,ajk->aik", (2, 3, 4), (2, 4, 5)), ("aij,jk->aik", (1, 3, 4), (4, 4)),
                       ("ij,j->i", (4, 9), (9,))):
        (ta, a), (tb, b) = _pair(rng, sa, dtype), _pair(rng, sb, dtype)
        for got in _both_modes(lambda x, y: eager.einsum(eq, x, y), a, b):
            _bits(got, torch.einsum(eq, ta, tb))
@pytest.mark.parametrize("dtype", HALVES)
def test_scalar_multiply_and_divide_read_the_scalar_in_float32(dtype):
    """t * s, s * t and t / s of a half tensor by a Python number: torch's kernels read s in
    float32 and round the result once (6.2832 * t is not float16(6.2832) * t); t + s rounds
    s to the dtype first, as torch's add does."""
    rng = np.random.default_rng(9)
    tx, x = _pair(rng, (400,), dtype, low=-10.0)
    for s in (6.283185307179586, 0.1, 1 / 3, 3001):
        for f in (lambda t: t * s, lambda t: s * t, lambda t: t / s, lambda t: t + s,
                  lambda t: t - s):
            for out in _both_modes(f, x):
                _bits(out, f(tx))


@pytest.mark.parametrize("dtype", HALVES)
def test_log_softmax_rounds_per_dim_as_torch(dtype):
    """torch's half log_softmax over the last dim rounds the sum of exponentials and its log
    to the dtype before the subtraction; over another dim it rounds once."""
    rng = np.random.default_rng(10)
    for shape, dim in (((30, 5), 1), ((200, 4), -1), ((6,), 0), ((3, 5, 2, 3), 1),
                       ((30, 5, 1), 1), ((5, 30), 0)):
        tx, x = _pair(rng, shape, dtype)
        for out in _both_modes(lambda x: eager.log_softmax(x, dim), x):
            _bits(out, torch.log_softmax(tx, dim))


@pytest.mark.parametrize("dtype", HALVES)
def test_linear_with_a_bias_rounds_once_as_addmm(dtype):
    rng = np.random.default_rng(11)
    for xs, (o, i) in (((8, 3), (4, 3)), ((30, 7), (5, 7)), ((3,), (4, 3)), ((2, 5, 3), (4, 3))):
        (tx, x), (tw, w), (tb, b) = (_pair(rng, s, dtype) for s in (xs, (o, i), (o,)))
        for out in _both_modes(lambda x, w, b: eager.nn.functional.linear(x, w, b), x, w, b):
            _bits(out, torch.nn.functional.linear(tx, tw, tb))


def _class_cases(rng, dtype):
    """(logits, class-index target, probability target, weight) pairs of random draws, in
    torch and dualgrad: 2-d, 1-d and K-dimensional, some targets ignore_index (-100)."""
    for shape in ((int(rng.integers(1, 40)), 5), (300, 4), (6,), (3, 5, 2, 3), (2, 4, 3, 2, 2)):
        c = shape[1] if len(shape) > 1 else shape[0]
        tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
        t = rng.integers(0, c, tshape)
        t = np.where(rng.random(tshape) < 0.2, -100, t) if shape[0] > 6 else t
        p = rng.dirichlet(np.ones(c), size=tshape or None).astype(np.float32)
        p = np.moveaxis(p, -1, 1) if len(shape) > 1 else p
        tp = torch.from_numpy(p).to(getattr(torch, dtype))
        yield (_pair(rng, shape, dtype), (torch.from_numpy(t), eager.tensor(t)),
               (tp, eager.tensor(tp.float().numpy(), dtype=getattr(eager, dtype))),
               _pair(rng, (c,), dtype, low=0.2))


@pytest.mark.parametrize("dtype", HALVES)
def test_class_losses_round_as_torch(dtype):
    """cross_entropy and nll_loss of half inputs, bit for bit: log_softmax rounded to the
    dtype, nll_loss's sums in the dtype into aten's cascaded partial sums, label smoothing
    and probability targets in aten's order of operations."""
    rng = np.random.default_rng(12)
    F, TF = eager.nn.functional, torch.nn.functional
    for (tx, x), (tt, t), (tp, p), (tw, w) in _class_cases(rng, dtype):
        for red in ("mean", "sum", "none"):
            for kw in ({}, {"label_smoothing": 0.15}):
                for tkw, ekw in (({}, {}), ({"weight": tw}, {"weight": w})):
                    for target, et in ((tt, t), (tp, p)):
                        ref = TF.cross_entropy(tx, target, reduction=red, **kw, **tkw)
                        _bits(F.cross_entropy(x, et, reduction=red, **kw, **ekw), ref)
                ref = TF.nll_loss(tx, tt, reduction=red, **tkw)
                _bits(F.nll_loss(x, t, reduction=red, **ekw), ref)
        ref = TF.cross_entropy(tx, tt, weight=tw, label_smoothing=0.1)
        for out in _both_modes(lambda x, t, w: F.cross_entropy(x, t, weight=w,
                                                               label_smoothing=0.1), x, t, w):
            _bits(out, ref)


@pytest.mark.parametrize("dtype", HALVES)
def test_elementwise_losses_round_as_torch(dtype):
    """binary_cross_entropy_with_logits ((1 - t) x - log_sigmoid(x), times the weights),
    huber_loss (computed in float32, delta too, rounded once) and poisson_nll_loss
    (2 * pi * t read in float32) of half inputs, bit for bit."""
    rng = np.random.default_rng(13)
    F, TF = eager.nn.functional, torch.nn.functional
    for shape in ((5, 5), (4, 3, 7)):
        (tx, x), (tw, w), (tq, q) = (_pair(rng, s, dtype) for s in (shape, shape, shape[-1:]))
        tt, t = _pair(rng, shape, dtype, low=0.0)
        ty, y = _pair(rng, shape, dtype, low=0.5)
        for red in ("none", "mean", "sum"):
            _bits(F.binary_cross_entropy_with_logits(x, t, reduction=red),
                  TF.binary_cross_entropy_with_logits(tx, tt, reduction=red))
            _bits(F.binary_cross_entropy_with_logits(x, t, w, reduction=red, pos_weight=q),
                  TF.binary_cross_entropy_with_logits(tx, tt, tw, reduction=red, pos_weight=tq))
            for delta in (0.3, 1.0, 2.2):
                _bits(F.huber_loss(x, w, reduction=red, delta=delta),
                      TF.huber_loss(tx, tw, reduction=red, delta=delta))
            for log_input in (True, False):
                a, ta = (x, tx) if log_input else (y, ty)
                _bits(F.poisson_nll_loss(a, t * 9, log_input=log_input, full=True, reduction=red),
                      TF.poisson_nll_loss(ta, tt * 9, log_input=log_input, full=True,
                                          reduction=red))


@pytest.mark.parametrize("dtype", HALVES)
def test_var_and_std_round_once_as_torch(dtype):
    """torch's var and std of a half input accumulate in double and round once (a float16
    variance times n / (n - 1) rounded twice)."""
    rng = np.random.default_rng(14)
    for shape, dim in (((5, 5), 1), ((40, 7), 0), ((3, 4, 5), (0, 2)), ((100,), None)):
        tx, x = _pair(rng, shape, dtype, low=-9.0)
        for name in ("var", "std"):
            for kw in ({}, {"correction": 0}, {"correction": 2}):
                for out in _both_modes(lambda x: getattr(eager, name)(x, dim, **kw), x):
                    _bits(out, getattr(torch, name)(tx, dim, **kw))
