"""TF1's einsum, map_fn, assertions, check_numerics, variable-initialisation queries and
scatter updates on dualgrad.graph, optimiser off and on."""
import numpy as np
import pytest

from dualgrad import graph as tf
from tests.graph.tf1_check import check_grad, run_both

RNG = np.random.default_rng(0)


# -- einsum ------------------------------------------------------------------------------------
@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
    ("ij->j", [(3, 4)]), ("i,i->", [(5,), (5,)]), ("ij,kj", [(2, 3), (4, 3)]),
    ("abc->cab", [(2, 3, 4)])])
def test_einsum_matches_numpy(eq, shapes):
    vals = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    phs = [tf.placeholder(tf.float32, (None,) + s[1:]) for s in shapes]
    out = tf.einsum(eq, *phs)
    got = run_both(out, dict(zip(phs, vals)))
    np.testing.assert_allclose(got, np.einsum(eq, *vals), rtol=1e-5, atol=1e-6)
    assert tf.linalg.einsum is tf.einsum


def test_einsum_gradient_and_errors():
    check_grad(lambda a, b: tf.einsum("bij,jk->bik", a, b), RNG.standard_normal((2, 3, 2)),
               RNG.standard_normal((2, 4)))
    a = tf.placeholder(tf.float32, (2, 3))
    with pytest.raises(ValueError, match="letter 'j' is 3 in one operand and 4"):
        tf.einsum("ij,jk->ik", a, tf.placeholder(tf.float32, (4, 2)))
    with pytest.raises(NotImplementedError, match="repeated within one operand"):
        tf.einsum("ii->i", tf.placeholder(tf.float32, (3, 3)))
    with pytest.raises(ValueError, match="2 operand specs"):
        tf.einsum("ij,jk->ik", a)


# -- map_fn --------------------------------------------------------------------------------------
def test_map_fn_values_structures_and_gradient():
    x = tf.placeholder(tf.float32, (None, 3))
    xv = RNG.standard_normal((4, 3)).astype(np.float32)
    sq = tf.map_fn(lambda r: tf.reduce_sum(r * r), x)
    pair = tf.map_fn(lambda ab: (ab[0] * 2.0, ab[1] + 1.0), (x, x))
    fixed = tf.map_fn(lambda r: r[::-1], tf.constant(xv))
    assert sq.shape == (None,) and fixed.shape == (4, 3)
    a, (b, c), d = run_both([sq, pair, fixed], {x: xv})
    np.testing.assert_allclose(a, (xv ** 2).sum(1), rtol=1e-6)
    np.testing.assert_allclose(b, 2 * xv, rtol=1e-6)
    np.testing.assert_allclose(c, xv + 1, rtol=1e-6)
    np.testing.assert_allclose(d, xv[:, ::-1])
    check_grad(lambda t: tf.map_fn(lambda r: tf.reduce_sum(tf.sin(r) * r), t),
               RNG.standard_normal((3, 2)))


# -- assertions --------------------------------------------------------------------------------
def test_assertions_pass_silently_and_fail_with_tfs_message():
    x = tf.placeholder(tf.float32, (None,))
    checks = {"equal": tf.assert_equal(x, 1.0), "less": tf.assert_less(x, 2.0),
              "positive": tf.assert_positive(x), "non_negative": tf.assert_non_negative(x),
              "greater_equal": tf.assert_greater_equal(x, x)}
    for opt in (False, True):
        with tf.Session(optimize=opt) as s:
            assert s.run(list(checks.values()), {x: [1.0, 1.0]}) == [None] * 5
            for what, node in checks.items():
                if what in ("greater_equal", "less"):
                    continue
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match=rf"assertion failed: \[Condition x {what} did not "
                                         rf"hold element-wise:\] \[x \(at Placeholder:0\) = \]"
                                         rf" \[-3.0 1.0\]"):
                    s.run(node, {x: [-3.0, 1.0]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"\[x \(at Placeholder:0\) = \] \[3.0 1.0\] \[y \(at "):
                s.run(checks["less"], {x: [3.0, 1.0]})


def test_assert_as_a_control_dependency_and_its_data():
    x = tf.placeholder(tf.float32, (None,))
    check = tf.Assert(tf.reduce_all(x < 10.0), ["x too big:", x, "max", tf.reduce_max(x)],
                      summarize=2)
    with tf.control_dependencies([check]):
        y = tf.identity(x * 2.0)
    assert run_both(y, {x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError,
                                           match=r"\[x too big:\] \[1.0 20.0...\] \[max\] "
                                                 r"\[20.0\]"):
        s.run(y, {x: [1.0, 20.0, 3.0]})
    with pytest.raises(TypeError, match="condition must be bool"):
        tf.Assert(x, [x])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy's, on log(0) and log(-1)
def test_check_numerics_and_its_gradient():
    x = tf.placeholder(tf.float32, (None,))
    y = tf.check_numerics(tf.log(x), "log of x")
    g = tf.gradients(tf.reduce_sum(y), [x])[0]
    np.testing.assert_allclose(run_both(y, {x: [1.0, 2.0]}), np.log([1.0, 2.0]), rtol=1e-6)
    for opt in (False, True):
        with tf.Session(optimize=opt) as s:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="log of x : Tensor had Inf values"):
                s.run(y, {x: [0.0, 1.0]})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="log of x : Tensor had NaN values"):
                s.run(y, {x: [-1.0, 1.0]})
            np.testing.assert_allclose(s.run(g, {x: [2.0, 4.0]}), [0.5, 0.25])


# -- variables -------------------------------------------------------------------------------------
def test_report_uninitialized_variables_and_is_variable_initialized():
    v = tf.Variable(1.0, name="v")
    w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
    report, is_v = tf.report_uninitialized_variables(), tf.is_variable_initialized(v)
    check = tf.assert_variables_initialized([v, w])
    for opt in (False, True):
        with tf.Session(optimize=opt) as s:
            names, flag = s.run([report, is_v])
            assert names.tolist() == ["v", "w"] and not flag
            with pytest.raises(tf.errors.InvalidArgumentError, match="not all initialized"):
                s.run(check)
            s.run(v.initializer)
            names, flag = s.run([report, is_v])
            assert names.tolist() == ["w"] and flag
            s.run(tf.global_variables_initializer())
            assert s.run(report).tolist() == [] and s.run(check) is None


def test_scatter_updates():
    base = np.arange(8, dtype=np.float32).reshape(4, 2)
    v = tf.Variable(base, name="table")
    idx = tf.placeholder(tf.int32, (None,))
    upd = tf.placeholder(tf.float32, (None, 2))
    ops = {name: getattr(tf, name)(v, idx, upd) for name in
           ("scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div",
            "scatter_max", "scatter_min")}
    iv, uv = np.array([2, 0, 2]), np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    for opt in (False, True):
        for name, op in ops.items():
            with tf.Session(optimize=opt) as s:
                s.run(v.initializer)
                got = s.run(op, {idx: iv, upd: uv})
                assert (s.run(v) == got).all()
            want = base.copy()
            if name == "scatter_update":
                want[iv] = uv
            else:
                getattr(np, {"scatter_add": "add", "scatter_sub": "subtract",
                             "scatter_mul": "multiply", "scatter_div": "divide",
                             "scatter_max": "maximum", "scatter_min": "minimum"}[name]).at(
                    want, iv, uv)
            np.testing.assert_allclose(got, want, err_msg=name)
    with tf.Session() as s:
        s.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"index 4 is not in \[0, 4\)"):
            s.run(ops["scatter_add"], {idx: [4], upd: [[1, 1]]})
    with pytest.raises(ValueError, match=r"updates \(3, 3\) must have the shape"):
        tf.scatter_update(v, [0, 1, 2], np.ones((3, 3), np.float32))
    with pytest.raises(TypeError, match="ref must be a graph.Variable"):
        tf.scatter_add(tf.constant(base), [0], base[:1])
