"""A MobileNet-style TF1 block: `tf.nn.depthwise_conv2d` and `tf.nn.separable_conv2d` on
NHWC images. `tf` is `dualgrad.graph`; the expected values are TF1's definition written
here as loops (output channel k * multiplier + m is input channel k under filter[..., k, m]),
gradients are checked against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

from dualgrad import graph as tf

OPTIMIZE = [False, True]
RNG = np.random.RandomState(0)


def np_depthwise(x, f, stride, padding):
    n, h, w, c = x.shape
    kh, kw, _, mult = f.shape
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
        ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, c * mult))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            for k in range(c):
                for m in range(mult):
                    out[:, i, j, k * mult + m] = (patch[..., k] * f[:, :, k, m]).sum((1, 2))
    return out


@pytest.mark.parametrize("optimize", OPTIMIZE)
@pytest.mark.parametrize("stride,padding", [(1, "SAME"), (2, "SAME"), (2, "VALID"), (1, "VALID")])
def test_depthwise_conv2d_matches_its_definition(optimize, stride, padding):
    x = tf.placeholder(tf.float32, [None, 7, 6, 3])
    f = RNG.randn(3, 2, 3, 2).astype(np.float32)
    y = tf.nn.depthwise_conv2d(x, f, strides=[1, stride, stride, 1], padding=padding)
    xv = RNG.randn(2, 7, 6, 3).astype(np.float32)
    with tf.Session(optimize=optimize) as sess:
        out = sess.run(y, {x: xv})
    want = np_depthwise(xv.astype(np.float64), f.astype(np.float64), stride, padding)
    assert y.shape.as_list() == [None, *want.shape[1:]]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_mobilenet_block_trains_and_separable_equals_depthwise_then_pointwise(optimize):
    tf.set_random_seed(0)
    images = tf.placeholder(tf.float32, [None, 8, 8, 2])
    labels = tf.placeholder(tf.int64, [None])
    dw = tf.get_variable("dw", [3, 3, 2, 2], initializer=tf.truncated_normal_initializer(stddev=0.3))
    pw = tf.get_variable("pw", [1, 1, 4, 3], initializer=tf.truncated_normal_initializer(stddev=0.3))
    sep = tf.nn.separable_conv2d(images, dw, pw, strides=[1, 2, 2, 1], padding="SAME")
    two_step = tf.nn.conv2d(tf.nn.depthwise_conv2d(images, dw, [1, 2, 2, 1], "SAME"), pw,
                            [1, 1, 1, 1], "VALID")
    logits = tf.reduce_mean(tf.nn.relu6(sep), axis=[1, 2])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
    xb = RNG.randn(6, 8, 8, 2).astype(np.float32)
    yb = np.array([0, 1, 2, 0, 1, 2])
    xb[yb == 1, :, :, 0] += 1.5
    xb[yb == 2, :, :, 1] += 1.5
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([sep, two_step], {images: xb})
        losses = [sess.run([train_op, loss], {images: xb, labels: yb})[1] for _ in range(40)]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert losses[-1] < 0.5 * losses[0]


def test_depthwise_gradients_match_finite_differences():
    x = tf.placeholder(tf.float64, [1, 5, 4, 2])
    f = tf.placeholder(tf.float64, [2, 3, 2, 2])
    weights = RNG.randn(1, 3, 2, 4)
    out = tf.reduce_sum(tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME") * weights)
    gx, gf = tf.gradients(out, [x, f])
    xv, fv = RNG.randn(1, 5, 4, 2), RNG.randn(2, 3, 2, 2)
    with tf.Session(optimize=False) as sess:
        got_x, got_f = sess.run([gx, gf], {x: xv, f: fv})
        for got, val, key in ((got_x, xv, x), (got_f, fv, f)):
            num = np.zeros_like(val)
            for i in np.ndindex(val.shape):
                d = np.zeros_like(val)
                d[i] = 1e-6
                feeds = {x: xv, f: fv}
                hi = sess.run(out, {**feeds, key: val + d})
                lo = sess.run(out, {**feeds, key: val - d})
                num[i] = (hi - lo) / 2e-6
            np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def test_depthwise_refusals():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    with pytest.raises(ValueError, match=r"filter \(height, width, 3, channel_multiplier\)"):
        tf.nn.depthwise_conv2d(x, np.ones((3, 3, 2, 1), np.float32), [1, 1, 1, 1], "SAME")
    with pytest.raises(NotImplementedError, match="rate"):
        tf.nn.depthwise_conv2d(x, np.ones((3, 3, 3, 1), np.float32), [1, 1, 1, 1], "SAME",
                               rate=[2, 2])
