"""`graph.image`: TF1's image resizing (`tf.compat.v1.image.resize_bilinear`,
`resize_nearest_neighbor`, `resize_images`) on NHWC images (or one HWC image).

The source coordinate of output pixel i is TF1's: `i * in / out` by default (the legacy
mapping, which shifts the image up-left), `i * (in - 1) / (out - 1)` with
`align_corners=True`, and `(i + 0.5) * in / out - 0.5` (bilinear) or `(i + 0.5) * in / out`
(nearest) with `half_pixel_centers=True`, computed in float32 as TF's kernels do. Bilinear
results are float32; nearest keeps the dtype. Gradients flow to the image (bilinear's are
weighted, nearest's go to the picked pixel).

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> img = tf.constant(np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1))
>>> with tf.Session() as s:
...     s.run(tf.image.resize_bilinear(img, [3, 3], align_corners=True))[0, :, :, 0].tolist()
[[0.0, 0.5, 1.0], [1.0, 1.5, 2.0], [2.0, 2.5, 3.0]]
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import fmt_shape, located

from .core import Tensor, check_tf1_types, convert_to_tensor
from .augment import (random_crop, random_flip_left_right, random_flip_up_down,
                      rgb_to_grayscale)
from .image_adjust import *  # noqa: F403 - adjust_brightness, random_hue, crop or pad, …
from .image_adjust import __all__ as _adjust_all

__all__ = ["resize_bilinear", "resize_nearest_neighbor", "resize_images", "resize",
           "ResizeMethod", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "rgb_to_grayscale", *_adjust_all]

ResizeMethod = SimpleNamespace(BILINEAR=0, NEAREST_NEIGHBOR=1, BICUBIC=2, AREA=3)


def resize_bilinear(images, size, align_corners=False, half_pixel_centers=False, name=None):
    """Bilinear resize of `images` (N, H, W, C) to `size` = [new_height, new_width]."""
    x, h, w, batched = _prepare(images, size, align_corners, half_pixel_centers, "resize_bilinear")
    x = ops.cast(x, np.float32) if x.dtype != np.float32 else x
    lo_y, hi_y, ly = _bilinear_axis(x.shape[1], h, align_corners, half_pixel_centers)
    lo_x, hi_x, lx = _bilinear_axis(x.shape[2], w, align_corners, half_pixel_centers)
    ly, lx = ly.reshape(1, h, 1, 1), lx.reshape(1, 1, w, 1)
    rows = [ops.take(x, idx, axis=1) for idx in (lo_y, hi_y)]
    top, bottom = (_lerp(ops.take(r, lo_x, axis=2), ops.take(r, hi_x, axis=2), lx) for r in rows)
    out = _lerp(top, bottom, ly)
    return out if batched else ops.reshape(out, tuple(out.shape[1:]))


def resize_nearest_neighbor(images, size, align_corners=False, half_pixel_centers=False,
                            name=None):
    """Nearest-neighbour resize of `images` (N, H, W, C) to `size`; keeps the dtype."""
    x, h, w, batched = _prepare(images, size, align_corners, half_pixel_centers,
                                "resize_nearest_neighbor")
    iy = _nearest_axis(x.shape[1], h, align_corners, half_pixel_centers)
    ix = _nearest_axis(x.shape[2], w, align_corners, half_pixel_centers)
    out = ops.take(ops.take(x, iy, axis=1), ix, axis=2)
    return out if batched else ops.reshape(out, tuple(out.shape[1:]))


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """tf.compat.v1.image.resize_images: BILINEAR (float32 out) or NEAREST_NEIGHBOR;
    BICUBIC, AREA and preserve_aspect_ratio raise NotImplementedError."""
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images: preserve_aspect_ratio=True is not supported")
    if method in (ResizeMethod.BILINEAR, "bilinear"):
        return resize_bilinear(images, size, align_corners=align_corners)
    if method in (ResizeMethod.NEAREST_NEIGHBOR, "nearest"):
        return resize_nearest_neighbor(images, size, align_corners=align_corners)
    raise NotImplementedError(f"resize_images: method {method!r} is not supported (only "
                              f"ResizeMethod.BILINEAR and NEAREST_NEIGHBOR)")


resize = resize_images


def _prepare(images, size, align_corners, half_pixel_centers, what):
    check_tf1_types("resize", images)
    if align_corners and half_pixel_centers:
        raise ValueError(f"{what}: If half_pixel_centers is True, align_corners must be False.")
    if isinstance(size, Tensor):
        raise NotImplementedError(f"{what}: size must be a list of two Python ints (the "
                                  f"output size is needed when the graph is built)")
    h, w = (int(s) for s in size)
    if h <= 0 or w <= 0:
        raise ValueError(f"{what}: size must be positive, got {[h, w]}")
    x = convert_to_tensor(images)
    batched = x.ndim == 4
    if x.ndim == 3:
        x = ops.reshape(x, (1, *x.shape))
    if x.ndim != 4 or x.shape[1] is None or x.shape[2] is None:
        raise located(f"{what}: expects NHWC images (or one HWC image) with known height "
                      f"and width, got {fmt_shape(x.spec)}")
    return x, h, w, batched


def _scale(n_in, n_out, align_corners):
    if align_corners and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def _bilinear_axis(n_in, n_out, align_corners, half_pixel):
    s = _scale(n_in, n_out, align_corners)
    i = np.arange(n_out, dtype=np.float32)
    src = (i + np.float32(0.5)) * s - np.float32(0.5) if half_pixel else i * s
    floor = np.floor(src)
    lo = np.maximum(floor, 0).astype(np.int64)
    hi = np.minimum(np.ceil(src), n_in - 1).astype(np.int64)
    return lo, hi, (src - floor).astype(np.float32)


def _nearest_axis(n_in, n_out, align_corners, half_pixel):
    s = _scale(n_in, n_out, align_corners)
    i = np.arange(n_out, dtype=np.float32)
    src = (i + np.float32(0.5)) * s if half_pixel else i * s
    # NOTE: C's roundf rounds halves away from zero (np.round would round them to even)
    idx = np.floor(src + np.float32(0.5)) if align_corners else np.floor(src)
    return np.clip(idx, 0, n_in - 1).astype(np.int64)


def _lerp(a, b, t):
    return a + (b - a) * t
