"""TF1 programs that resize images (`tf.image.resize_bilinear`, `resize_nearest_neighbor`,
`resize_images`), as segmentation and super-resolution tutorials do. `tf` is
`dualgrad.graph`; the expected values are TF1's documented coordinate mappings written
here as plain loops, gradients are checked against finite differences."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dualgrad import graph as tf

OPTIMIZE = [False, True]
MODES = [(False, False), (True, False), (False, True)]   # (align_corners, half_pixel_centers)


def source(i, n_in, n_out, align_corners, half_pixel, nearest):
    scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else n_in / n_out
    if half_pixel:
        return (i + 0.5) * scale - (0.0 if nearest else 0.5)
    return i * scale


def np_bilinear(img, h, w, ac, hp):
    n, H, W, c = img.shape
    out = np.zeros((n, h, w, c))
    for i in range(h):
        for j in range(w):
            y, x = source(i, H, h, ac, hp, False), source(j, W, w, ac, hp, False)
            y0, x0 = math.floor(y), math.floor(x)
            ya, yb = max(y0, 0), min(math.ceil(y), H - 1)
            xa, xb = max(x0, 0), min(math.ceil(x), W - 1)
            dy, dx = y - y0, x - x0
            top = img[:, ya, xa] * (1 - dx) + img[:, ya, xb] * dx
            bottom = img[:, yb, xa] * (1 - dx) + img[:, yb, xb] * dx
            out[:, i, j] = top * (1 - dy) + bottom * dy
    return out


def np_nearest(img, h, w, ac, hp):
    def pick(i, n_in, n_out):
        s = source(i, n_in, n_out, ac, hp, True)
        k = math.floor(s + 0.5) if ac else math.floor(s)
        return min(max(k, 0), n_in - 1)
    rows = [pick(i, img.shape[1], h) for i in range(h)]
    cols = [pick(j, img.shape[2], w) for j in range(w)]
    return img[:, rows][:, :, cols]


@pytest.mark.parametrize("optimize", OPTIMIZE)
@pytest.mark.parametrize("ac,hp", MODES)
def test_resize_matches_tf1_coordinate_mappings(optimize, ac, hp):
    images = tf.placeholder(tf.float32, [None, 5, 7, 2])
    sizes = [(8, 11), (3, 4), (1, 1), (10, 2)]
    outs = [(f(images, s, align_corners=ac, half_pixel_centers=hp), ref, s)
            for s in sizes for f, ref in ((tf.image.resize_bilinear, np_bilinear),
                                          (tf.image.resize_nearest_neighbor, np_nearest))]
    img = np.random.RandomState(0).randn(2, 5, 7, 2).astype(np.float32)
    with tf.Session(optimize=optimize) as sess:
        got = sess.run([o for o, _, _ in outs], {images: img})
    for value, (out, ref, s) in zip(got, outs):
        assert out.shape.as_list() == [None, *s, 2] and value.dtype == np.float32
        np.testing.assert_allclose(value, ref(img.astype(np.float64), *s, ac, hp), rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_resize_images_dtypes_single_images_and_refusals(optimize):
    pixels = np.arange(12, dtype=np.int32).reshape(1, 3, 4, 1)
    near = tf.image.resize_images(pixels, [6, 8], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    bil = tf.image.resize_images(pixels, [2, 2])
    single = tf.image.resize_images(tf.constant(pixels[0], tf.float32), [5, 5], align_corners=True)
    with tf.Session(optimize=optimize) as sess:
        n, b, s = sess.run([near, bil, single])
    assert n.dtype == np.int32 and b.dtype == np.float32 and s.shape == (5, 5, 1)
    np.testing.assert_array_equal(n, np.repeat(np.repeat(pixels, 2, 1), 2, 2))
    np.testing.assert_allclose(b, np_bilinear(pixels.astype(float), 2, 2, False, False))
    np.testing.assert_allclose(s, np_bilinear(pixels.astype(float), 5, 5, True, False)[0], rtol=1e-6)
    with pytest.raises(ValueError, match="align_corners must be False"):
        tf.image.resize_bilinear(pixels, [2, 2], align_corners=True, half_pixel_centers=True)
    with pytest.raises(NotImplementedError, match="BICUBIC|not supported"):
        tf.image.resize_images(pixels, [2, 2], method=tf.image.ResizeMethod.BICUBIC)
    with pytest.raises(NotImplementedError, match="size must be a list"):
        tf.image.resize_bilinear(pixels, tf.constant([2, 2]))


@pytest.mark.parametrize("resize", ["resize_bilinear", "resize_nearest_neighbor"])
def test_resize_gradients_match_finite_differences(resize):
    x = tf.placeholder(tf.float64, [1, 3, 4, 1])
    y = getattr(tf.image, resize)(x, [5, 3], half_pixel_centers=True)
    weights = np.random.RandomState(1).randn(1, 5, 3, 1)
    f = tf.reduce_sum(tf.cast(y, tf.float64) * weights)
    g = tf.gradients(f, x)[0]
    xv = np.random.RandomState(2).randn(1, 3, 4, 1)
    with tf.Session(optimize=False) as sess:
        got = sess.run(g, {x: xv})
        num = np.zeros_like(xv)
        for i in np.ndindex(xv.shape):
            d = np.zeros_like(xv)
            d[i] = 0.1   # NOTE: resizing is linear in x, and computes in float32 as TF
            num[i] = (sess.run(f, {x: xv + d}) - sess.run(f, {x: xv - d})) / 0.2
    np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimize", OPTIMIZE)
def test_upsampling_decoder_learns_to_reconstruct(optimize):
    """A tiny encoder-decoder: pool down, resize back up, a 1x1 conv to fit the image."""
    tf.set_random_seed(0)
    images = tf.placeholder(tf.float32, [None, 8, 8, 1])
    small = tf.layers.average_pooling2d(images, 2, 2)
    up = tf.image.resize_bilinear(small, [8, 8], half_pixel_centers=True)
    recon = tf.layers.conv2d(up, 1, 1, kernel_initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(recon - images))
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
    yy, xx = np.mgrid[0:8, 0:8] / 7.0
    batch = np.stack([np.sin(yy + k) * np.cos(xx - k) for k in range(4)])[..., None]
    with tf.Session(optimize=optimize) as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([train_op, loss], {images: batch})[1] for _ in range(60)]
    assert losses[-1] < 0.1 * losses[0]
