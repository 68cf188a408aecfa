"""TF1's colour adjustments and their random forms (`tf.image.adjust_brightness`,
`adjust_contrast`, `adjust_saturation`, `adjust_hue`, `random_brightness`, ...), and
`resize_image_with_crop_or_pad`.

As in TF, an integer image is scaled to float32 in [0, 1] (divided by its dtype's max),
adjusted, and scaled back with saturation (times max + 0.5, clipped to the dtype's range,
truncated); float16 and float32 images are adjusted as they are, float64 ones in float32.
Brightness and contrast are differentiable compositions; saturation and hue convert each
pixel to HSV and back in one kernel, without a gradient, as TF's kernels. The random forms
draw one factor per call from dualgrad's generator (or the op's seed), not TF's stream.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> img = tf.constant(np.array([[[0.2, 0.4, 0.6]], [[0.4, 0.8, 1.0]]], np.float32))
>>> with tf.Session() as s:
...     np.round(s.run(tf.image.adjust_contrast(img, 2.0)).astype(float), 3).tolist()
[[[0.1, 0.2, 0.4]], [[0.5, 1.0, 1.2]]]
"""
from __future__ import annotations

import numpy as np

from dualgrad.ops.core import Spec, located

from .augment import _node
from .core import convert_to_tensor, graph_op
from .math_ops import cast, clip_by_value, named, pad, random_uniform, reduce_mean
from .select_ops import slice as _slice

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "random_brightness", "random_contrast", "random_saturation", "random_hue",
           "resize_image_with_crop_or_pad"]


def _to_float(image, what):
    image = convert_to_tensor(image)
    dt = np.dtype(image.dtype)
    if dt.kind not in "iuf":
        raise TypeError(f"{what}: image dtype must be floating point or integer, got {dt} "
                        f"('{image.name}')")
    if dt == np.float16 and what != "adjust_brightness":
        raise TypeError(f"{what}: TF has no float16 kernel for it; cast the image to float32 "
                        f"('{image.name}')")
    if dt in (np.float16, np.float32):
        return image, dt
    flt = cast(image, np.float32)
    return (flt * np.float32(1.0 / np.iinfo(dt).max) if dt.kind in "iu" else flt), dt


def _back(x, dt):
    """TF's convert_image_dtype(x, dt, saturate=True) from float32 (or float16)."""
    if dt.kind == "f":
        return x if np.dtype(x.dtype) == dt else cast(x, dt)
    info = np.iinfo(dt)
    top = np.float32(info.max)
    if int(top) > info.max:   # NOTE: int32's max rounds up in float32; TF clips below it
        top = np.nextafter(top, np.float32(0))
    scaled = clip_by_value(x * np.float32(info.max + 0.5), np.float32(info.min), top)
    return cast(scaled, dt)


@named
def adjust_brightness(image, delta):
    """image + delta (on the [0, 1] scale for integer images)."""
    flt, dt = _to_float(image, "adjust_brightness")
    return _back(flt + cast(convert_to_tensor(delta), flt.dtype), dt)


@named
def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean per image and channel over height and
    width (the last three dims are height, width, channels)."""
    flt, dt = _to_float(images, "adjust_contrast")
    if flt.ndim is not None and flt.ndim < 3:
        raise located(f"adjust_contrast: images must be at least 3-D (height, width, "
                      f"channels), got shape {tuple(flt.shape)}", ValueError)
    mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
    factor = cast(convert_to_tensor(contrast_factor), flt.dtype)
    return _back((flt - mean) * factor + mean, dt)


# -- HSV ------------------------------------------------------------------------------------
def _rgb_to_hsv(rgb):
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    spread = v - rgb.min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(v > 0, spread / v, 0.0)
        norm = 1.0 / (6.0 * spread)
        h = np.where(r == v, norm * (g - b),
                     np.where(g == v, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0))
    h = np.where(spread > 0, h, 0.0)
    h = np.where(h < 0, h + 1.0, h)
    return h, s, v


def _hsv_to_rgb(h, s, v):
    c = s * v
    m = v - c
    dh = h * 6.0
    sector = np.floor(dh).astype(np.int64)
    x = c * (1.0 - np.abs(np.mod(dh, 2.0) - 1.0))
    zero = np.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = [np.select([sector == k for k in range(6)], [t[i] for t in table], zero) + m
           for i in range(3)]
    return np.stack(out, axis=-1)


def _hsv_kernel(node):
    change = node.attrs["change"]

    def run(image, amount):
        rgb = image.astype(np.float32)
        h, s, v = _rgb_to_hsv(rgb)
        if change == "saturation":
            s = np.clip(s * amount, 0.0, 1.0)
        else:
            h = np.mod(h + amount, 1.0)
        return _hsv_to_rgb(h, s, v).astype(image.dtype)
    return run, False


HSV_ADJUST = graph_op("adjust_hsv", _hsv_kernel)


def _hsv(what, image, amount, name):
    flt, dt = _to_float(image, what)
    if flt.shape[-1] is not None and flt.shape[-1] != 3:
        raise located(f"{what}: the last dim of the image must be 3 (RGB), got shape "
                      f"{tuple(flt.shape)}", ValueError)
    amount = cast(convert_to_tensor(amount), np.float32)
    out = _node(HSV_ADJUST, [flt, amount], {"change": what[len("adjust_"):]},
                [Spec(tuple(flt.shape), np.dtype(flt.dtype))], name or what)[0]
    return _back(out, dt)


def adjust_saturation(image, saturation_factor, name=None):
    """The saturation of RGB pixels (..., 3) times saturation_factor, clipped to [0, 1]."""
    return _hsv("adjust_saturation", image, saturation_factor, name)


def adjust_hue(image, delta, name=None):
    """The hue of RGB pixels (..., 3) turned by delta (a fraction of the colour circle, in
    [-1, 1]), wrapping around."""
    return _hsv("adjust_hue", image, delta, name)


# -- random forms ---------------------------------------------------------------------------
def _draw(lower, upper, seed):
    return random_uniform([], lower, upper, seed=seed)


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _draw(-max_delta, max_delta, seed))


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    _check_range(lower, upper)
    return adjust_contrast(image, _draw(lower, upper, seed))


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor drawn uniformly from [lower, upper)."""
    _check_range(lower, upper)
    return adjust_saturation(image, _draw(lower, upper, seed))


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta drawn uniformly from [-max_delta, max_delta), max_delta <= 0.5."""
    if not 0 <= max_delta <= 0.5:
        raise ValueError("max_delta must be in the interval [0, 0.5].")
    return adjust_hue(image, _draw(-max_delta, max_delta, seed))


def _check_range(lower, upper):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")


# -- crop or pad ----------------------------------------------------------------------------
def resize_image_with_crop_or_pad(image, target_height, target_width):
    """An image (H, W, C) or batch (N, H, W, C) cropped around its centre or padded with
    zeros evenly on both sides (the extra row or column at the bottom / right) to
    target_height x target_width."""
    image = convert_to_tensor(image)
    if image.ndim not in (3, 4):
        raise located(f"resize_image_with_crop_or_pad: 'image' must have either 3 or 4 "
                      f"dimensions, got shape {tuple(image.shape)}", ValueError)
    if target_height <= 0 or target_width <= 0:
        raise ValueError("target_height and target_width must be > 0")
    h, w = image.shape[-3], image.shape[-2]
    if h is None or w is None:
        raise located("resize_image_with_crop_or_pad: dualgrad needs the image's height and "
                      "width known when the graph is built", ValueError)
    lead = image.ndim - 3
    crop_top, crop_left = max(h - target_height, 0) // 2, max(w - target_width, 0) // 2
    cropped = _slice(image, [0] * lead + [crop_top, crop_left, 0],
                     [-1] * lead + [min(h, target_height), min(w, target_width), -1])
    pad_top, pad_left = max(target_height - h, 0) // 2, max(target_width - w, 0) // 2
    pads = [[0, 0]] * lead + [[pad_top, max(target_height - h, 0) - pad_top],
                              [pad_left, max(target_width - w, 0) - pad_left], [0, 0]]
    return pad(cropped, pads)
