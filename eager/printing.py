"""How a tensor prints, by torch's rules: `set_printoptions` and the text of `repr(t)`.

>>> from dualgrad import eager as torch
>>> torch.tensor([1.5e-05, 3.0])
tensor([1.5000e-05, 3.0000e+00])
>>> torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
tensor([[1, 2],
        [3, 4]], dtype=torch.int32)

One notation is chosen for a whole tensor (a complex one: one for its real parts, one for its
imaginary parts) from its finite non-zero values: integers (`1.`), fixed (`1.5000`), or
scientific when the largest magnitude is over 1e8, the smallest under 1e-4 or their ratio
over 1000. Every element is padded to one width, rows wrap at `linewidth`, and past
`threshold` elements only `edgeitems` rows at each end of every dimension are shown. The
options are process-wide and apply to dualgrad's tensors only (NumPy's are never touched).
"""
from __future__ import annotations

import math

import numpy as np

from dualgrad.ops.rules import is_bfloat16


class PrintOptions:
    """The options `set_printoptions` sets (torch's defaults)."""
    precision, threshold, edgeitems, linewidth, sci_mode = 4, 1000, 3, 80, None


OPTIONS = PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """torch.set_printoptions: a `profile` ("default", "short", "full") first, then each
    option given; `sci_mode` is always set (None: chosen per tensor).

    >>> from dualgrad import eager as torch
    >>> torch.set_printoptions(precision=2)
    >>> torch.tensor([1.12345])
    tensor([1.12])
    >>> torch.set_printoptions(profile="default")
    """
    if profile in _PROFILES:   # NOTE: torch ignores a profile it does not know
        (OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems,
         OPTIONS.linewidth) = _PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(OPTIONS, name, value)
    OPTIONS.sci_mode = sci_mode


class Notation:
    """One column format for a set of numbers: the notation and width torch would choose."""

    def __init__(self, values, floating):
        self.floating, self.ints, self.sci, self.width = floating, True, False, 1
        p = OPTIONS.precision
        if not floating:
            self.width = max([len(str(v)) for v in values.ravel().tolist()], default=1)
            return
        finite = values[np.isfinite(values) & (values != 0)]
        if finite.size == 0:
            return
        mags = np.abs(finite)
        lo, hi = float(mags.min()), float(mags.max())
        self.ints = bool(np.all(finite == np.ceil(finite)))
        self.sci = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4 if OPTIONS.sci_mode is None
                    else OPTIONS.sci_mode)
        uniq = np.unique(finite).tolist()
        if self.sci:
            self.width = max(len(f"{v:.{p}e}") for v in uniq)
        elif self.ints:
            self.width = max(len(f"{v:.0f}") + 1 for v in uniq)   # NOTE: + 1 for the "."
        else:
            self.width = max(len(f"{v:.{p}f}") for v in uniq)

    def format(self, v):
        if not self.floating:
            s = str(v)
        elif self.sci:
            s = f"{v:{self.width}.{OPTIONS.precision}e}"
        elif self.ints:
            s = f"{v:.0f}" if math.isinf(v) or math.isnan(v) else f"{v:.0f}."
        else:
            s = f"{v:.{OPTIONS.precision}f}"
        return s.rjust(self.width)


def _edges(arr):
    """The part of arr that a summarised print shows (what its notation is chosen from)."""
    e = OPTIONS.edgeitems
    if arr.ndim >= 2 and not e:
        return arr[(slice(0, 0),) * arr.ndim]
    for axis, n in enumerate(arr.shape):
        if n > 2 * e:
            keep = np.r_[0:e, n - e:n] if e else np.arange(n)   # NOTE: torch's x[-0:] is all
            arr = np.take(arr, keep, axis=axis)
    return arr


def _number(v, notes):
    if len(notes) == 1:
        return notes[0].format(v)
    re, im = notes[0].format(v.real), (notes[1].format(v.imag) + "j").lstrip()
    return re + im if im[0] in "+-" else re + "+" + im


def _vector(arr, indent, summarize, notes):
    e = OPTIONS.edgeitems
    width = notes[0].width + 2 + sum(n.width + 1 for n in notes[1:])   # NOTE: + 1 for "j"
    per_line = max(1, math.floor((OPTIONS.linewidth - indent) / width))
    if summarize and not e:
        items = ["..."]
    elif summarize and len(arr) > 2 * e:
        items = ([_number(v, notes) for v in _as_numbers(arr[:e]).tolist()] + [" ..."]
                 + [_number(v, notes) for v in _as_numbers(arr[-e:]).tolist()])
    else:
        items = [_number(v, notes) for v in _as_numbers(arr).tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr, indent, summarize, notes):
    """arr's text, its rows indented by `indent` (only the rows shown are read)."""
    if arr.ndim == 0:
        return _number(_as_numbers(arr).item(), notes)
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, notes)
    e, n = OPTIONS.edgeitems, len(arr)
    rows = (list(range(e)) + [None] + list(range(n - e, n)) if summarize and n > 2 * e
            else range(n))
    parts = ["..." if i is None else _nested(arr[i], indent + 1, summarize, notes)
             for i in rows]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _as_numbers(arr):
    """arr as float64 (exact for every float dtype), or itself for integers and bools."""
    if arr.dtype.kind == "c":
        return arr.astype(np.complex128)
    return arr.astype(np.float64) if arr.dtype.kind == "f" or is_bfloat16(arr.dtype) else arr


def body(arr, indent):
    """The bracketed values of a non-empty array, laid out after `indent` characters."""
    summarize = arr.size > OPTIONS.threshold
    shown = _as_numbers(_edges(arr) if summarize else arr)
    parts = (shown.real, shown.imag) if shown.dtype.kind == "c" else (shown,)
    notes = [Notation(p, shown.dtype.kind in "fc") for p in parts]
    return _nested(arr, indent, summarize, notes)


def dtype_name(dtype):
    return f"torch.{np.dtype(dtype).name}"


def _default_kind(dtype, default_float):
    cfloat = np.dtype(np.complex128 if default_float == np.float64 else np.complex64)
    return dtype in (default_float, cfloat, np.dtype(np.int64), np.dtype(np.bool_))


def _with_suffixes(text, suffixes, indent):
    out, last = [text], len(text) - text.rfind("\n") + 1   # NOTE: torch's count, + 2 on line 1
    for s in suffixes:
        if last + len(s) + 2 > OPTIONS.linewidth:
            out.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            out.append(", " + s)
            last += len(s) + 2
    return "".join(out) + ")"


def tensor_repr(arr, default_float, prefix="tensor(", grad_fn=None, requires_grad=False):
    """torch's text for a tensor holding `arr`: `grad_fn` its node's name, or None."""
    indent, suffixes = len(prefix), []
    if arr.size == 0:
        text = "[]"
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if arr.dtype != default_float:
            suffixes.append(f"dtype={dtype_name(arr.dtype)}")
    else:
        text = body(arr, indent)
        if not OPTIONS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if not _default_kind(arr.dtype, default_float):
            suffixes.append(f"dtype={dtype_name(arr.dtype)}")
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + text, suffixes, indent)


__all__ = ["set_printoptions"]
