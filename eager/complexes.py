"""torch's complex-number functions: `complex polar real imag view_as_real view_as_complex conj
conj_physical resolve_conj resolve_neg angle`, and Tensor's `.real` / `.imag` (views that
write through, as torch's).

Which other functions take complex tensors is each op's own declaration in the registry
(`Op.complex`, ops/core.py); an op without it raises torch's NotImplementedError. dualgrad has
no complex autograd: a complex tensor that would require grad raises (`core.no_complex_autograd`).

>>> from dualgrad import eager as torch
>>> z = torch.tensor([1 + 2j, 3 - 1j])
>>> z.dtype, z.real.tolist(), z.abs().dtype
(dtype('complex64'), [1.0, 3.0], dtype('float32'))
"""
from __future__ import annotations

from dualgrad import ops

from .functions import _t


def complex(real, imag):  # noqa: A001 - torch.complex
    """real + imag * 1j of two float32 (complex64) or float64 (complex128) tensors."""
    return ops.complex_(real, imag)


def polar(abs, angle):  # noqa: A002 - torch's names
    """abs * (cos(angle) + sin(angle) * 1j), as torch.polar."""
    return ops.complex_(abs * ops.cos(angle), abs * ops.sin(angle))


def real(input):  # noqa: A002
    """The real part, a view (a real tensor itself)."""
    return ops.real(_t(input))


def imag(input):  # noqa: A002
    """The imaginary part of a complex tensor, a view."""
    return ops.imag(_t(input))


def view_as_real(input):  # noqa: A002
    """A complex tensor's (..., 2) real view: real and imaginary parts side by side."""
    return ops.view_as_real(_t(input))


def view_as_complex(input):  # noqa: A002
    """A float (..., 2) tensor's complex view."""
    return ops.view_as_complex(_t(input))


def conj(input):  # noqa: A002
    """The complex conjugate (a real tensor itself). NOTE: a copy, where torch's is a lazy
    view with the conjugate bit (docs/pytorch-compat.md)."""
    return _conj(_t(input))


def conj_physical(input):  # noqa: A002
    """The complex conjugate, computed (a real tensor itself, as torch's)."""
    return _conj(_t(input))


def _conj(x):
    return ops.conj(x) if x.dtype.kind == "c" else x


def _itself(name):
    def fn(input):  # noqa: A002
        return _t(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The tensor itself: dualgrad's tensors carry no conjugate or negative "
                  f"bit for `{name}` to resolve.")
    return fn


resolve_conj, resolve_neg = _itself("resolve_conj"), _itself("resolve_neg")


def angle(input):  # noqa: A002
    """The argument: of a complex number in (-pi, pi]; of a real one 0 for x >= 0, pi for
    x < 0, NaN for NaN (gradient 0)."""
    return ops.angle(_t(input))


class Parts:
    """Tensor's `.real` and `.imag` (properties, as torch's, giving views), `cfloat()` and
    `cdouble()`; surface.py installs them."""

    def cfloat(self, memory_format=None):
        return self._as("complex64", memory_format)

    def cdouble(self, memory_format=None):
        return self._as("complex128", memory_format)

    @property
    def real(self):
        """The real part, a view (a real tensor itself)."""
        return ops.real(self)

    @property
    def imag(self):
        """The imaginary part of a complex tensor, a view."""
        return ops.imag(self)


__all__ = TORCH_NAMES = ["complex", "polar", "real", "imag", "view_as_real", "view_as_complex",
                         "conj", "conj_physical", "resolve_conj", "resolve_neg", "angle"]
