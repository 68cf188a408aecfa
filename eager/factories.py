"""Tensor factories with PyTorch's signatures: sizes, dtype=, device=, requires_grad=, generator=.

>>> from dualgrad import eager
>>> eager.full((2,), 3).dtype, eager.linspace(0, 1, 5).tolist()
(torch.int64, [0.0, 0.25, 0.5, 0.75, 1.0])
"""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from dualgrad.ops.core import TRACING, user_stacklevel
from dualgrad.ops.rules import (HALF, as_operand, complex_of, floating, inexact,
                                torch_floating_only)
from dualgrad.ops.symbolic import Dim

from .devices import META_IMPL as _META, check as _check_device, is_meta as _is_meta
from .formats import array_order, format_order, in_order, laid_out
from .core import DEFAULT_FLOAT as _DEFAULT_FLOAT, Tensor, default_float  # noqa: F401 - others import it here
from .core import no_complex_autograd
from .dtypes import of as torch_dtype


def set_default_dtype(d):
    dtype = np.dtype(d)
    if not floating(dtype):
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the "
                        f"default type, got {dtype}")
    _DEFAULT_FLOAT[0] = dtype


def get_default_dtype():
    return torch_dtype(_DEFAULT_FLOAT[0])


def _make(arr, dtype, device, requires_grad):
    """The one exit of every factory: device check, dtype, leaf that may require grad."""
    _check_device(device)
    if dtype is not None and arr.dtype != np.dtype(dtype):
        arr = arr.astype(dtype)
    if requires_grad and not inexact(arr.dtype):
        raise RuntimeError(f"Only Tensors of floating point and complex dtype can require "
                           f"gradients, got {arr.dtype}")
    if requires_grad and arr.dtype.kind == "c":
        raise no_complex_autograd("requires_grad=True")
    return Tensor(arr, requires_grad)


def _dtype_of(data):
    """torch.tensor's inference: Python floats -> the default float, ints -> int64."""
    if isinstance(data, Tensor):
        return data.dtype
    arr = np.asarray(data)
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        return arr.dtype
    if floating(arr.dtype):
        return _DEFAULT_FLOAT[0]
    if arr.dtype.kind in "iu":
        return np.dtype(np.int64)
    if arr.dtype.kind == "c":   # NOTE: Python complex numbers: the default float's complex
        return complex_of(_DEFAULT_FLOAT[0])
    return arr.dtype


def _size(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) for s in shape)


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new leaf tensor holding a copy of `data` (a list, scalar, ndarray or Tensor)."""
    if isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in data):
        data = [np.asarray(d._array if isinstance(d, Tensor) else d) for d in data]
        data = np.array(data) if data else data
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=user_stacklevel())
    src = data._array if isinstance(data, Tensor) else data
    if dtype is not None and np.dtype(dtype).kind in "iu" and \
            not isinstance(data, (Tensor, np.ndarray)):
        _floats_fit(src, np.dtype(dtype))
    try:
        arr = np.array(src, dtype=dtype if dtype is not None else _dtype_of(data), copy=True)
    except OverflowError:   # NOTE: NumPy 2 refuses uint8's -1; torch's c10 check wraps it
        arr = _ints_as_torch(src, np.dtype(dtype))
    t = _make(arr, None, device, requires_grad)
    return from_host(t) if isinstance(data, np.ndarray) else t


def _ints_as_torch(src, dt):
    """Python ints into an integer dtype as torch's tensor() reads them: an unsigned dtype
    takes -max..max (tensor(-1, dtype=uint8) is 255), a signed one its range; anything else
    raises torch's error."""
    try:
        wide = np.array(src, dtype=np.int64)
    except OverflowError:
        wide = None
    info = np.iinfo(dt) if dt.kind in "iu" else None
    low = None if info is None else info.min if dt.kind == "i" else -int(info.max)
    if wide is None or info is None or wide.size and (wide.min() < low or wide.max() > info.max):
        raise RuntimeError(f"value cannot be converted to type {dt} without overflow")
    return wide.astype(dt)


def _floats_fit(src, dt):
    """torch's tensor(): a Python float into an integer dtype must lie in its range (255.9 and
    -0.5 do not fit uint8, nor do nan and inf); it is then truncated."""
    probe = np.asarray(src)
    if probe.dtype.kind != "f" or not probe.size:
        return
    info = np.iinfo(dt)
    if not np.isfinite(probe).all() or probe.min() < info.min or probe.max() > info.max:
        raise RuntimeError(f"value cannot be converted to type {dt} without overflow")


def as_tensor(data, dtype=None, device=None):
    """`data` itself when it is a tensor of that dtype; shares a NumPy array's memory."""
    _check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == np.dtype(dtype) else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == np.dtype(dtype)):
        return from_host(Tensor(data))
    return tensor(data, dtype)


def from_numpy(arr):
    """A tensor sharing memory with `arr` (no copy), as torch.from_numpy."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return from_host(Tensor(arr))


def _meta(size, dtype, device, requires_grad, like=None):
    """The factory's tensor on the meta device (eager/meta.py), or None for any other device:
    the size (ints and symbolic dims) and dtype, no values drawn or stored."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if not (_is_meta(device) or device is None and like is not None and _META["is_meta"](like)
            or any([isinstance(d, Dim) for d in size])):   # NOTE: only meta has symbolic sizes
        return None
    return _META["empty"](size, dtype, requires_grad)


def from_host(t):
    """A tensor made from host data (an ndarray): what `eager.check` turns into a meta batch."""
    return _META["host"](t) if TRACING[0] else t


def _filled(fill, shape, dtype, device, requires_grad):
    m = _meta(shape, dtype, device, requires_grad)
    if m is not None:
        return m
    return _make(fill(_size(shape), dtype or _DEFAULT_FLOAT[0]), None, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kw):
    return _filled(np.zeros, _size_kw("zeros", size, kw), dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kw):
    return _filled(np.ones, _size_kw("ones", size, kw), dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    # NOTE: zero-filled, not uninitialised: reading it is then at least deterministic
    t = _filled(np.zeros, _size_kw("empty", size, kw), dtype, device, requires_grad)
    return _laid(t, None, memory_format, "empty")


def _size_kw(fn, size, kw):
    """torch's factories also take the shape as `size=` (`torch.empty(size=(2, 3))`)."""
    if "size" in kw:
        if size:
            raise TypeError(f"{fn}() received the size both positionally and as size=")
        size = (kw.pop("size"),)
    if kw:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{next(iter(kw))}'")
    return size


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dtype = np.dtype(np.bool_) if isinstance(fill_value, bool) else np.dtype(np.int64) \
            if isinstance(fill_value, int) else complex_of(_DEFAULT_FLOAT[0]) \
            if isinstance(fill_value, complex) else _DEFAULT_FLOAT[0]
    size = (size,) if isinstance(size, int) else tuple(size)
    m = _meta(size, dtype, device, requires_grad)
    if m is not None:
        return m
    return _make(np.full(size, _fill_value(fill_value, dtype), dtype), None, device,
                 requires_grad)


def _fill_value(fill_value, dtype):
    value = getattr(fill_value, "_array", fill_value)
    if type(value) is int and np.dtype(dtype).kind in "iu":
        value = as_operand(value, np.dtype(dtype))   # NOTE: full((2,), -5, uint8) is 251, as torch
    return value


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return _make(np.eye(n, m, dtype=dtype or _DEFAULT_FLOAT[0]), None, device, requires_grad)


def _like(t, dtype):
    return tuple(t.shape), dtype or t.dtype


def _laid(t, like, fmt, name):
    """A new tensor t laid out in memory format fmt, or (preserve_format, the default) in the
    order `like`'s elements lie in, as torch's factories: strides change, values do not."""
    order = format_order(name, fmt, len(t.shape))
    arr = getattr(t, "_array", None)
    if TRACING[0] or not isinstance(arr, np.ndarray):
        return t                        # NOTE: a traced or meta value has no memory to lay out
    if order is None:
        src = getattr(like, "_array", None)
        if not isinstance(src, np.ndarray):
            return t
        order = array_order(src)
    if not in_order(arr, order):
        t._array = laid_out(arr, order)
    return t


def zeros_like(input, dtype=None, device=None, requires_grad=False, *,  # noqa: A002
               memory_format=None):
    shape, dt = _like(input, dtype)
    m = _meta(shape, dt, device, requires_grad, like=input)
    return m if m is not None else _laid(_make(np.zeros(shape, dt), None, device, requires_grad),
                                         input, memory_format, "zeros_like")


def ones_like(input, dtype=None, device=None, requires_grad=False, *,  # noqa: A002
              memory_format=None):
    shape, dt = _like(input, dtype)
    m = _meta(shape, dt, device, requires_grad, like=input)
    return m if m is not None else _laid(_make(np.ones(shape, dt), None, device, requires_grad),
                                         input, memory_format, "ones_like")


empty_like = zeros_like


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, *,  # noqa: A002
              memory_format=None):
    shape, dt = _like(input, dtype)
    m = _meta(shape, dt, device, requires_grad, like=input)
    if m is not None:
        return m
    filled = np.full(shape, _fill_value(fill_value, dt), dt)
    return _laid(_make(filled, None, device, requires_grad), input, memory_format, "full_like")


def _random(generator, shape, dtype, sample, device, requires_grad):
    """A factory's random tensor: drawn now, or at every call of a compiled function."""
    from .generator import drawn
    arr = drawn(generator, shape, dtype, sample)
    return _make(arr, None, device, requires_grad) if isinstance(arr, np.ndarray) else arr


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples from `generator` (or the one manual_seed() seeds)."""
    m = _meta(size, dtype, device, requires_grad)
    if m is not None:
        return m
    shape = _size(size)
    torch_floating_only("check_uniform_bounds", dtype or _DEFAULT_FLOAT[0])
    return _random(generator, shape, dtype or _DEFAULT_FLOAT[0],
                   _parts(dtype, shape, lambda g, s: g.random(s)), device, requires_grad)


def _parts(dtype, shape, draw, scale=1.0):
    """A draw of `shape`; for a complex dtype, torch's: real and imaginary parts drawn each
    (a standard normal's parts with variance 1/2, `scale`), so the modulus has torch's law."""
    if dtype is None or np.dtype(dtype).kind != "c":
        return lambda g: draw(g, shape)

    def both(g):
        v = draw(g, tuple(shape) + (2,)) * scale
        return v[..., 0] + 1j * v[..., 1]
    return both


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard-normal samples from `generator` (or the one manual_seed() seeds)."""
    m = _meta(size, dtype, device, requires_grad)
    if m is not None:
        return m
    shape = _size(size)
    torch_floating_only("normal_kernel_cpu", dtype or _DEFAULT_FLOAT[0])
    return _random(generator, shape, dtype or _DEFAULT_FLOAT[0],
                   _parts(dtype, shape, lambda g, s: g.standard_normal(s), math.sqrt(0.5)),
                   device, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, *,  # noqa: A002
              memory_format=None):
    return _laid(rand(*input.shape, dtype=dtype or input.dtype, device=device,
                      requires_grad=requires_grad), input, memory_format, "rand_like")


def randn_like(input, dtype=None, device=None, requires_grad=False, *,  # noqa: A002
               memory_format=None):
    return _laid(randn(*input.shape, dtype=dtype or input.dtype, device=device,
                       requires_grad=requires_grad), input, memory_format, "randn_like")


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size): integers in [low, high), int64."""
    args = list(args)
    if size is None:
        if not args or not isinstance(args[-1], (tuple, list)):
            raise TypeError("randint() missing 1 required argument: 'size' (a tuple, e.g. (3,))")
        size = args.pop()
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError(f"randint(): expected (high, size) or (low, high, size), got {len(args)}"
                        f" bounds")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    m = _meta(tuple(size), dtype or np.int64, device, requires_grad)
    if m is not None:
        return m
    shape = tuple(size)
    return _random(generator, shape, dtype or np.int64, lambda g: g.integers(low, high, shape),
                   device, requires_grad)


def randint_like(input, low=0, high=None, dtype=None, device=None, *,  # noqa: A002
                 memory_format=None):
    if high is None:
        low, high = 0, low
    return _laid(randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                         device=device), input, memory_format, "randint_like")


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    n = int(n)
    return _random(generator, (n,), dtype or np.int64, lambda g: g.permutation(n), device,
                   requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Integers (int64) when start, end and step are all integers, else the default float.
    As torch's CPU kernel: start + step * i, computed in int64 for an integer dtype (start,
    end and step truncated first) and in double otherwise."""
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v) for v in (start, end, step))
    ints = builtins.all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                        for v in (start, end, step))
    dt = np.dtype(dtype or (np.int64 if ints else _DEFAULT_FLOAT[0]))
    _range_checks(start, end, step)
    if dt.kind not in "iu":
        return _make(np.arange(start, end, step, dtype=np.float64), dt, device, requires_grad)
    xs, xstep = int(start), int(step)   # NOTE: torch's int64 accumulator truncates them
    if dt == np.int64:   # NOTE: torch counts int64 steps in integers, other dtypes' in double
        if not xstep:
            raise ValueError("step must be nonzero")
        size = _c_div(int(end) - xs + xstep - (1 if xstep > 0 else -1), xstep)
    else:
        size = math.ceil((end - start) / step)
    arr = (xs + xstep * np.arange(size, dtype=np.int64)).astype(dt)
    return _make(arr, dt, device, requires_grad)


def _c_div(a, b):
    """a / b rounded toward zero, as C's integer division."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _range_checks(start, end, step):
    if not step:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {float(start):g} -> {float(end):g}")
    if not (step > 0 and end >= start or step < 0 and end <= start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def range(start, end, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """torch.range (deprecated in torch too): start, start + step, ... up to and including
    end, in the default float dtype unless `dtype` says otherwise."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    arr = start + np.arange(n, dtype=np.float64) * step
    return _make(arr, dtype or _DEFAULT_FLOAT[0], device, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    dt = np.dtype(dtype or _DEFAULT_FLOAT[0])
    if dt.kind == "c":
        return _make(np.linspace(complex(start), complex(end), int(steps)), dt, device,
                     requires_grad)
    return _make(linspace_values(start, end, _steps(steps), dt), dt, device, requires_grad)


def linspace_values(start, end, steps, dt):
    """As torch's CPU kernel, an array of the real dtype dt: start + step * i up to halfway,
    end - step * (steps - 1 - i) after, with start and end first converted to the dtype; in
    double for an integer dtype (then truncated), else in the dtype. histc's bin edges are
    these values."""
    s, e = (_converted(_number(v), dt) for v in (start, end))
    if steps <= 1:
        return np.full(steps, s, dt)
    i = np.arange(steps)
    up, down = i.astype(np.float64), (steps - 1 - i).astype(np.float64)
    if dt in HALF:   # NOTE: c10's Half and BFloat16 round every product and sum
        step = (e - s) / dt.type(steps - 1)
        return np.asarray(np.where(i < steps // 2, s + step * up.astype(dt),
                                   e - step * down.astype(dt)), dt)
    wide = np.float64 if dt.kind in "iu" else dt.type
    step = float(wide((wide(e) - wide(s)) / wide(steps - 1)))
    # NOTE: the kernel's a + b * c compiles to one fused multiply-add (x86 builds with FMA)
    vals = np.where(i < steps // 2, _fma(step, up, float(s), wide),
                    _fma(-step, down, float(e), wide))
    return _c_cast(vals, dt)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end) as torch's CPU kernel: exponents and powers (the C
    library's pow) in double, base in float for an integer dtype, start and end first
    converted to the dtype."""
    dt = np.dtype(dtype or _DEFAULT_FLOAT[0])
    steps = _steps(steps)
    if steps == 1:
        return _make(_c_cast([_pow(float(base), float(_number(start)))], dt), dt, device,
                     requires_grad)
    s, e = (_converted(_number(v), dt) for v in (start, end))
    b = float(np.float32(base)) if dt.kind in "iu" else float(base)
    step = float(e - s) / (steps - 1)    # NOTE: e - s in dt (rounded, for a half dtype)
    i = np.arange(steps)
    exps = np.where(i < steps // 2, float(s) + step * i, float(e) - step * (steps - 1 - i))
    return _make(_c_cast([_pow(b, x) for x in exps.tolist()], dt), dt, device, requires_grad)


def _pow(b, x):
    """C's pow (NumPy's power may differ from it in the last bit)."""
    try:
        return math.pow(b, x)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


def _fma(a, b, c, dt):
    """a * b + c rounded once to dt (float32, or float64 through Dekker's exact product)."""
    if dt is not np.float64:
        return (a * b + c).astype(dt)      # NOTE: a float32 product is exact in double
    split = 134217729.0 * a                # NOTE: 2**27 + 1, Veltkamp's splitting
    ah = split - (split - a)
    al = a - ah
    split = 134217729.0 * b
    bh = split - (split - b)
    bl = b - bh
    p = a * b
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    total = p + c
    back = total - p
    return total + (((p - (total - back)) + (c - back)) + err)


def _steps(steps):
    steps = int(_number(steps))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return steps


def _number(v):
    return v.item() if isinstance(v, (Tensor, np.generic)) else v


def _converted(v, dt):
    """A Python number as torch's Scalar.to<dt>: truncated (and wrapped) for an integer dtype,
    rounded through float32 for a half one."""
    if dt.kind in "iu":
        return int(np.array(int(v)).astype(dt))
    return _c_cast(np.float64(v), dt)[()]


def _c_cast(a, dt):
    """Doubles converted to dt as C++ does: truncated toward zero for an integer dtype (wrapped
    past its range), through float32 for float16 and bfloat16."""
    a = np.asarray(a, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):     # NOTE: inf and nan, as C gives them
        if dt.kind in "iu":
            return np.trunc(a).astype(np.int64).astype(dt)
        return a.astype(np.float32).astype(dt) if dt in HALF else a.astype(dt)


__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye",
           "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn", "rand_like",
           "randn_like", "randint", "randint_like", "randperm", "arange", "range", "linspace",
           "logspace", "set_default_dtype", "get_default_dtype"]
