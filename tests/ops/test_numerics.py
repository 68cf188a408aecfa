"""Numerics at the edges, as exact as PyTorch's: eager, graph and the fused graph agree."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager, graph, ops
import dualgrad.eager.nn.functional as F


def both(fn, *arrays):
    """fn on eager tensors, and on graph placeholders run optimised (fused) and unoptimised."""
    return [fn(*[eager.tensor(a) for a in arrays]).numpy(),
            *(run() for run in graph_runs(fn, arrays))]


def graph_runs(fn, arrays):
    """fn built on graph placeholders: a run optimised (fused) and one unoptimised."""
    g = graph.Graph()
    with g.as_default():
        phs = [graph.placeholder(a.dtype, a.shape) for a in arrays]
        y = fn(*phs)

    def run(opt):
        with graph.Session(g, optimize=opt) as s:
            return s.run(y, dict(zip(phs, arrays)))
    return [lambda: run(True), lambda: run(False)]


def lsm_ref(x):
    x = x.astype(np.float64)
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.mark.parametrize("offset", [1e4, 1e7])
def test_log_softmax_exact_at_large_logits(offset):
    x = (np.array([[0.0, 1.0, -2.0, 0.5]], np.float32) * 1 + np.float32(offset))
    for got in both(lambda t: F.log_softmax(t, dim=-1), x):
        np.testing.assert_allclose(got, lsm_ref(x), atol=1e-6)


def test_cross_entropy_with_masked_logit_is_finite():
    logits = np.array([[1.0, -np.inf, 2.0], [0.0, 3.0, -np.inf]], np.float32)
    target = np.array([0, 1])
    want = -lsm_ref(np.where(np.isinf(logits), -1e30, logits))[[0, 1], target].mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for got in both(lambda a, t: F.cross_entropy(a, t), logits, target):
            assert np.isfinite(got)
            np.testing.assert_allclose(got, want, rtol=1e-6)
        w = eager.tensor(logits, requires_grad=True)
        F.cross_entropy(w, eager.tensor(target)).backward()
    assert np.isfinite(w.grad.numpy()).all() and w.grad.numpy()[0, 1] == 0


def test_logsumexp_infinite_rows():
    x = np.array([[1.0, np.inf, 2.0], [-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0]],
                 np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for got in both(lambda t: eager.logsumexp(t, dim=-1) if isinstance(t, eager.Tensor)
                        else graph.reduce_logsumexp(t, axis=-1), x):
            assert got[0] == np.inf and got[1] == -np.inf
            np.testing.assert_allclose(got[2], np.log(np.exp([1.0, 2.0, 3.0]).sum()), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_relative_precision_for_negative_inputs(dtype):
    x = np.array([-20.0, -80.0, 0.0, 3.0, 40.0], dtype)
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    for got in both(lambda t: eager.sigmoid(t) if isinstance(t, eager.Tensor)
                    else graph.sigmoid(t) * 1.0, x):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    p = eager.sigmoid(eager.tensor(np.array([-20.0], dtype)))
    bce = F.binary_cross_entropy(p, eager.tensor(np.ones(1, dtype)))
    assert abs(float(bce) - 20.0) < 1e-4


def test_norm_gradient_at_zero_is_zero():
    x = eager.zeros(3, requires_grad=True)
    n = x.norm()
    n.backward()
    assert float(n) == 0.0 and x.grad.numpy().tolist() == [0.0, 0.0, 0.0]
    y = eager.tensor([3.0, 4.0], requires_grad=True)
    y.norm().backward()
    np.testing.assert_allclose(y.grad.numpy(), [0.6, 0.8], rtol=1e-6)


LONG_ROW = 1 << 20
LONG_ROW_CASES = {
    "sum": (lambda t: graph.reduce_sum(t * 1.5, axis=-1), lambda x: (x * 1.5).sum(-1)),
    "mean": (lambda t: graph.reduce_mean(t * 2.0, axis=-1), lambda x: (x * 2.0).mean(-1)),
    "softmax": (lambda t: graph.nn.softmax(t, axis=-1),
                lambda x: np.exp(x - x.max(-1, keepdims=True))
                / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "layer_norm": (lambda t: graph.nn.layer_norm(t),
                   lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True)
                                                                      + 1e-5)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(LONG_ROW_CASES))
def test_reductions_over_long_rows_are_as_exact_as_numpy_fused_or_not(case, dtype):
    # NOTE: near-constant rows are the hard case for a running sum: every addition rounds
    # the same way (main's fused float32 sum was off by 4e-6 here, layer_norm by 4e-4).
    fn, ref = LONG_ROW_CASES[case]
    x = (1.0 + 0.01 * np.random.default_rng(0).random((2, LONG_ROW))).astype(dtype)
    g = graph.Graph()
    with g.as_default():
        p = graph.placeholder(dtype, (None, LONG_ROW))
        y = fn(p)
    with graph.Session(g, optimize=True) as s:
        got = s.run(y, {p: x})
        assert s.last_report["fuse"].details["groups"] >= 1
    with graph.Session(g, optimize=False) as s:
        unfused = s.run(y, {p: x})
    want = ref(x.astype(np.float64))

    def err(a):
        return np.abs(a - want).max() / np.abs(want).max()
    assert err(got) <= 2 * err(ref(x)) + 4 * np.finfo(dtype).eps
    assert err(unfused) <= 2 * err(ref(x)) + 4 * np.finfo(dtype).eps


def all_engines(fn, *arrays):
    """fn in eager, graph (optimised and not) and compile(): each result, or the exception."""
    runs = [lambda: fn(*[eager.tensor(a) for a in arrays]).numpy(),
            lambda: compiler.compile(fn)(*[eager.tensor(a) for a in arrays]).numpy(),
            *graph_runs(fn, arrays)]
    return [_outcome(run) for run in runs]


def _outcome(run):
    try:
        return run()
    except Exception as e:  # noqa: BLE001 - the test compares what each engine does
        return e


@pytest.mark.parametrize("shape, axis", [((3, 0), -1), ((0, 3), 0), ((2, 0, 4), 1)])
def test_softmax_over_an_empty_axis_is_empty_in_every_engine(shape, axis):
    x = np.zeros(shape, np.float32)
    reduced = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NOTE: NumPy warns on log(0)
        for fn in (lambda t: F.softmax(t, dim=axis), lambda t: F.log_softmax(t, dim=axis)):
            for got in all_engines(lambda t: fn(t) * 2.0, x):
                assert isinstance(got, np.ndarray) and got.shape == shape, got
        for got in all_engines(lambda t: eager.logsumexp(t, dim=axis) * 2.0, x):
            np.testing.assert_array_equal(got, np.full(reduced, -np.inf))


def test_max_over_an_empty_axis_as_each_reference_fused_or_not():
    x = np.zeros((3, 0), np.float32)
    got = all_engines(lambda t: t.amax(dim=-1, keepdim=True) * 2.0
                      if isinstance(t, eager.Tensor)
                      else graph.reduce_max(t, axis=-1, keepdims=True) * 2.0, x)
    # NOTE: eager and compile() refuse it before the kernel, in torch's words; graphs give
    # TF's -inf (the identity of max), optimised or not
    for e in got[:2]:
        assert isinstance(e, Exception) and "reduction dim 1 to have non-zero size" in str(e), e
    for g in got[2:]:
        np.testing.assert_array_equal(g, np.full((3, 1), -np.inf, np.float32))


def test_integer_to_a_negative_power_as_torch_in_every_engine():
    ints = np.array([1, 2, 3], np.int32)
    for fn in (lambda t: (t + 1) ** -1, lambda t: (t * 2) ** -2, lambda t: t ** -1):
        for x in (ints, ints[:0]):
            for got in all_engines(fn, x):
                assert isinstance(got, Exception), got
                assert "Integers to negative integer powers are not allowed" in str(got)
    # NOTE: a tensor exponent with negative entries computes, as torch (1 / x**k truncated);
    # TF raises for it (docs/tf1-compat.md, Known differences)
    exps = np.array([2, -1, 0, -3, -2], np.int32)
    base = np.array([3, 1, 5, -1, 2], np.int32)
    for got in all_engines(lambda t, e: (t * 1) ** e, base, exps):
        np.testing.assert_array_equal(got, [9, 1, 1, -1, 0])
    for got in all_engines(lambda t: (t + 1) ** 3 + (t * 2) ** 5, ints):
        np.testing.assert_array_equal(got, (ints + 1) ** 3 + (ints * 2) ** 5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_deep_negative_tail_in_every_engine(dtype):
    x = np.array([-20.0, -100.0, -30.0], dtype)
    want = np.exp(x.astype(np.float64)) / (1 + np.exp(x.astype(np.float64)))
    tiny = np.finfo(dtype).smallest_subnormal   # NOTE: float32 holds sigmoid(-100) as one
    for got in all_engines(lambda t: eager.sigmoid(t) * 1.5 if isinstance(t, eager.Tensor)
                           else graph.sigmoid(t) * 1.5, x):
        np.testing.assert_allclose(got / np.asarray(1.5, dtype), want, rtol=1e-6, atol=tiny)


@pytest.mark.parametrize("shape,axis", [((512, 4, 16), 1), ((4, 2048), 0), ((9, 3, 200), -2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_max_over_a_short_inner_axis_equal_numpys(shape, axis, keepdims):
    # these run as k - 1 elementwise ops on slices (a max pool's window), in NumPy's order
    from dualgrad import ops
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x[0, 0] = np.nan
    for op, ref in ((ops.sum, np.sum), (ops.max, np.max)):
        got, want = op(x, axis=axis, keepdims=keepdims), ref(x, axis=axis, keepdims=keepdims)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(0, 3), (0, 4, 3), (2, 0, 3)])
def test_bias_gradients_of_an_empty_batch_are_zeros_as_torch(shape):
    # sum_to_like's gemv paths met a reshape of 0 rows: a NumPy ValueError reached the user
    lin = eager.nn.Linear(3, 5)
    lin(eager.zeros(*shape)).sum().backward()
    np.testing.assert_array_equal(lin.bias.grad.numpy(), np.zeros(5, np.float32))
    conv = eager.nn.Conv2d(2, 4, 3)
    conv(eager.zeros(0, 2, 5, 5)).sum().backward()
    np.testing.assert_array_equal(conv.bias.grad.numpy(), np.zeros(4, np.float32))


def test_fused_division_is_exact_and_keeps_inf():
    """Fused kernels divide as NumPy does: 1 / sqrt(0) is inf (not an approximate reciprocal
    square root's NaN) and x / 3 is bit for bit NumPy's (not x * (1/3))."""
    x = np.array([0.0, -0.0, 1e-3, 2.0, 3.0, 7.0, 1e30, 0.1], np.float32)
    want = [np.float32(1) / np.sqrt(x), x / np.float32(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NOTE: NumPy warns on 1 / 0
        for k, fn in enumerate((lambda t: 1.0 / eager.sqrt(t), lambda t: t / 3.0)):
            for got in all_engines(lambda t: fn(t * 1.0), x):
                np.testing.assert_array_equal(got, want[k])


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_where_on_a_large_half_tensor_in_every_engine(dtype):
    """Past the size where `where` takes its numba loop (float32/64 only), float16 still
    selects as NumPy does (it raised a KernelError there)."""
    x = np.random.default_rng(0).standard_normal((20, 20, 20)).astype(dtype)
    for got in all_engines(lambda t: ops.where(t > 0, t, t * 0.5), x):
        np.testing.assert_array_equal(got, np.where(x > 0, x, x * np.asarray(0.5, dtype)))
