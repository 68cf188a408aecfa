"""Complex numbers: their parts as views (`real`, `imag`, `view_as_real`, `view_as_complex`),
`complex(real, imag)`, `conj` and `angle`, with torch's dtypes and checks.

Which other ops take complex operands is each op's own declaration (`Op.complex`); these are
the ops that exist for complex numbers. dualgrad has no complex autograd: eager refuses a
complex tensor that would require grad, so the gradient rules here see real inputs only.

>>> import numpy as np
>>> from dualgrad import ops
>>> z = np.array([1 + 2j, 3 - 1j], np.complex64)
>>> ops.real(z), ops.imag(z)
(array([1., 3.], dtype=float32), array([ 2., -1.], dtype=float32))
"""
from __future__ import annotations

import numpy as np

from .core import ComplexError, Sample, ShapeError, Spec, fmt_shape, register
from .rules import broadcast

# NOTE: the samples are real: the graph front end and compile() have no complex dtypes, so the
# registry's engine tests run real inputs; complex ones are tests/eager/test_complex_torch.py's


def _S(*args, **kw):
    return Sample(tuple(args), **kw)


def _real_dtype(dt):
    """The real dtype of a complex one's parts (complex64 -> float32); a real dtype itself."""
    dt = np.dtype(dt)
    return np.dtype(np.float32 if dt == np.complex64 else np.float64) if dt.kind == "c" else dt


def _real_infer(x, **_):
    return Spec(x.shape, _real_dtype(x.dtype))


def _imag_infer(x, **_):
    if x.dtype.kind != "c":
        raise ShapeError("imag is not implemented for tensors with non-complex dtypes.")
    return Spec(x.shape, _real_dtype(x.dtype))


# NOTE: NumPy's .real and .imag of a complex array are views of its memory (a write through
# them changes the complex tensor, as torch's); .real of a real array is the array itself
REAL = register("real", _real_infer, np.real, lambda g, x, **kw: (g,), category="other",
                view=True, complex=True,
                samples=(_S((3, 4)),), ref=lambda np, x: np.real(x))
def _imag_kernel(x):
    x = np.asarray(x)
    _imag_infer(Spec(x.shape, x.dtype))
    return x.imag


IMAG = register("imag", _imag_infer, _imag_kernel, None, category="other", view=True, complex=True,
                samples=(_S((2, 3), match="non-complex"),),
                ref=lambda np, x: np.imag(x))


def _as_real_infer(x, **_):
    if x.dtype.kind != "c":
        raise ShapeError("view_as_real is only supported for complex tensors")
    shape = None if x.shape is None else tuple(x.shape) + (2,)
    return Spec(shape, _real_dtype(x.dtype))


def _as_real_kernel(x):
    x = np.asarray(x)
    _as_real_infer(Spec(x.shape, x.dtype))
    return x[..., None].view(_real_dtype(x.dtype))   # NOTE: a view: (..., 1) complex -> (..., 2)


VIEW_AS_REAL = register("view_as_real", _as_real_infer, _as_real_kernel, None, category="other",
                        view=True, complex=True,
                        samples=(_S((2, 3), match="only supported for complex"),),
                        ref=lambda np, x: np.stack([np.real(x), np.imag(x)], -1))


def _no_complex32(opname, dtype):
    if dtype == np.float16:
        raise ComplexError(f"{opname}: float16 parts make torch's complex32 (ComplexHalf), "
                           f"which dualgrad does not have; cast them to float32 first")


def _as_complex_infer(x, **_):
    _no_complex32("view_as_complex", x.dtype)
    if x.dtype not in (np.float32, np.float64):
        raise ShapeError(f"view_as_complex is only supported for float and double tensors, "
                         f"but got a tensor of scalar type: {x.dtype}")
    if x.shape is not None and (not x.shape or x.shape[-1] not in (2, None)):
        raise ShapeError(f"view_as_complex: Tensor must have a last dimension of size 2, got "
                         f"{fmt_shape(x)}")
    return Spec(None if x.shape is None else tuple(x.shape[:-1]),
                np.dtype(np.complex64 if x.dtype == np.float32 else np.complex128))


def _as_complex_kernel(x):
    x = np.asarray(x)
    _as_complex_infer(Spec(x.shape, x.dtype))
    if x.strides[-1] != x.itemsize:
        raise ShapeError("view_as_complex: Tensor must have a last dimension with stride 1")
    if any(s % (2 * x.itemsize) for s in x.strides[:-1]):
        raise ShapeError("view_as_complex: Tensor must have a stride divisible by 2 for all "
                         "but last dimension")
    out = np.ndarray(x.shape[:-1], dtype=np.complex64 if x.dtype == np.float32 else np.complex128,
                     buffer=x, offset=0, strides=x.strides[:-1]) if x.ndim > 1 else \
        x.view(np.complex64 if x.dtype == np.float32 else np.complex128).reshape(())
    return out


VIEW_AS_COMPLEX = register("view_as_complex", _as_complex_infer, _as_complex_kernel, None,
                           category="other", view=True, complex=True,
                           samples=(_S((4, 2), grad=False), _S((2, 3, 2), grad=False),
                                    _S((3,), match="last dimension of size 2")),
                           ref=lambda np, x: x[..., 0] + 1j * x[..., 1])


def _complex_infer(re, im, **_):
    _no_complex32("complex", re.dtype)
    if re.dtype != im.dtype or re.dtype not in (np.float32, np.float64):
        raise ShapeError(f"complex: Expected both inputs to be Half, Float or Double tensors "
                         f"but got {re.dtype} and {im.dtype}")
    return Spec(broadcast("complex", re, im),
                np.dtype(np.complex64 if re.dtype == np.float32 else np.complex128))


def _complex_kernel(re, im):
    re, im = np.asarray(re), np.asarray(im)
    spec = _complex_infer(Spec(re.shape, re.dtype), Spec(im.shape, im.dtype))
    out = np.empty(spec.shape, spec.dtype)
    out.real, out.imag = re, im     # NOTE: not re + 1j * im, which makes inf * 1j nan
    return out


COMPLEX = register("complex", _complex_infer, _complex_kernel, None, category="other",
                   samples=(_S((2, 3), (2, 3), grad=False), _S((3,), (2, 1), grad=False)),
                   ref=lambda np, re, im: re + 1j * im)


def _conj_kernel(x):
    return np.conj(x) if np.iscomplexobj(x) else x


# NOTE: a copy for complex input, where torch's conj is a lazy view (its conjugate bit)
CONJ = register("conj", lambda x, **_: x, _conj_kernel, lambda g, x, **kw: (g,),
                category="other", complex=True, may_alias=True,
                samples=(_S((3, 4)),), ref=lambda np, x: np.conj(x))


def _angle_infer(x, **_):
    dt = np.dtype(np.float32) if x.dtype.kind in "biu" else _real_dtype(x.dtype)
    return Spec(x.shape, dt)


def _angle_kernel(x):
    x = np.asarray(x)
    if x.dtype.kind in "biu":
        x = x.astype(np.float32)
    if x.dtype.kind == "c":
        return np.angle(x).astype(_real_dtype(x.dtype), copy=False)
    out = np.where(x < 0, np.pi, 0.0).astype(x.dtype)   # NOTE: torch's angle of a real number
    return np.where(np.isnan(x), x, out)


ANGLE = register("angle", _angle_infer, _angle_kernel, lambda g, x, **kw: (g * 0.0,),
                 category="other", complex=True,
                 samples=(_S((3, 4)),), ref=lambda np, x: np.angle(x))


real, imag, view_as_real, view_as_complex = REAL.fn, IMAG.fn, VIEW_AS_REAL.fn, VIEW_AS_COMPLEX.fn
complex_, conj, angle = COMPLEX.fn, CONJ.fn, ANGLE.fn
