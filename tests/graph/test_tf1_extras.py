"""More TF1 names on dualgrad.graph: placeholder_with_default, unique, eye, linspace, the
to_* casts, div / realdiv, and small nn helpers; optimiser off and on."""
import numpy as np
import pytest

from dualgrad import graph as tf
from tests.graph.tf1_check import check_grad, run_both


def test_placeholder_with_default_gives_its_default_unless_fed(tmp_path):
    training = tf.placeholder_with_default(False, shape=(), name="training")
    x = tf.placeholder_with_default(np.ones((2, 3), np.float32), shape=[None, 3])
    y = tf.cond(training, lambda: x * 2.0, lambda: x)
    assert training.dtype == np.bool_ and x.shape == (None, 3)
    assert run_both(y).tolist() == [[1.0] * 3] * 2
    assert run_both(y, {training: True}).tolist() == [[2.0] * 3] * 2
    assert run_both(y, {x: np.zeros((1, 3), np.float32)}).tolist() == [[0.0] * 3]
    with tf.Session() as s, pytest.raises(ValueError, match="cannot feed a value of shape"):
        s.run(y, {x: np.zeros((1, 4), np.float32)})
    with pytest.raises(ValueError, match=r"does not fit shape \(\?, 4\)"):
        tf.placeholder_with_default(np.ones((2, 3)), [None, 4])
    z = tf.placeholder_with_default(x * 2.0, [None, 3])      # a computed default
    assert z.shape == (None, 3)
    assert run_both(z).tolist() == [[2.0] * 3] * 2
    assert run_both(z, {z: np.full((1, 3), 5.0, np.float32)}).tolist() == [[5.0] * 3]
    with pytest.raises(ValueError, match=r"does not fit shape \(\?, 4\)"):
        tf.placeholder_with_default(x * 2.0, [None, 4])
    tf.save(tmp_path / "g", tf.Session())
    g2 = tf.load(tmp_path / "g")
    with tf.Session(g2) as s:
        assert not s.run(g2.get_tensor_by_name("training:0"))


def test_unique_keeps_the_order_of_first_occurrence():
    x = tf.placeholder(tf.int32, (None,))
    y, idx = tf.unique(x)
    got_y, got_idx = run_both([y, idx], {x: [1, 1, 2, 4, 4, 4, 7, 8, 8]})
    np.testing.assert_array_equal(got_y, [1, 2, 4, 7, 8])
    np.testing.assert_array_equal(got_idx, [0, 0, 1, 2, 2, 2, 3, 4, 4])
    y2, idx2 = run_both(list(tf.unique(tf.constant([3.5, 1.0, 3.5, 0.0]), out_idx=tf.int64)))
    np.testing.assert_array_equal(y2, [3.5, 1.0, 0.0])
    assert idx2.tolist() == [0, 1, 0, 2] and idx2.dtype == np.int64 and idx.dtype == np.int32
    with pytest.raises(ValueError, match="unique: x must be 1-d"):
        tf.unique(tf.constant([[1, 2]]))


def test_eye_linspace_and_casts():
    e, b, ls = run_both([tf.eye(3), tf.eye(2, 3, batch_shape=[2], dtype=tf.int32),
                         tf.linspace(0.0, 1.0, 5)])
    np.testing.assert_array_equal(e, np.eye(3))
    np.testing.assert_array_equal(b, np.broadcast_to(np.eye(2, 3, dtype=np.int32), (2, 2, 3)))
    np.testing.assert_allclose(ls, np.linspace(0, 1, 5))
    assert e.dtype == np.float32 and ls.dtype == np.float32 and tf.lin_space is tf.linspace
    i = tf.constant([1, 2])
    assert [tf.to_float(i).dtype, tf.to_double(i).dtype, tf.to_int64(i).dtype,
            tf.to_int32(tf.to_float(i)).dtype] == [np.float32, np.float64, np.int64, np.int32]
    assert tf.to_float(i).name.startswith("ToFloat")


def test_div_is_python2_division_and_realdiv():
    a, b, c = run_both([tf.div(tf.constant([-7, 7]), 2), tf.div(tf.constant([-7.0, 7.0]), 2.0),
                        tf.realdiv(tf.constant([1.0]), 4.0)])
    np.testing.assert_array_equal(a, [-4, 3])
    np.testing.assert_array_equal(b, [-3.5, 3.5])
    assert c.tolist() == [0.25] and tf.floor_mod is tf.floormod
    with pytest.raises(TypeError, match="realdiv: expects floating tensors"):
        tf.realdiv(tf.constant([1]), 2)


def test_nn_helpers():
    x = tf.placeholder(tf.float32, (None, 3))
    w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2) - 2)
    bias = tf.constant([0.5, -0.5])
    xv = np.array([[1, -2, 3], [0, 1, 0]], np.float32)
    a, r, z, n, m = run_both([tf.nn.xw_plus_b(x, w, bias), tf.nn.relu_layer(x, w, bias),
                              tf.nn.zero_fraction(x), tf.reduce_euclidean_norm(x, axis=1),
                              tf.matrix_transpose(x)], {x: xv})
    want = xv @ (np.arange(6).reshape(3, 2) - 2) + [0.5, -0.5]
    np.testing.assert_allclose(a, want)
    np.testing.assert_allclose(r, np.maximum(want, 0))
    assert z == np.float32(2 / 6)
    np.testing.assert_allclose(n, np.linalg.norm(xv, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(m, xv.T)


def test_weighted_cross_entropy_with_logits():
    logits = np.array([[-3.0, 0.5, 40.0], [2.0, -50.0, 0.0]])
    labels = np.array([[1.0, 0.0, 1.0], [0.3, 1.0, 0.0]])
    lg, lb = tf.placeholder(tf.float64, (2, 3)), tf.placeholder(tf.float64, (2, 3))
    got = run_both(tf.nn.weighted_cross_entropy_with_logits(labels=lb, logits=lg,
                                                            pos_weight=2.5), {lg: logits, lb: labels})
    log_sig, log_one_minus = -np.logaddexp(0, -logits), -np.logaddexp(0, logits)
    want = -(2.5 * labels * log_sig + (1 - labels) * log_one_minus)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    check_grad(lambda x: tf.nn.weighted_cross_entropy_with_logits(
        labels=np.array([0.2, 1.0]), logits=x, pos_weight=3.0), [0.7, -1.2])


@pytest.mark.parametrize("padding,stride,out_hw,k", [
    ("SAME", 2, (8, 8), 3), ("SAME", 2, (7, 9), 3), ("VALID", 2, (9, 9), 3),
    ("VALID", 2, (10, 9), 3), ("SAME", 1, (4, 5), 2), ("VALID", 3, (11, 13), 4),
    ("SAME", 3, (10, 12), 2)])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_conv2d_transpose_is_the_gradient_of_conv2d(padding, stride, out_hw, k, data_format):
    rng = np.random.default_rng(3)
    nhwc = data_format == "NHWC"
    out_shape = [2, *out_hw, 3] if nhwc else [2, 3, *out_hw]
    w = rng.standard_normal((k, k, 3, 4))
    x_out = tf.placeholder(tf.float64, out_shape)
    strides = [1, stride, stride, 1] if nhwc else [1, 1, stride, stride]
    fwd = tf.nn.conv2d(x_out, w, strides=strides, padding=padding, data_format=data_format)
    y = tf.placeholder(tf.float64, fwd.shape)
    back = tf.nn.conv2d_transpose(y, w, out_shape, strides, padding, data_format=data_format)
    want = tf.gradients(fwd, [x_out], grad_ys=y)[0]
    yv = rng.standard_normal(fwd.shape)
    got, ref = run_both([back, want], {y: yv, x_out: np.zeros(out_shape)})
    assert got.shape == tuple(out_shape)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    if k == 3 and padding == "SAME" and nhwc:
        small = tf.nn.conv2d(x_out, w[:2, :2], strides=strides, padding=padding).shape
        check_grad(lambda t: tf.nn.conv2d_transpose(t, w[:2, :2], out_shape, strides, padding),
                   rng.standard_normal(small), rtol=1e-6)


def test_conv2d_transpose_refuses_an_output_shape_that_does_not_fit():
    y = tf.placeholder(tf.float32, (None, 4, 4, 3))
    w = np.ones((3, 3, 2, 3), np.float32)
    with pytest.raises(ValueError, match="gives height 5, not value's 4"):
        tf.nn.conv2d_transpose(y, w, [1, 10, 8, 2], [1, 2, 2, 1], "SAME")
    with pytest.raises(ValueError, match="do not fit"):
        tf.nn.conv2d_transpose(y, np.ones((3, 3, 2, 5), np.float32), [1, 8, 8, 2], 2)


@pytest.mark.parametrize("padding,stride", [("SAME", 1), ("VALID", 2), ("SAME", 2)])
def test_conv1d_matches_a_direct_sum(padding, stride):
    rng = np.random.default_rng(4)
    xv, fv = rng.standard_normal((2, 9, 3)), rng.standard_normal((3, 3, 5))
    x = tf.placeholder(tf.float64, (None, 9, 3))
    got, got_ncw = run_both([tf.nn.conv1d(x, fv, stride, padding),
                             tf.nn.conv1d(tf.transpose(x, [0, 2, 1]), fv, [1, 1, stride],
                                          padding, data_format="NCW")], {x: xv})
    n = xv.shape[1]
    out = -(-n // stride) if padding == "SAME" else (n - 3) // stride + 1
    total = max((out - 1) * stride + 3 - n, 0) if padding == "SAME" else 0
    xp = np.pad(xv, ((0, 0), (total // 2, total - total // 2), (0, 0)))
    want = np.stack([np.einsum("bkc,kco->bo", xp[:, i * stride:i * stride + 3], fv)
                     for i in range(out)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(got_ncw, want.transpose(0, 2, 1), rtol=1e-10)


def test_segment_sums_and_means():
    x = tf.placeholder(tf.float32, (None, 2))
    ids = tf.placeholder(tf.int32, (None,))
    xv = np.arange(10, dtype=np.float32).reshape(5, 2)
    u = tf.unsorted_segment_sum(x, ids, 4)
    assert u.shape == (4, 2) and tf.math.segment_sum is tf.segment_sum
    got = run_both(u, {x: xv, ids: [3, -1, 0, 3, 1]})    # the row with id -1 is dropped
    want = np.zeros((4, 2), np.float32)
    for row, i in zip(xv, [3, -1, 0, 3, 1]):
        if i >= 0:
            want[i] += row
    np.testing.assert_array_equal(got, want)
    s, m = run_both([tf.segment_sum(x, ids), tf.segment_mean(x, ids)],
                    {x: xv, ids: [0, 0, 2, 2, 2]})
    np.testing.assert_array_equal(s, [xv[:2].sum(0), [0, 0], xv[2:].sum(0)])
    np.testing.assert_allclose(m, [xv[:2].mean(0), [0, 0], xv[2:].mean(0)])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.OpError, match=r"segment id 4 is out of range \[0, 4\)"):
            sess.run(u, {x: xv, ids: [3, 4, 0, 3, 1]})
        with pytest.raises(tf.errors.OpError, match="segment ids are not increasing"):
            sess.run(tf.segment_sum(x, ids), {x: xv, ids: [1, 0, 2, 2, 2]})
    check_grad(lambda t: tf.unsorted_segment_sum(t, np.array([1, 0, 1]), 3),
               np.random.default_rng(2).standard_normal((3, 2)))
    check_grad(lambda t: tf.segment_mean(t, np.array([0, 0, 2])),
               np.random.default_rng(3).standard_normal((3, 2)))


@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("strides", [1, 2, 3])
def test_layers_conv2d_transpose(padding, strides):
    x = tf.placeholder(tf.float32, (None, 4, 5, 3))
    y = tf.layers.conv2d_transpose(x, 2, 3, strides=strides, padding=padding, name="up",
                                   bias_initializer=tf.constant_initializer(0.5))
    grow = 0 if padding == "same" else max(3 - strides, 0)
    assert y.shape == (None, 4 * strides + grow, 5 * strides + grow, 2)
    kernel, bias = tf.trainable_variables()
    assert kernel.name == "up/kernel:0" and kernel.shape == (3, 3, 2, 3)
    ref = tf.nn.conv2d_transpose(x, kernel, [tf.shape(x)[0], *y.shape[1:]],
                                 [1, strides, strides, 1], padding.upper()) + bias
    g = tf.gradients(tf.reduce_sum(y * y), [kernel])[0]
    xv = np.random.default_rng(5).standard_normal((2, 4, 5, 3)).astype(np.float32)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        got, want, gk = s.run([y, ref, g], {x: xv})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert gk.shape == (3, 3, 2, 3) and np.abs(gk).sum() > 0
