"""TF1's math names on dualgrad.graph: values against NumPy formulas written from the TF
docs, gradients against finite differences, optimiser off and on."""
import numpy as np
import pytest

from dualgrad import graph as tf
from tests.graph.tf1_check import check_grad, run_both

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)


def test_log1p_is_exact_for_tiny_inputs_and_reciprocal():
    x = tf.placeholder(tf.float32, (None,))
    v = np.array([1e-10, 0.5, 3.0], np.float32)
    a, b = run_both([tf.log1p(x), tf.reciprocal(x)], {x: v})
    np.testing.assert_allclose(a, np.log1p(v), rtol=1e-6)
    assert a[0] == np.float32(1e-10)
    np.testing.assert_allclose(b, 1 / v, rtol=1e-6)
    with pytest.raises(TypeError, match="reciprocal: expects a floating tensor"):
        tf.reciprocal(tf.constant([1, 2]))
    check_grad(lambda t: tf.log1p(t) + tf.reciprocal(t), [0.3, 1.2, 2.5])


def test_floordiv_and_mod_follow_python_signs_and_tf_float_rule():
    x = tf.placeholder(tf.int32, (None,))
    y = tf.placeholder(tf.int32, (None,))
    xv, yv = np.array([7, -7, 7, -7, 0]), np.array([3, 3, -3, -3, 5])
    d, m, d2, m2 = run_both([tf.floordiv(x, y), tf.mod(x, y), x // y, x % y], {x: xv, y: yv})
    np.testing.assert_array_equal(d, xv // yv)
    np.testing.assert_array_equal(m, xv % yv)
    np.testing.assert_array_equal(d2, d)
    np.testing.assert_array_equal(m2, m)
    assert d.dtype == np.int32
    f = tf.placeholder(tf.float32, (None,))
    fv = np.array([1.0, -1.0, 5.5], np.float32)
    fd, fm = run_both([tf.floordiv(f, 0.1), tf.floormod(f, 2.0)], {f: fv})
    np.testing.assert_allclose(fd, np.floor(fv / np.float32(0.1)))   # 1 // 0.1 is 10, as TF
    np.testing.assert_allclose(fm, np.mod(fv, 2.0), rtol=1e-6)
    with tf.Session() as s, pytest.raises(tf.errors.OpError, match="integer division by zero"):
        s.run(tf.floordiv(x, y), {x: xv, y: np.array([1, 0, 1, 1, 1])})
    check_grad(lambda a, b: tf.floormod(a, b), [[2.3, -1.7], [0.6, 4.1]], [[0.7, 0.9], [-1.1, 1.3]])


def test_squared_difference_and_add_n():
    a = tf.placeholder(tf.float32, (None, 4))
    b = tf.placeholder(tf.float32, (4,))
    sd, s3 = run_both([tf.squared_difference(a, b), tf.add_n([a, a * 2, a], name="total")],
                      {a: X, b: X[0]})
    np.testing.assert_allclose(sd, (X - X[0]) ** 2, rtol=1e-6)
    np.testing.assert_allclose(s3, 4 * X, rtol=1e-6)
    assert tf.add_n([a, a], name="s2").name == "s2:0"
    assert tf.add_n([a]) is a
    with pytest.raises(ValueError, match="at least one tensor"):
        tf.add_n([])
    with pytest.raises(ValueError, match="add_n: inputs must have one shape"):
        tf.add_n([a, tf.placeholder(tf.float32, (None, 3))])
    with pytest.raises(TypeError, match="one dtype"):
        tf.add_n([a, tf.placeholder(tf.float64, (None, 4))])
    check_grad(lambda p, q: tf.squared_difference(p, q) + tf.add_n([p, q, p]),
               RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3)))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), ([0, 1], False)])
def test_reduce_prod_values_and_gradient_with_zeros(axis, keepdims):
    v = np.array([[0.5, 0.0, 2.0, -1.5], [0.0, 3.0, 0.0, 1.0], [1.1, -0.7, 2.0, 0.9]])
    x = tf.placeholder(tf.float64, (None, 4))
    got = run_both(tf.reduce_prod(x, axis=axis, keepdims=keepdims), {x: v})
    ax = tuple(axis) if isinstance(axis, list) else axis
    np.testing.assert_allclose(got, np.prod(v, axis=ax, keepdims=keepdims))
    check_grad(lambda t: tf.reduce_prod(t, axis=axis, keepdims=keepdims), v)


def test_reduce_prod_old_argument_names():
    x = tf.constant(X)
    got = run_both(tf.reduce_prod(x, reduction_indices=[1], keep_dims=True))
    np.testing.assert_allclose(got, np.prod(X, axis=1, keepdims=True), rtol=1e-5)


def test_second_derivative_of_reduce_prod():
    check_grad(lambda t: tf.gradients(tf.reduce_prod(t * t), [t])[0], [0.5, -1.2, 2.0])


def test_reduce_all_any_and_count_nonzero():
    b = tf.placeholder(tf.bool, (None, 3))
    v = np.array([[True, False, True], [True, True, True]])
    a1, a2, y1, y2, e_all, e_any = run_both(
        [tf.reduce_all(b), tf.reduce_all(b, axis=1), tf.reduce_any(b, 0, keepdims=True),
         tf.math.reduce_any(tf.logical_not(b), axis=1),
         tf.reduce_all(tf.zeros((0,), tf.bool)), tf.reduce_any(tf.zeros((0,), tf.bool))],
        {b: v})
    assert a1 == v.all() and (a2 == v.all(1)).all() and (y1 == v.any(0, keepdims=True)).all()
    assert (y2 == (~v).any(1)).all() and e_all == True and e_any == False  # noqa: E712
    with pytest.raises(TypeError, match="reduce_any: expects a bool tensor"):
        tf.reduce_any(tf.constant(X))
    n = run_both(tf.count_nonzero(tf.constant([[0.0, 1.0], [2.0, 0.0]]), axis=1))
    assert n.dtype == np.int64 and n.tolist() == [1, 1]


def test_is_nan_is_inf_is_finite():
    v = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    x = tf.placeholder(tf.float32, (None,))
    n, i, f = run_both([tf.is_nan(x), tf.math.is_inf(x), tf.is_finite(x)], {x: v})
    np.testing.assert_array_equal(n, np.isnan(v))
    np.testing.assert_array_equal(i, np.isinf(v))
    np.testing.assert_array_equal(f, np.isfinite(v))
    with pytest.raises(TypeError, match="is_nan: expects a floating tensor"):
        tf.is_nan(tf.constant([1, 2]))


def test_where_with_a_rank_1_condition_picks_rows_as_tf1():
    c = tf.placeholder(tf.bool, (None,))
    x = tf.placeholder(tf.float32, (None, 2))
    got = run_both(tf.where(c, x, -x), {c: [True, False], x: [[1, 2], [3, 4]]})
    np.testing.assert_array_equal(got, [[1, 2], [-3, -4]])


def test_norm_vectors_and_matrices():
    v = RNG.standard_normal((3, 4))
    x = tf.constant(v)
    got = run_both([tf.norm(x), tf.norm(x, ord=1, axis=1), tf.norm(x, ord=np.inf, axis=1),
                    tf.norm(x, ord="fro", axis=(0, 1)), tf.norm(x, ord=1, axis=(0, 1)),
                    tf.linalg.norm(x, ord=np.inf, axis=[0, 1], keepdims=True)])
    want = [np.linalg.norm(v), np.abs(v).sum(1), np.abs(v).max(1), np.linalg.norm(v, "fro"),
            np.linalg.norm(v, 1), np.linalg.norm(v, np.inf).reshape(1, 1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    with pytest.raises(ValueError, match="ord 3 is not supported"):
        tf.norm(x, ord=3)


def test_rounding_names():
    v = np.array([-1.5, -0.5, 0.5, 1.5, 2.5, 2.7], np.float32)
    x = tf.constant(v)
    r, fl, ce = run_both([tf.round(x), tf.floor(x), tf.ceil(x)])
    np.testing.assert_array_equal(r, [-2, -0, 0, 2, 2, 3])   # half to even, as TF's round
    np.testing.assert_array_equal(fl, np.floor(v))
    np.testing.assert_array_equal(ce, np.ceil(v))


def test_the_math_namespace_is_the_same_functions():
    for name in ("log", "exp", "reduce_sum", "reduce_mean", "reduce_max", "argmax", "add_n",
                 "log1p", "squared_difference", "reduce_prod", "is_finite", "l2_normalize",
                 "floormod", "top_k", "in_top_k", "sigmoid", "softplus"):
        assert getattr(tf.math, name) is getattr(tf, name, getattr(tf.nn, name, None)), name
    x = tf.constant(X)
    var, std, ls = run_both([tf.math.reduce_variance(x, axis=0), tf.math.reduce_std(x),
                             tf.math.log_sigmoid(x)])
    np.testing.assert_allclose(var, X.var(0), rtol=1e-5)
    np.testing.assert_allclose(std, X.std(), rtol=1e-5)
    np.testing.assert_allclose(ls, -np.logaddexp(0, -X), rtol=1e-5)


def test_random_and_initializers_namespaces():
    tf.random.set_random_seed(3)
    a = tf.random.normal([2, 3], mean=1.0, stddev=0.5, seed=7)
    b = tf.random.uniform([4], minval=-1.0, maxval=1.0)
    c = tf.random.truncated_normal([100], stddev=0.1)
    with tf.Session() as s:
        va, vb, vc = s.run([a, b, c])
    assert va.shape == (2, 3) and ((-1 <= vb) & (vb < 1)).all() and np.abs(vc).max() <= 0.2
    with tf.Session() as s:
        assert (s.run(a) == va).all()   # the graph seed: each Session draws the same
    assert tf.random.set_seed is tf.set_random_seed
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.global_variables is tf.global_variables_initializer
    w = tf.get_variable("w", [200, 100], initializer=tf.initializers.he_normal(seed=1))
    u = tf.get_variable("u", [300, 50], initializer=tf.initializers.lecun_uniform(seed=1))
    with tf.Session() as s:
        s.run(tf.initializers.global_variables())
        wv, uv = s.run([w, u])
    assert abs(wv.std() - np.sqrt(2.0 / 200)) < 0.01 and np.abs(wv).max() <= 2 * np.sqrt(
        2.0 / 200) / 0.8796 + 1e-6
    assert np.abs(uv).max() <= np.sqrt(3.0 / 300) and abs(uv.std() - np.sqrt(1 / 300)) < 0.005


def test_newaxis():
    x = tf.constant(X)
    assert x[:, tf.newaxis].shape == (3, 1, 4)
