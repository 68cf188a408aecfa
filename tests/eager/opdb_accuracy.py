"""When torch's own result is the less accurate one: the op_db harness's rule for values.

dualgrad may be more accurate than torch, never less. A sample whose values differ from
torch's beyond the dtype's tolerance still passes when dualgrad's result is at least as close
to a higher-precision reference as torch's own result is, element by element
(`at_least_as_accurate`). The reference (`precise_result`):
- for a result below float64 (float16, bfloat16, float32), torch's own result on the same
  sample with its floating tensors and dtype arguments upcast to float64 (integer inputs
  kept);
- for an entry of `MPMATH_REFERENCES` (float64 results, which torch has no higher precision
  for, and every other dtype of the entry), mpmath's function at each element, at
  MPMATH_DIGITS digits.
Without a reference the difference stands. This is the "precise" comparison torch's own
test_ops applies to its Python references. It judges values only: a shape, dtype or
gradient that differs from torch's still fails (opdb_harness.compare, check_grads).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import torch

VALUES_DIFFER = "values differ"
MPMATH_DIGITS = 40
# op_db entry -> its function of one argument in mpmath
MPMATH_REFERENCES = {
    "special.bessel_j0": lambda x: mpmath.besselj(0, x),
    "special.bessel_j1": lambda x: mpmath.besselj(1, x),
    "special.bessel_y1": lambda x: mpmath.bessely(1, x),
}
_BELOW_FLOAT64 = (torch.float16, torch.bfloat16, torch.float32)
_WIDE = {torch.complex64: torch.complex128}   # NOTE: complex64's reference is complex128


def at_least_as_accurate(ours, theirs, reference, dtype, rtol, atol):
    """Every element of dualgrad's result (`ours`) that is not within (rtol, atol) of torch's
    (`theirs`) is at least as close to the higher-precision `reference` as torch's is, up to
    the same tolerance: |ours - ref| <= |theirs - ref| + atol + rtol * |ref|. All three are
    float64 tensors of one shape; `dtype` is the results' own. Where torch's is not finite its
    error counts as 0 (ours must be within tolerance of the reference); a non-finite element
    of ours must be the reference rounded to `dtype` (an overflow), and a non-finite reference
    counts only where torch's is not finite either.

    >>> t = torch.tensor
    >>> at_least_as_accurate(t([1.0]), t([1.1]), t([1.01]), torch.float32, 1.3e-6, 1e-5)
    True
    >>> at_least_as_accurate(t([1.1]), t([1.0]), t([1.01]), torch.float32, 1.3e-6, 1e-5)
    False
    """
    o, t, r = ours.numpy(), theirs.numpy(), reference.numpy()
    r_d = reference.to(dtype).to(reference.dtype).numpy()
    with np.errstate(invalid="ignore", over="ignore"):
        agree = (np.isfinite(t) & (np.abs(o - t) <= atol + rtol * np.abs(t))) | (o == t) | \
            (np.isnan(o) & np.isnan(t))
        their_err = np.where(np.isfinite(t), np.abs(t - r), 0.0)
        closer = np.isfinite(o) & np.isfinite(r) & \
            (np.abs(o - r) <= their_err + atol + rtol * np.abs(r))
        rounded = ~np.isfinite(o) & ((o == r_d) | (np.isnan(o) & np.isnan(r_d))) & \
            (np.isfinite(r) | ~np.isfinite(t))
    return bool(np.all(agree | closer | rounded))


def precise_result(op, s, eid):
    """A higher-precision reference for the result of op_db entry `eid` (OpInfo `op`) on
    sample `s`, or None when there is none: the entry's mpmath function at each element of a
    one-argument sample (MPMATH_REFERENCES), else torch's result on the sample with its
    floating tensors and dtype arguments below float64 upcast to float64 (None when nothing
    is below float64, or when torch's float64 call raises)."""
    f = MPMATH_REFERENCES.get(eid)
    if f is not None:
        return None if s.args or s.kwargs else _mpmath_values(f, s.input)
    upcast = []

    def up(v):
        if isinstance(v, torch.Tensor) and v.dtype in _BELOW_FLOAT64 + (torch.complex64,):
            upcast.append(v)
            return v.detach().resolve_conj().to(_WIDE.get(v.dtype, torch.float64))
        if isinstance(v, torch.dtype) and v in _BELOW_FLOAT64 + (torch.complex64,):
            upcast.append(v)
            return _WIDE.get(v, torch.float64)
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(up(x) for x in v)
        if isinstance(v, dict):
            return {k: up(x) for k, x in v.items()}
        return v
    args, kwargs = up((s.input,) + tuple(s.args)), up(dict(s.kwargs))
    if not upcast:
        return None
    torch.manual_seed(1)
    try:
        with torch.no_grad():
            return op.op(*args, **kwargs)
    except Exception:  # noqa: BLE001 - torch has no float64 kernel for it: no reference
        return None


def _mpmath_values(f, x):
    """f at each element of the tensor x, at MPMATH_DIGITS digits, as float64: NaN where x is
    not finite or f(x) is not real."""
    def at(v):
        if not math.isfinite(v):
            return math.nan
        with mpmath.workdps(MPMATH_DIGITS):
            y = f(mpmath.mpf(v))
        return float(y.real) if not isinstance(y, mpmath.mpc) or y.imag == 0 else math.nan
    flat = [at(v) for v in x.detach().double().reshape(-1).tolist()]
    return torch.tensor(flat, dtype=torch.float64).reshape(x.shape)
