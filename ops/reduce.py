"""Reductions over axes: sum, max, argmax, and count (how many elements a reduction sees)."""
from __future__ import annotations

import numpy as np
from .rules import floating, inexact, is_bfloat16

from .core import Sample, ShapeError, Spec, bind, fmt_shape, primitive, register
from .elementwise import cast, div, eq, mul, where
from .rules import norm_axes, numel, reduced_shape, same
from .shape import broadcast_like, expand_dims, last_axis_sum, reverse


def _reduce_infer(name, out_dtype=None):
    def infer(x, axis=None, keepdims=False, **_):
        axes = norm_axes(name, axis, x.ndim, x)
        dt = out_dtype(x.dtype) if isinstance(out_dtype, type(_reduce_infer)) else out_dtype
        return same(x, shape=reduced_shape(x.shape, axes, keepdims), dtype=dt)
    return infer


def nonempty_reduction(name, shape, axis):
    """PyTorch's check before a reduction without an identity (max, min, argmax, argmin): an
    empty reduced dimension raises (a ShapeError in torch's words) instead of reaching the
    kernel. The TF1 front end does not call it (TF's reduce_max of an empty axis gives -inf;
    dualgrad's graph kernel raises at run time instead)."""
    shape = tuple(shape)
    if None in shape or 0 not in shape:   # NOTE: a 0-d tensor (one element) takes dim 0 or -1
        return
    if axis is None:
        raise ShapeError(f"{name}: expected reduction dim to be specified for "
                         f"input.numel() == 0 (input {fmt_shape(shape)}); specify the "
                         f"reduction dim with the 'dim' argument, as torch says")
    for a in norm_axes(name, axis, len(shape), shape):
        if shape[a] == 0:
            raise ShapeError(f"{name}: expected reduction dim {a} to have non-zero size, "
                             f"but input {fmt_shape(shape)} has none there")


def _sum_dtype(dt):
    """What the sum kernel (np.add.reduce) gives: bool and signed integers sum in int64,
    unsigned in uint64, floats in their own dtype. The front ends choose their own rule by
    casting first: PyTorch's (ops.rules.torch_sum_dtype), TF1's (the input's dtype)."""
    return np.dtype(np.int64) if dt.kind in "bi" else np.dtype(np.uint64) if dt.kind == "u" \
        else dt


def _keep(g, x, axis, keepdims):
    """g with the reduced axes put back as size-1 dims."""
    if keepdims or axis is None or x.ndim == 0:
        return g  # a 0-d gradient broadcasts as it is (torch lets a 0-d input take dim 0 or -1)
    if x.ndim is None:   # unknown rank: only axes counted from the front can be put back
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        if any(a < 0 for a in axes):
            raise ShapeError(f"sum: the gradient of a reduction over negative axes {axes} "
                             f"needs the input's rank, which is unknown")
        for a in sorted(axes):
            g = expand_dims(g, axis=a)
        return g
    axes = norm_axes("sum", axis, x.ndim)
    if len(axes) == x.ndim:
        return g  # a 0-d gradient broadcasts as it is
    for a in axes:
        g = expand_dims(g, axis=a)
    return g


def in_opmath(kernel):
    """kernel computing bfloat16 inputs in float32 and rounding its result once, as torch's
    CPU kernels accumulate (rules.torch_opmath_dtype); NumPy's bfloat16 loops round each step."""
    def run(x, *args, **kwargs):
        if not is_bfloat16(getattr(x, "dtype", None)):
            return kernel(x, *args, **kwargs)
        wide = [np.asarray(a, np.float32) if is_bfloat16(getattr(a, "dtype", None)) else a
                for a in (x,) + args]
        return np.asarray(kernel(*wide, **kwargs)).astype(x.dtype)
    run.__name__ = kernel.__name__
    return run


# NOTE: the ufuncs' reduce is what np.sum / np.max call, minus about 1 us of Python wrapping
# per call (the same dtypes, including int32 -> int64 sums, and the same errors).
@in_opmath
def _sum_kernel(x, axis=None, keepdims=False):
    if axis is not None and type(x) is np.ndarray and x.ndim >= 2 and \
            axis in (-1, x.ndim - 1, (-1,), (x.ndim - 1,)):
        r = last_axis_sum(x)
        if r is not None:
            return r if keepdims else r.reshape(x.shape[:-1])
    a = _short_inner_axis(x, axis)
    if a is not None:
        return _unrolled(np.add, x, a, keepdims)
    return np.add.reduce(x, axis=axis, keepdims=keepdims)


def _short_inner_axis(x, axis):
    """The axis of a float reduction over one short axis that is not the last (a max pool's
    window: (B*C, 4, L)), or None. NOTE: NumPy reduces such an axis 4-5x slower than
    k - 1 elementwise ops on its slices, which add in the same order."""
    if type(x) is not np.ndarray or x.dtype.kind != "f" or x.dtype.itemsize < 4 or \
            x.size < 4096:
        return None
    if type(axis) is tuple and len(axis) == 1:
        axis = axis[0]
    if type(axis) is not int or not -x.ndim <= axis < x.ndim - 1 or axis == -1:
        return None
    a = axis % x.ndim
    return a if 2 <= x.shape[a] <= 16 else None


def _unrolled(ufunc, x, a, keepdims):
    head = (slice(None),) * a
    r = ufunc(x[head + (0,)], x[head + (1,)])
    for k in range(2, x.shape[a]):
        ufunc(r, x[head + (k,)], out=r)
    return r.reshape(x.shape[:a] + (1,) + x.shape[a + 1:]) if keepdims else r


def _max_kernel(x, axis=None, keepdims=False, initial=None):
    if initial is None:   # NOTE: an empty axis then raises, as torch.amax and np.max do
        a = _short_inner_axis(x, axis)
        if a is not None:
            return _unrolled(np.maximum, x, a, keepdims)
        return np.maximum.reduce(x, axis=axis, keepdims=keepdims)
    return np.maximum.reduce(x, axis=axis, keepdims=keepdims, initial=initial)


def _sum_vjp(g, x, axis=None, keepdims=False, **kw):
    return (broadcast_like(_keep(g, x, axis, keepdims), x),)


def _max_vjp(g, x, axis=None, keepdims=False, out=None, **kw):
    # NOTE: ties share the gradient evenly (like torch.amax), so the rule stays symmetric.
    hit = cast(eq(x, broadcast_like(_keep(out, x, axis, keepdims), x)), x.dtype)
    share = hit / sum_(hit, axis=axis, keepdims=True)
    return (broadcast_like(_keep(g, x, axis, keepdims), x) * share,)


_RED_SAMPLES = (
    Sample(((3, 4),), {"axis": None}), Sample(((3, 4),), {"axis": 1}),
    Sample(((2, 3, 4),), {"axis": (0, 2), "keepdims": True}), Sample(((),), {"axis": None}),
    Sample(((2, 3),), {"axis": -1, "keepdims": True}), Sample(((2, 3, 4),), {"axis": 2}),
    Sample(((2, 3),), {"axis": 2}, match=r"axis 2 is out of range for 2-d input of \(2, 3\)"),
)


SUM = register("sum", _reduce_infer("sum", _sum_dtype), _sum_kernel, _sum_vjp, reduce="sum", reads=(),
               samples=_RED_SAMPLES,
               ref=lambda np, x, axis=None, keepdims=False: np.sum(x, axis=axis,
                                                                    keepdims=keepdims), complex=True, tf_name="Sum")
MAX = register("max", _reduce_infer("max"), _max_kernel, _max_vjp, reduce="max",
               samples=_RED_SAMPLES,
               ref=lambda np, x, axis=None, keepdims=False: np.max(x, axis=axis,
                                                                    keepdims=keepdims), tf_name="Max")


@in_opmath
def _prod_kernel(x, axis=None, keepdims=False):
    x = np.asarray(x)
    return np.multiply.reduce(x, axis=axis, keepdims=keepdims,
                              dtype=x.dtype if x.dtype.kind in "iuf" else None)


def _prod_vjp(g, x, axis=None, keepdims=False, **kw):
    """The product of the other elements, exact where x has zeros: with no zero in the
    reduced group it is prod / x; with one, it is the product of the nonzero ones at the zero
    and 0 elsewhere; with two or more, 0 everywhere. Written in ops, so it differentiates."""
    zero = eq(x, 0)
    nz = where(zero, 1.0, x)
    p_nz = broadcast_like(prod(nz, axis=axis, keepdims=True), x)
    zeros = broadcast_like(sum(cast(zero, x.dtype), axis=axis, keepdims=True), x)
    others = where(zero, where(eq(zeros, 1.0), p_nz, 0.0), where(eq(zeros, 0.0), p_nz / nz, 0.0))
    return (broadcast_like(_keep(g, x, axis, keepdims), x) * others,)


PROD = register("prod", _reduce_infer("prod"), _prod_kernel, _prod_vjp, category="reduction",
                samples=_RED_SAMPLES[:-1] + (
                    Sample((np.array([[0.5, 0.0, 2.0], [0.0, 3.0, 0.0]]),), {"axis": 1}),
                    Sample((np.array([[1.5, 0.0], [0.0, -2.0], [0.0, 0.0]]),), {"axis": 0}),
                    _RED_SAMPLES[-1]),
                ref=lambda np, x, axis=None, keepdims=False: np.prod(x, axis=axis,
                                                                     keepdims=keepdims), complex=True, tf_name="Prod")


def _argmax_infer(x, axis=-1, keepdims=False, **_):
    return _reduce_infer("argmax", np.int64)(x, axis=axis, keepdims=keepdims)


def _argmax_kernel(x, axis=-1, keepdims=False):
    return np.argmax(x, axis=axis, keepdims=keepdims)


ARGMAX = register("argmax", _argmax_infer, _argmax_kernel, None, category="other",
                  samples=(Sample(((3, 4),), {"axis": 1}, grad=False),),
                  ref=lambda np, x, axis=-1, keepdims=False: np.argmax(x, axis=axis,
                                                                       keepdims=keepdims), tf_name="ArgMax")


def _count_infer(x, axis=None, **_):
    norm_axes("count", axis, x.ndim, x)
    return Spec((), x.dtype if inexact(x.dtype) else np.dtype(np.float32))


def _count_kernel(x, axis=None):
    shape = np.shape(x)
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    n = 1
    for a in axes:
        n *= shape[a]
    dt = np.asarray(x).dtype
    return np.array(n, dtype=dt if inexact(dt) else np.float32)


COUNT = register("count", _count_infer, _count_kernel, None, category="other",
                 samples=(Sample(((3, 4),), {"axis": 1}, grad=False),),
                 ref=lambda np, x, axis=None: np.asarray(
                     x.size if axis is None else x.shape[axis],
                     dtype=x.dtype if floating(x.dtype) else np.float32))

def _cumsum_infer(x, axis, **_):
    norm_axes("cumsum", axis, x.ndim, x)
    return x


@in_opmath
def _cumsum_kernel(x, axis):
    return np.cumsum(x, axis=axis, dtype=np.asarray(x).dtype)


def _cumsum_vjp(g, x, axis, **kw):
    # NOTE: the adjoint of a running sum is the running sum of the reversed gradient, reversed
    return (reverse(cumsum(reverse(g, axis), axis), axis),)


CUMSUM = register("cumsum", _cumsum_infer, _cumsum_kernel, _cumsum_vjp, category="other", reads=(),
                  samples=(Sample(((3, 4),), {"axis": 1}), Sample(((5,),), {"axis": 0}),
                           Sample(((2, 3, 4),), {"axis": -3}),
                           Sample(((3,),), {"axis": 1}, match="axis 1 is out of range")),
                  ref=lambda np, x, axis: np.cumsum(x, axis=axis), complex=True)


def cumsum(x, axis):
    return bind(CUMSUM, x, axis=int(axis))


CUMSUM.fn = cumsum


@in_opmath
def _cumprod_kernel(x, axis):
    return np.cumprod(x, axis=axis, dtype=np.asarray(x).dtype)


def _cumprod_vjp(g, x, out=None, axis=0, **kw):
    # NOTE: TF's rule (reverse running sum of g * out, over x): inf/nan where x is 0, as TF
    return (div(reverse(cumsum(reverse(mul(g, out), axis), axis), axis), x),)


CUMPROD = register("cumprod", _cumsum_infer, _cumprod_kernel, _cumprod_vjp, category="other",
                   samples=(Sample(((3, 4),), {"axis": 1}), Sample(((5,),), {"axis": 0}),
                            Sample(((2, 3, 4),), {"axis": -3})),
                   ref=lambda np, x, axis: np.cumprod(x, axis=axis))


def cumprod(x, axis):
    return bind(CUMPROD, x, axis=int(axis))


CUMPROD.fn = cumprod
sum_, max_, argmax, count = (primitive(o) for o in (SUM, MAX, ARGMAX, COUNT))


def _axis(axis):
    if axis is None or isinstance(axis, int):
        return axis
    return tuple(int(a) for a in axis)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - the op's name
    return bind(SUM, x, axis=_axis(axis), keepdims=bool(keepdims))


def prod(x, axis=None, keepdims=False):
    return bind(PROD, x, axis=_axis(axis), keepdims=bool(keepdims))


def max(x, axis=None, keepdims=False, initial=None):  # noqa: A001
    """The max over `axis`; `initial` (NumPy's) is also compared, and is the result over an
    empty axis, which otherwise raises."""
    if initial is None:
        return bind(MAX, x, axis=_axis(axis), keepdims=bool(keepdims))
    return bind(MAX, x, axis=_axis(axis), keepdims=bool(keepdims), initial=float(initial))


def static_count(shape, axis):
    """The number of reduced elements when it is known at build time, else None (also when
    it is symbolic: a meta tensor's `N*8`)."""
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    n = numel([shape[a] for a in axes] if shape else [])   # a 0-d input's dim 0 / -1: 1
    return n if n is None or isinstance(n, int) else None


SUM.fn, MAX.fn, PROD.fn = sum, max, prod
sum_, max_ = sum, max
