"""Kernels with a fast path above a size the registry's samples do not reach give the values of
their plain path: float32 erf through scipy against math.erf rounded once, take's gradient
(an embedding's) through the numba row loop against np.add.at, repeated and negative indices
included, and softmax cross-entropy on long rows (NumPy's exp) against a float64 reference. Sizes are the smallest that take the fast paths (a few thousand elements each), so
the module runs in well under a second once numba's cache is warm."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dualgrad import eager
from dualgrad.ops import shape


def test_erf_float32_matches_math_erf_rounded_once():
    x = np.random.default_rng(0).standard_normal(5000).astype(np.float32) * 3
    x[:6] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30]
    want = np.array([math.erf(float(v)) for v in x], np.float64).astype(np.float32)
    got = eager.erf(eager.from_numpy(x)).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[4])


def test_erf_float64_is_the_c_library_erf():
    x = np.linspace(-4, 4, 3001)
    np.testing.assert_array_equal(eager.erf(eager.from_numpy(x)).numpy(),
                                  [math.erf(v) for v in x])


@pytest.mark.parametrize("rows,cols,index_shape", [(1000, 16, (16, 32)), (40, 200, (300,))])
def test_take_grad_rows_match_add_at(rows, cols, index_shape):
    rng = np.random.default_rng(1)
    idx = rng.integers(-rows, rows, index_shape)
    g = rng.standard_normal(index_shape + (cols,)).astype(np.float32)
    want = np.zeros((rows, cols), np.float32)
    np.add.at(want, idx, g)
    got = shape._take_grad_kernel(g, idx, np.zeros((rows, cols), np.float32), axis=0)
    np.testing.assert_array_equal(got, want)


def test_embedding_gradient_sums_repeated_tokens():
    emb = eager.nn.Embedding(5000, 4)
    idx = eager.tensor([[1, 2, 1], [4999, 1, 0]])
    emb(idx).sum().backward()
    grad = emb.weight.grad.numpy()
    assert grad[1].tolist() == [3.0] * 4 and grad[4999].tolist() == [1.0] * 4
    assert grad[3].tolist() == [0.0] * 4


def test_take_grad_out_of_range_raises():
    with pytest.raises(IndexError):
        shape._take_grad_kernel(np.ones((3, 2000), np.float32), np.array([0, 1, 7]),
                                np.zeros((5, 2000), np.float32), axis=0)


def _sce_reference(x, t):
    x = x.astype(np.float64)
    z = x - x.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    loss = -(np.where(t != 0, t * logp, 0.0)).sum(axis=-1)
    return loss, np.exp(logp) * t.sum(axis=-1, keepdims=True) - t


@pytest.mark.parametrize("classes", [63, 64, 300])   # both sides of native.LONG_ROW
def test_softmax_cross_entropy_long_rows(classes):
    from dualgrad import ops
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((40, classes)) * 4).astype(np.float32)
    t = np.zeros_like(x)
    t[np.arange(40), rng.integers(0, classes, 40)] = 1
    x[1, 3], x[2, 4], x[3] = np.inf, np.nan, -np.inf
    loss, grad = _sce_reference(x[4:], t[4:])
    got = ops.softmax_cross_entropy(x, t)
    g = ops.softmax_cross_entropy_grad(x, t, np.ones(40, np.float32))
    assert got.dtype == np.float32 and np.isnan(got[1:4]).all()
    np.testing.assert_allclose(got[4:], loss, rtol=2e-6, atol=1e-6)
    assert np.isnan(g[1:4]).all()
    np.testing.assert_allclose(g[4:], grad, rtol=1e-5, atol=1e-7)
