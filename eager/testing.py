"""`torch.testing`: `assert_close` (and the deprecated `assert_allclose`) with torch's default
tolerances per dtype, its recursion into sequences and mappings, and its messages.

>>> from dualgrad import eager as torch
>>> torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0000001]))
>>> try:
...     torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))
... except AssertionError as e:
...     print(str(e).splitlines()[0])
Tensor-likes are not close!
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from dualgrad.ops.rules import is_bfloat16

from .core import Tensor
from .info import Size

__all__ = ["assert_close", "assert_allclose"]

# (rtol, atol) when the caller gives neither: torch's table; exact for the rest
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),   # NOTE: by name (lazy bfloat16)
               "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
# assert_allclose's older table
_OLD_TOLERANCES = {np.dtype(np.float16): (1e-3, 1e-3), np.dtype(np.float32): (1e-4, 1e-5),
                   np.dtype(np.float64): (1e-5, 1e-8)}


class _Mismatch(Exception):
    def __init__(self, message, path="", structural=False):
        super().__init__(message)
        self.message, self.path, self.structural = message, path, structural


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected are close: tensors (or NumPy arrays)
    of the same shape and dtype whose values satisfy |actual - expected| <= atol + rtol *
    |expected| (integers and bools exactly), Python numbers, None, or sequences and mappings
    of them, compared item by item."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    try:
        _compare(actual, expected, (rtol, atol), equal_nan, check_dtype, "")
    except _Mismatch as m:
        text = m.message + (f"\n\nThe failure occurred for item {m.path}" if m.path else "")
        if msg is not None and not m.structural:   # NOTE: as torch: not for lengths, keys
            text = msg(text) if callable(msg) else msg
        raise AssertionError(text) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated in torch since 1.12 (use assert_close): expected is made a tensor of
    actual's dtype first, and the tolerances are torch's older ones."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    actual = actual if isinstance(actual, Tensor) else Tensor(np.asarray(actual))
    dt = np.dtype(actual.dtype)
    expected = Tensor(np.asarray(expected.numpy() if isinstance(expected, Tensor) else expected,
                                 dtype=dt))
    if rtol is None and atol is None:
        rtol, atol = _OLD_TOLERANCES.get(dt, (0.0, 0.0))
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)


# -- the pairs ---------------------------------------------------------------------------------
def _compare(a, e, tol, equal_nan, check_dtype, path):
    if a is None or e is None:
        if a is not e:
            raise _Mismatch(f"None mismatch: {a} is not {e}", path)
    elif _is_array(a) or _is_array(e):
        _arrays(a, e, tol, equal_nan, check_dtype, path)
    elif isinstance(a, (bool, np.bool_)) and isinstance(e, (bool, np.bool_)):
        if bool(a) != bool(e):
            raise _Mismatch(f"Booleans mismatch: {a} is not {e}", path)
    elif _is_number(a) and _is_number(e):
        if check_dtype and type(a) is not type(e):
            raise _Mismatch(f"The (d)types do not match: {type(a)} != {type(e)}.", path)
        _values(np.asarray(a), np.asarray(e), tol, equal_nan, path, scalar=True)
    elif isinstance(a, Mapping) and isinstance(e, Mapping):
        _mappings(a, e, tol, equal_nan, check_dtype, path)
    elif _is_sequence(a) and _is_sequence(e):
        if len(a) != len(e):
            raise _Mismatch(f"The length of the sequences mismatch: {len(a)} != {len(e)}", path,
                            structural=True)
        for i, (x, y) in enumerate(zip(a, e)):
            _compare(x, y, tol, equal_nan, check_dtype, f"{path}[{i}]")
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(a)} and "
                        f"{type(e)}.")


def _is_array(x):
    return isinstance(x, (Tensor, np.ndarray))


def _is_number(x):
    return isinstance(x, (int, float, complex, np.number)) and not isinstance(x, bool)


def _is_sequence(x):
    return isinstance(x, Sequence) and not isinstance(x, (str, bytes))


def _mappings(a, e, tol, equal_nan, check_dtype, path):
    if set(a) != set(e):
        missing, extra = sorted(set(e) - set(a), key=repr), sorted(set(a) - set(e), key=repr)
        raise _Mismatch(f"The keys of the mappings do not match:\n"
                        f"Missing keys in the actual mapping: {missing}\n"
                        f"Additional keys in the actual mapping: {extra}", path, structural=True)
    for k in a:
        _compare(a[k], e[k], tol, equal_nan, check_dtype, f"{path}[{k!r}]")


def _arrays(a, e, tol, equal_nan, check_dtype, path):
    if not (isinstance(a, Tensor) and isinstance(e, Tensor)
            or isinstance(a, np.ndarray) and isinstance(e, np.ndarray)):
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(a)} and "
                        f"{type(e)}.")
    x, y = (v.numpy() if isinstance(v, Tensor) else v for v in (a, e))
    if x.shape != y.shape:
        raise _Mismatch(f"The values for attribute 'shape' do not match: {Size(x.shape)!r} != "
                        f"{Size(y.shape)!r}.", path)
    if x.dtype != y.dtype:
        if check_dtype:
            raise _Mismatch(f"The values for attribute 'dtype' do not match: torch.{x.dtype} != "
                            f"torch.{y.dtype}.", path)
        if tol[0] is None:
            tol = tuple(max(p) for p in zip(_defaults(x.dtype), _defaults(y.dtype)))
        common = np.promote_types(x.dtype, y.dtype)
        x, y = x.astype(common), y.astype(common)
    _values(x, y, tol, equal_nan, path, scalar=x.ndim == 0)


def _defaults(dt):
    return _TOLERANCES.get(np.dtype(dt).name, (0.0, 0.0))


def _values(x, y, tol, equal_nan, path, scalar):
    rtol, atol = _defaults(x.dtype) if tol[0] is None else tol
    ints = x.dtype.kind in "biu"
    # NOTE: bools and integers differ as int64, relatively in float32 (torch's true
    # division); a scalar's values compare as Python numbers
    xs, ys = (v.astype(np.int64) if ints else
              v.astype(np.float64) if scalar and v.dtype.kind == "f" or is_bfloat16(v.dtype)
              else v for v in (x, y))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(xs - ys)
        ok = (diff <= atol + rtol * np.abs(ys)) | (xs == ys)   # NOTE: equal infinities
        if equal_nan:
            ok |= np.isnan(xs) & np.isnan(ys)
        if ok.all():
            return
        rel = (diff.astype(np.float32) / np.abs(ys).astype(np.float32) if ints and not scalar
               else diff / np.abs(ys))
    equal = rtol == 0 and atol == 0
    what = "equal" if equal else "close"
    if scalar:
        lines = [f"Scalars are not {what}!", "", f"Expected {_num(ys)} but got {_num(xs)}.",
                 f"Absolute difference: {_num(diff)}" + _allowed(atol, equal),
                 f"Relative difference: {_num(rel)}" + _allowed(rtol, equal)]
    else:
        bad = int((~ok).sum())
        at_abs, at_rel = _argmax(diff), _argmax(rel)
        lines = [f"Tensor-likes are not {what}!", "",
                 f"Mismatched elements: {bad} / {ok.size} ({100.0 * bad / ok.size:.1f}%)",
                 f"Greatest absolute difference: {_num(diff[at_abs])} at index {at_abs}"
                 + _allowed(atol, equal),
                 f"Greatest relative difference: {_num(rel[at_rel])} at index {at_rel}"
                 + _allowed(rtol, equal)]
    raise _Mismatch("\n".join(lines), path)


def _argmax(v):
    """The index of the largest value, a NaN counting as largest (torch's argmax)."""
    flat = v.reshape(-1)
    nan = np.isnan(flat)
    i = int(np.argmax(nan)) if nan.any() else int(np.argmax(flat))
    return tuple(int(j) for j in np.unravel_index(i, v.shape))


def _num(v):
    return repr(np.asarray(v).item())


def _allowed(tol, equal):
    return "" if equal else f" (up to {tol!r} allowed)"
