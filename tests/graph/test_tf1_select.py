"""TF1's activations, ordering, masks, slices and products on dualgrad.graph: values
against NumPy formulas from the TF docs, gradients against finite differences, optimiser
off and on."""
import numpy as np
import pytest

from dualgrad import graph as tf
from tests.graph.tf1_check import check_grad, run_both

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 5)).astype(np.float32)


# -- activations and normalisation ------------------------------------------------------------
def test_activations_match_tf_formulas():
    v = np.array([-3.0, -0.5, 0.0, 0.5, 3.0, 7.0], np.float32)
    x = tf.placeholder(tf.float32, (None,))
    lr, lr1, el, r6, se, ss = run_both(
        [tf.nn.leaky_relu(x), tf.nn.leaky_relu(x, alpha=0.1), tf.nn.elu(x), tf.nn.relu6(x),
         tf.nn.selu(x), tf.nn.softsign(x)], {x: v})
    np.testing.assert_allclose(lr, np.where(v > 0, v, 0.2 * v))      # TF's default alpha 0.2
    np.testing.assert_allclose(lr1, np.where(v > 0, v, 0.1 * v))
    np.testing.assert_allclose(el, np.where(v > 0, v, np.expm1(v)), rtol=1e-6)
    np.testing.assert_allclose(r6, np.clip(v, 0, 6))
    np.testing.assert_allclose(se, 1.0507009873554805 * np.where(
        v > 0, v, 1.6732632423543772 * np.expm1(v)), rtol=1e-6)
    np.testing.assert_allclose(ss, v / (1 + np.abs(v)), rtol=1e-6)
    assert tf.nn.leaky_relu(tf.constant([1, -2])).dtype == np.float32   # ints: float32, as TF


def test_activation_gradients_at_the_kinks_are_tfs():
    x = tf.placeholder(tf.float32, (3,))
    g = tf.gradients([tf.reduce_sum(tf.nn.leaky_relu(x)), tf.reduce_sum(tf.nn.relu6(x)),
                      tf.reduce_sum(tf.nn.elu(x))], [x])[0]
    got = run_both(g, {x: [0.0, 6.0, 3.0]})
    # leaky_relu'(0) = alpha (0.2), relu6' is 0 at 0 and 6, elu'(0) = 1
    np.testing.assert_allclose(got, [0.2 + 0.0 + 1.0, 1.0 + 0.0 + 1.0, 1.0 + 1.0 + 1.0])
    check_grad(lambda t: tf.nn.leaky_relu(t) + tf.nn.elu(t) + tf.nn.relu6(t),
               [-1.3, -0.2, 0.4, 2.0, 6.5])


@pytest.mark.parametrize("axis", [None, 1, 0, [0, 1]])
def test_l2_normalize(axis):
    x = tf.placeholder(tf.float32, (None, 5))
    got = run_both(tf.nn.l2_normalize(x, axis=axis), {x: X})
    ax = tuple(axis) if isinstance(axis, list) else axis
    want = X / np.sqrt(np.maximum((X ** 2).sum(axis=ax, keepdims=True), 1e-12))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    check_grad(lambda t: tf.nn.l2_normalize(t, axis), RNG.standard_normal((2, 3)))


def test_l2_normalize_epsilon_and_dim():
    z = run_both(tf.nn.l2_normalize(tf.zeros((2, 3)), dim=1))
    assert (z == 0).all()
    small = run_both(tf.math.l2_normalize(tf.constant([3e-7, 4e-7]), epsilon=1e-12))
    np.testing.assert_allclose(small, np.array([3e-7, 4e-7]) / 1e-6, rtol=1e-5)


# -- ordering ----------------------------------------------------------------------------------
def test_top_k_values_indices_and_ties():
    v = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [5.0, 4.0, 3.0, 2.0, 1.0]], np.float32)
    x = tf.placeholder(tf.float32, (None, 5))
    res = tf.nn.top_k(x, k=3)
    vals, idx = run_both([res.values, res.indices], {x: v})
    np.testing.assert_array_equal(idx, [[1, 2, 4], [0, 1, 2]])     # ties: lower index first
    np.testing.assert_array_equal(vals, [[3, 3, 3], [5, 4, 3]])
    assert idx.dtype == np.int32
    assert tf.math.top_k(x).values.shape == (None, 1)              # k=1 by default
    with pytest.raises(ValueError, match="at least k=6 columns"):
        tf.nn.top_k(x, 6)
    check_grad(lambda t: tf.nn.top_k(t, 2)[0], [[0.3, -1.0, 2.0], [1.5, 0.2, 0.9]])


def test_in_top_k_counts_ties_as_in_and_rejects_non_finite_rows():
    p = tf.placeholder(tf.float32, (None, 4))
    t = tf.placeholder(tf.int32, (None,))
    pv = np.array([[0.1, 0.5, 0.5, 0.2],      # target 2 tied with 1 at the boundary of k=1
                   [0.9, 0.8, 0.1, 0.0],
                   [0.9, 0.8, 0.1, 0.0],
                   [0.1, np.nan, 0.9, 0.0],   # a NaN in the row: False
                   [0.1, 0.2, 0.3, 0.4]], np.float32)
    tv = np.array([2, 1, 2, 2, 7])           # 7 is out of range: False
    got = run_both(tf.nn.in_top_k(p, t, 1), {p: pv, t: tv})
    np.testing.assert_array_equal(got, [True, False, False, False, False])
    got2 = run_both(tf.nn.in_top_k(p, t, 2), {p: pv, t: tv})
    np.testing.assert_array_equal(got2, [True, True, False, False, False])


def test_sort_and_argsort():
    x = tf.placeholder(tf.float32, (None, 5))
    v = X.copy()
    v[0, 3] = v[0, 1]
    s, sd, a, ad = run_both([tf.sort(x), tf.sort(x, direction="DESCENDING", axis=0),
                             tf.argsort(x), tf.argsort(x, direction="DESCENDING")], {x: v})
    np.testing.assert_array_equal(s, np.sort(v, axis=-1))
    np.testing.assert_array_equal(sd, -np.sort(-v, axis=0))
    np.testing.assert_array_equal(a, np.argsort(v, axis=-1, kind="stable"))
    np.testing.assert_array_equal(ad, np.argsort(-v, axis=-1, kind="stable"))
    assert a.dtype == np.int32
    with pytest.raises(ValueError, match="direction must be"):
        tf.sort(x, direction="up")
    check_grad(lambda t: tf.sort(t), [[0.3, -1.0, 2.0], [1.5, 0.2, 0.9]])


# -- masks -------------------------------------------------------------------------------------
def test_sequence_mask():
    n = tf.placeholder(tf.int32, (None,))
    m1, m2, m3 = run_both([tf.sequence_mask(n), tf.sequence_mask(n, 5, dtype=tf.float32),
                           tf.sequence_mask(tf.reshape(n, [-1, 1]), maxlen=tf.constant(3))],
                          {n: [1, 3, 0]})
    lens = np.array([1, 3, 0])
    np.testing.assert_array_equal(m1, np.arange(3) < lens[:, None])
    assert m1.dtype == np.bool_ and m2.dtype == np.float32 and m3.shape == (3, 1, 3)
    np.testing.assert_array_equal(m2, (np.arange(5) < lens[:, None]).astype(np.float32))
    assert tf.sequence_mask(n, 5).shape == (None, 5)
    assert run_both(tf.sequence_mask(n), {n: np.zeros((0,), np.int32)}).shape == (0, 0)


def test_boolean_mask_and_where_indices():
    x = tf.placeholder(tf.float32, (None, 5))
    m = tf.placeholder(tf.bool, (None,))
    m2 = tf.placeholder(tf.bool, (None, 5))
    mv, m2v = np.array([True, False, True]), X > 0
    rows, elems, cols, where = run_both(
        [tf.boolean_mask(x, m), tf.boolean_mask(x, m2), tf.boolean_mask(x, m2v[0], axis=1),
         tf.where(m2)], {x: X, m: mv, m2: m2v})
    np.testing.assert_array_equal(rows, X[mv])
    np.testing.assert_array_equal(elems, X[m2v])
    np.testing.assert_array_equal(cols, X[:, m2v[0]])
    np.testing.assert_array_equal(where, np.argwhere(m2v))
    assert where.dtype == np.int64 and tf.where(m2).shape == (None, 2)
    with pytest.raises(ValueError, match="must match the dims"):
        tf.boolean_mask(x, tf.placeholder(tf.bool, (None, 4)))
    check_grad(lambda t: tf.boolean_mask(t, np.array([[True, False], [True, True]])),
               [[0.3, -1.0], [1.5, 0.2]])


def test_gather_nd():
    p = tf.placeholder(tf.float32, (None, 5))
    idx = [[0, 1], [2, 4], [0, 1]]
    got, rows = run_both([tf.gather_nd(p, idx), tf.gather_nd(p, [[2], [0]])], {p: X})
    np.testing.assert_array_equal(got, X[[0, 2, 0], [1, 4, 1]])
    np.testing.assert_array_equal(rows, X[[2, 0]])
    with tf.Session() as s, pytest.raises(tf.errors.OpError, match="out of bounds"):
        s.run(tf.gather_nd(p, [[0, 5]]), {p: X})   # flat index 5 exists: TF still refuses
    check_grad(lambda t: tf.gather_nd(t, [[[0, 1]], [[1, 0]], [[0, 1]]]), [[0.3, -1.0], [1.5, 0.2]])


# -- slices ------------------------------------------------------------------------------------
def test_slice_and_strided_slice():
    x = tf.placeholder(tf.float32, (None, 5))
    a, b, c, d, e = run_both(
        [tf.slice(x, [1, 2], [-1, 2]), tf.strided_slice(x, [0, 4], [3, 0], [2, -1]),
         tf.strided_slice(x, [1, 0], [0, 3], begin_mask=0, end_mask=1),
         tf.strided_slice(x, [1, 0], [2, 0], shrink_axis_mask=1, end_mask=2),
         tf.strided_slice(x, [0, 0, 0], [0, 0, 2], ellipsis_mask=1, new_axis_mask=2)],
        {x: X})
    np.testing.assert_array_equal(a, X[1:, 2:4])
    np.testing.assert_array_equal(b, X[0:3:2, 4:0:-1])
    np.testing.assert_array_equal(c, X[1:, 0:3])
    np.testing.assert_array_equal(d, X[1, 0:])
    np.testing.assert_array_equal(e, X[..., None, 0:2])
    with pytest.raises(ValueError, match="exceeds"):
        tf.slice(tf.constant(X), [1, 2], [3, 2])
    with pytest.raises(NotImplementedError, match="pass -1"):
        tf.slice(x, [0, 0], [2, 2])
    check_grad(lambda t: tf.slice(t, [0, 1], [2, 2]), RNG.standard_normal((3, 4)))


# -- products ----------------------------------------------------------------------------------
def test_tensordot():
    a = tf.placeholder(tf.float32, (None, 3, 4))
    av, bv = RNG.standard_normal((2, 3, 4)).astype(np.float32), RNG.standard_normal(
        (4, 3, 5)).astype(np.float32)
    b = tf.constant(bv)
    r1, r2, r0 = run_both([tf.tensordot(a, b, [[1, 2], [1, 0]]),
                           tf.tensordot(a, tf.constant(bv[:, 0, :]), 1),
                           tf.tensordot(tf.constant(av[0, 0]), tf.constant(bv[:, 0, 0]), 0)],
                          {a: av})
    np.testing.assert_allclose(r1, np.tensordot(av, bv, [[1, 2], [1, 0]]), rtol=1e-5)
    np.testing.assert_allclose(r2, np.tensordot(av, bv[:, 0, :], 1), rtol=1e-5)
    np.testing.assert_allclose(r0, np.tensordot(av[0, 0], bv[:, 0, 0], 0), rtol=1e-5)
    assert tf.tensordot(a, b, [[1, 2], [1, 0]]).shape == (None, 5)
    with pytest.raises(ValueError, match="differ"):
        tf.tensordot(a, b, [[1], [2]])
    check_grad(lambda p, q: tf.tensordot(p, q, [[0], [1]]), RNG.standard_normal((3, 2)),
               RNG.standard_normal((4, 3)))
