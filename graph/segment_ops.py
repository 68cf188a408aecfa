"""TF1's unsorted segment reductions beyond the sum, and counting: `unsorted_segment_max`,
`_min`, `_prod`, `_mean`, `_sqrt_n` (also under `math.`), `bincount`,
`histogram_fixed_width` and `confusion_matrix`.

A segment reduction combines the rows of `data` that share a segment id (segment_ids' shape
is a prefix of data's); a negative id drops its row, an id >= num_segments raises
InvalidArgumentError when run, as TF on the CPU. An empty segment is TF's start value: the
dtype's lowest for max (not -inf: `numeric_limits::lowest`), its highest for min, 1 for prod,
0 for mean and sqrt_n. Max, min and prod combine rows with the `scatter_rows` graph op
(graph/scatter_nd_ops.py) and have TF's gradients (ties share evenly; prod divides the
product by the element, or takes the product of the others where it is 0); mean and sqrt_n
are sums over counts. bincount and histogram_fixed_width count at run time and have no
gradient, as TF; confusion_matrix is TF's scatter_nd of its weights.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> m = tf.unsorted_segment_max(tf.constant([1.0, 5.0, 3.0]), [0, 0, 2], num_segments=3)
>>> with tf.Session() as s:
...     s.run(m)
array([ 5.0000000e+00, -3.4028235e+38,  3.0000000e+00], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import Spec, fmt_shape

from .array_ops import FILL, _node
from .core import Tensor, check_tf1_types, constant, convert_to_tensor, graph_op
from .dtypes import as_dtype
from . import math_ops
from .math_ops import cast, reduce_max, squeeze, truediv
from .naming import named
from .scatter_nd_ops import scatter_nd_as, scatter_rows
from .select_ops import _segment_sum, segment_result, segment_rows

__all__ = ["unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
           "unsorted_segment_mean", "unsorted_segment_sqrt_n", "bincount",
           "histogram_fixed_width", "confusion_matrix"]


# -- segment reductions ------------------------------------------------------------------------
def _start(how, dtype):
    if how == "prod":
        return 1
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if how == "max" else info.max


def _combined(what, how, data, segment_ids, num_segments):
    check_tf1_types("unsorted_segment_max", convert_to_tensor(data))
    x, safe, n, rest, static_n = segment_rows(what, data, segment_ids, num_segments)
    dims = ops.concat(ops.reshape(n + 1, (1,)), *[
        ops.reshape(ops.cast(d, np.int64), (1,)) for d in rest], axis=0) if rest else \
        ops.reshape(n + 1, (1,))
    static = (None if static_n is None else static_n + 1,) + tuple(
        d if isinstance(d, int) else None for d in rest)
    start = _node(FILL, [dims, constant(np.asarray(_start(how, x.dtype), x.dtype))], {},
                  Spec(static, x.dtype), "start")
    out = scatter_rows(x, safe, start, how, tie_into=False)
    return segment_result(out, x, static_n)


@named
def unsorted_segment_max(data, segment_ids, num_segments):
    """out[i] = the max of the rows with segment id i; the dtype's lowest where there are
    none (float32: -3.4e38, as TF)."""
    return _combined("unsorted_segment_max", "max", data, segment_ids, num_segments)


@named
def unsorted_segment_min(data, segment_ids, num_segments):
    """out[i] = the min of the rows with segment id i; the dtype's highest where there are
    none."""
    return _combined("unsorted_segment_min", "min", data, segment_ids, num_segments)


@named
def unsorted_segment_prod(data, segment_ids, num_segments):
    """out[i] = the product of the rows with segment id i; 1 where there are none."""
    return _combined("unsorted_segment_prod", "prod", data, segment_ids, num_segments)


def _count(what, data, segment_ids, num_segments):
    """TF's N: the rows per segment (at least 1), in data's dtype, shaped to divide the sum."""
    x, ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    ones = ops.ones_like(ops.cast(ids, x.dtype))
    n = _segment_sum(what, ones, ids, num_segments, False)
    if x.ndim is not None and ids.ndim is not None:
        n = ops.reshape(n, (-1,) + (1,) * (x.ndim - ids.ndim))
    return math_ops.maximum(n, ops.ones_like(n))


@named
def unsorted_segment_mean(data, segment_ids, num_segments):
    """The sum of each segment's rows over their count (0 for none); of integers TF's true
    division (int32 gives float64)."""
    total = _segment_sum("unsorted_segment_mean", data, segment_ids, num_segments, False)
    return truediv(total, _count("unsorted_segment_mean", data, segment_ids, num_segments))


@named
def unsorted_segment_sqrt_n(data, segment_ids, num_segments):
    """The sum of each segment's rows over the square root of their count (floats only)."""
    x = convert_to_tensor(data)
    if x.dtype.kind != "f":
        raise TypeError(f"unsorted_segment_sqrt_n: data must be floating (TF's sqrt), got "
                        f"{x.dtype.name} ('{x.name}')")
    total = _segment_sum("unsorted_segment_sqrt_n", x, segment_ids, num_segments, False)
    return total / ops.sqrt(_count("unsorted_segment_sqrt_n", x, segment_ids, num_segments))


# -- counting ------------------------------------------------------------------------------------
def _bincount_kernel(node):
    def run(arr, weights, size):
        arr, n = np.asarray(arr).reshape(-1), int(size)
        if arr.size and arr.min() < 0:
            raise ValueError(f"bincount: input arr must be non-negative, got {int(arr.min())}")
        w = np.asarray(weights)
        out = np.zeros(max(n, 0), w.dtype)
        keep = arr < n
        if w.size:
            np.add.at(out, arr[keep], w.reshape(-1)[keep])
        else:
            np.add.at(out, arr[keep], np.ones((), w.dtype))
        return out
    return run, False


BINCOUNT = graph_op("bincount", _bincount_kernel)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype="int32"):
    """How often each value 0, 1, ... occurs in `arr` (any shape, flattened): max(arr) + 1
    bins (0 for an empty arr), at least minlength, at most maxlength (larger values are not
    counted); with weights, their sums per bin, in the weights' dtype. A negative value
    raises when run. No gradient, as TF."""
    a = convert_to_tensor(arr)
    if a.dtype.kind not in "iu":
        a = cast(a, np.int32)     # NOTE: TF casts a non-integer arr to int32
    if a.dtype not in (np.int32, np.int64):
        raise TypeError(f"bincount: arr must be int32 or int64 (or not an integer), got "
                        f"{a.dtype.name} ('{a.name}')")
    flat = ops.reshape(a, (-1,))
    size = ops.cast(ops.gt(ops.count(flat), 0), a.dtype) * (reduce_max(flat) + 1)
    if minlength is not None:
        size = ops.maximum(size, ops.cast(convert_to_tensor(minlength), a.dtype))
    if maxlength is not None:
        size = ops.minimum(size, ops.cast(convert_to_tensor(maxlength), a.dtype))
    if weights is None:
        w = constant(np.zeros(0, as_dtype(dtype)))
    else:
        w = convert_to_tensor(weights)
        if a.ndim is not None and w.ndim is not None and None not in a.shape + w.shape and \
                w.shape != a.shape:
            raise ValueError(f"bincount: weights {fmt_shape(w.spec)} must have arr's shape "
                             f"{fmt_shape(a.spec)}")
    if w.dtype not in (np.int32, np.int64, np.float32, np.float64):
        raise TypeError(f"bincount: the counts' dtype must be int32, int64, float32 or "
                        f"float64, got {w.dtype.name}")
    return _node(BINCOUNT, [flat, w, size], {}, Spec((None,), w.dtype), "bincount")


def _histogram_kernel(node):
    def run(values, value_range, nbins):
        v, r, n = np.asarray(values).reshape(-1), np.asarray(value_range), int(nbins)
        if n <= 0:
            raise ValueError(f"histogram_fixed_width: nbins must be positive, got {n}")
        if not r[0] < r[1]:
            raise ValueError(f"histogram_fixed_width: value_range should satisfy "
                             f"value_range[0] < value_range[1], got {r.tolist()}")
        if v.dtype.kind == "f" and np.isnan(v).any():
            raise ValueError("histogram_fixed_width: values must not contain NaN")
        # NOTE: TF's kernel: clamp below, subtract in the values' dtype, divide in double by
        # the bin width, clamp above to the last bin, truncate
        step = (np.float64(r[1]) - np.float64(r[0])) / n
        with np.errstate(over="ignore"):
            shifted = (np.maximum(v, r[0]) - r[0]).astype(np.float64)
        bins = np.minimum(shifted / step, n - 1).astype(np.int64)
        return np.bincount(bins, minlength=n).astype(node.attrs["dtype"])
    return run, False


HISTOGRAM = graph_op("histogram_fixed_width", _histogram_kernel)


def histogram_fixed_width(values, value_range, nbins=100, dtype="int32", name=None):
    """The counts of `values` (any shape) in nbins equal bins over value_range [lo, hi): a
    value below lo counts in the first bin, one at or above hi in the last; NaN raises when
    run. int32 or int64 counts; no gradient."""
    v = convert_to_tensor(values)
    if v.dtype not in (np.int32, np.int64, np.float32, np.float64):
        raise TypeError(f"histogram_fixed_width: values must be int32, int64, float32 or "
                        f"float64, got {v.dtype.name} ('{v.name}')")
    r = value_range if isinstance(value_range, Tensor) else \
        constant(np.asarray(value_range, v.dtype))   # NOTE: TF converts it to values' dtype
    if r.dtype != v.dtype:
        raise TypeError(f"histogram_fixed_width: value_range has dtype {r.dtype.name}, values "
                        f"{v.dtype.name}")
    if r.ndim is not None and (r.ndim != 1 or r.shape[0] not in (None, 2)):
        raise located(f"histogram_fixed_width: value_range must have shape (2,), got "
                      f"{fmt_shape(r.spec)}")
    dt = as_dtype(dtype)
    if dt not in (np.int32, np.int64):
        raise TypeError(f"histogram_fixed_width: dtype must be int32 or int64, got {dt}")
    n = nbins if isinstance(nbins, Tensor) else constant(np.int32(nbins))
    if not isinstance(nbins, Tensor) and int(nbins) <= 0:
        raise ValueError(f"histogram_fixed_width: nbins must be positive, got {nbins}")
    size = None if isinstance(nbins, Tensor) else int(nbins)
    return _node(HISTOGRAM, [v, r, n], {"dtype": dt.name}, Spec((size,), dt),
                 name or "histogram_fixed_width")


@named
def confusion_matrix(labels, predictions, num_classes=None, dtype="int32", weights=None):
    """The (num_classes, num_classes) matrix whose [i, j] counts (or sums the weights of)
    the examples with label i and prediction j; num_classes defaults to the largest label or
    prediction + 1. A label or prediction outside [0, num_classes) raises when run."""
    lab, pred = _squeezed(convert_to_tensor(labels), convert_to_tensor(predictions))
    lab, pred = cast(lab, np.int64), cast(pred, np.int64)
    if lab.ndim is not None and pred.ndim is not None and (lab.ndim != 1 or pred.ndim != 1):
        raise ValueError(f"confusion_matrix: labels {fmt_shape(lab.spec)} and predictions "
                         f"{fmt_shape(pred.spec)} must be 1-d")
    if None not in (lab.shape[0], pred.shape[0]) and lab.shape[0] != pred.shape[0]:
        raise ValueError(f"confusion_matrix: labels {fmt_shape(lab.spec)} and predictions "
                         f"{fmt_shape(pred.spec)} must have one length")
    dt = as_dtype(dtype)
    if num_classes is None:
        n = math_ops.maximum(reduce_max(pred), reduce_max(lab)) + np.int64(1)
    elif isinstance(num_classes, Tensor):
        n = cast(num_classes, np.int64)
    else:
        n = int(num_classes)
    shape = [n, n]
    if weights is None:
        values = ops.ones_like(ops.cast(pred, dt))
    else:
        w = convert_to_tensor(weights)
        if w.ndim is not None and (w.ndim != 1 or None not in (w.shape[0], pred.shape[0])
                                   and w.shape[0] != pred.shape[0]):
            raise ValueError(f"confusion_matrix: weights {fmt_shape(w.spec)} must have the "
                             f"predictions' shape {fmt_shape(pred.spec)}")
        values = cast(w, dt)
    return scatter_nd_as("confusion_matrix", ops.stack(lab, pred, axis=1), values, shape)


def _squeezed(labels, predictions):
    """TF's remove_squeezable_dimensions: a last dim of 1 on the one with the larger rank."""
    if labels.ndim is None or predictions.ndim is None:
        return labels, predictions
    if labels.ndim == predictions.ndim + 1 and labels.shape[-1] == 1:
        return squeeze(labels, [-1]), predictions
    if predictions.ndim == labels.ndim + 1 and predictions.shape[-1] == 1:
        return labels, squeeze(predictions, [-1])
    return labels, predictions

