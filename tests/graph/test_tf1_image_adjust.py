"""tf.image's colour adjustments against real tf.compat.v1 on full-range integer images and
on float64 images (which both libraries adjust in float32), and the random forms' draws."""
import numpy as np
import pytest

from dualgrad import graph as dg

tf = pytest.importorskip("tensorflow").compat.v1

ADJUST = {
    "brightness": lambda L, x: L.image.adjust_brightness(x, 0.3),
    "darker": lambda L, x: L.image.adjust_brightness(x, -0.2),
    "contrast": lambda L, x: L.image.adjust_contrast(x, 1.7),
    "saturation": lambda L, x: L.image.adjust_saturation(x, 1.8),
    "desaturate": lambda L, x: L.image.adjust_saturation(x, 0.4),
    "hue": lambda L, x: L.image.adjust_hue(x, 0.3),
}


def _run(lib, build, x):
    g = lib.Graph()
    with g.as_default():
        y = build(lib, lib.constant(x))
        with lib.Session(graph=g) as sess:
            return sess.run(y)


def _image(dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.random((4, 5, 3)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(0, info.max, (4, 5, 3), endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "float64"])
@pytest.mark.parametrize("what", ADJUST)
def test_adjust_agrees_with_tf(what, dtype):
    x = _image(dtype)
    want, got = _run(tf, ADJUST[what], x), _run(dg, ADJUST[what], x)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == "float64":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:   # NOTE: the HSV kernels round in float32 in their own order: a few ulps at most
        step = max(1, 8 * 2 ** (np.iinfo(dtype).bits - 1 - 24))
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= step


def test_int32_brightness_saturates_below_the_float32_rounding_of_max():
    x = np.array([[[2 ** 31 - 1, 2 ** 31 - 200, 5]]], np.int32)
    build = ADJUST["brightness"]
    np.testing.assert_array_equal(_run(dg, build, x), _run(tf, build, x))


def test_float16_refused_where_tf_has_no_kernel():
    x = dg.constant(np.ones((2, 2, 3), np.float16))
    for fn in (lambda: dg.image.adjust_contrast(x, 2.0), lambda: dg.image.adjust_hue(x, 0.1),
               lambda: dg.image.adjust_saturation(x, 2.0)):
        with pytest.raises(TypeError, match="float16"):
            fn()


def test_random_forms_draw_one_factor_per_run_within_the_range():
    x = _image("float32")
    img = dg.constant(x)
    deltas = dg.image.random_brightness(img, 0.25) - img
    factors = dg.image.random_contrast(img, 0.5, 1.5)
    with dg.Session() as sess:
        drawn = [sess.run(deltas) for _ in range(20)]
        contrast = [sess.run(factors) for _ in range(5)]
    per_run = [float(d.mean()) for d in drawn]
    assert all(np.allclose(d, d.mean(), atol=1e-6) for d in drawn)   # one delta per run
    assert all(-0.25 <= v < 0.25 for v in per_run) and len(set(np.round(per_run, 6))) > 10
    mean = x.mean(axis=(0, 1))
    for c in contrast:
        f = ((c - mean) / (x - mean)).mean()
        assert 0.5 <= f < 1.5
    for bad in (lambda: dg.image.random_hue(img, 0.6), lambda: dg.image.random_contrast(img, 1, 1),
                lambda: dg.image.random_brightness(img, -1.0)):
        with pytest.raises(ValueError):
            bad()
