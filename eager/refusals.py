"""The dtypes torch refuses where eager's kernels would compute anyway: one table, installed
over the method and the function forms alike (`x.mean()`, `eager.mean(x)`, `F.softmax`), so
a program runs on dualgrad exactly where it runs on torch (a mean of an integer tensor raises
torch's error instead of quietly giving a float).

A row is the function's name, the dtype kinds refused ("b" bool, "i"/"u" integers, or a
predicate), the exception torch raises and its message ({T} is torch's name of the dtype). A
`dtype=` argument lifts the refusal, as torch's (`x.mean(dtype=torch.float32)`). The index
ops (scatter, index_add, put, ...) refuse a source of another dtype than self's here too
(`same_dtype_source`), with torch's messages.

>>> from dualgrad import eager
>>> try:
...     eager.tensor([1, 2]).mean()
... except RuntimeError as e:
...     print(str(e)[:37])
mean(): could not infer output dtype.
>>> eager.tensor([1, 2]).mean(dtype=eager.float32).item()
1.5
"""
from __future__ import annotations

import functools

from .core import Tensor

SCALAR_TYPE = {"float32": "Float", "float64": "Double", "float16": "Half",
               "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
               "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble"}


def scalar_type(dtype):
    """torch's C++ name of a dtype (Float, Long, Bool, ...), as its error messages spell it."""
    return SCALAR_TYPE.get(str(dtype), str(dtype))


def _not_implemented(kernel):
    return NotImplementedError, f"\"{kernel}\" not implemented for '{{T}}'"


_FLOATING_ONLY = "iu"
_NO_BOOL = "b"
_NO_NUMBERS = "biu"

REFUSED = {
    "mean": (_NO_NUMBERS, RuntimeError, "mean(): could not infer output dtype. Input dtype "
             "must be either a floating point or complex dtype. Got: {T}"),
    "std": (_FLOATING_ONLY, RuntimeError, "std and var only support floating point and "
            "complex dtypes"),
    "var": (_FLOATING_ONLY, RuntimeError, "std and var only support floating point and "
            "complex dtypes"),
    "norm": (_NO_NUMBERS, RuntimeError, "linalg.vector_norm: Expected a floating point or "
             "complex tensor as input. Got {T}"),
    "renorm": (_NO_NUMBERS, RuntimeError, "linalg.vector_norm: Expected a floating point or "
               "complex tensor as input. Got {T}"),
    "dist": (_FLOATING_ONLY, RuntimeError, "norm(): input dtype should be either floating "
             "point or complex. Got {T} instead."),
    "softmax": (_FLOATING_ONLY, *_not_implemented("softmax_lastdim_kernel_impl")),
    "log_softmax": (_FLOATING_ONLY, *_not_implemented("log_softmax_lastdim_kernel_impl")),
    "logcumsumexp": (_FLOATING_ONLY, *_not_implemented("logcumsumexp_out_cpu")),
    "frac": (_FLOATING_ONLY, *_not_implemented("frac_cpu")),
    "abs": (_NO_BOOL, *_not_implemented("abs_cpu")),
    "floor": (_NO_BOOL, *_not_implemented("floor_vml_cpu")),
    "ceil": (_NO_BOOL, *_not_implemented("ceil_vml_cpu")),
    "round": (_NO_BOOL, *_not_implemented("round_vml_cpu")),
    "trunc": (_NO_BOOL, *_not_implemented("trunc_vml_cpu")),
    "median": (_NO_BOOL, *_not_implemented("median_cpu")),
    "kthvalue": (_NO_BOOL, *_not_implemented("kthvalue_cpu")),
    "bincount": (_NO_BOOL, *_not_implemented("bincount_cpu")),
    "trace": (_NO_BOOL, *_not_implemented("trace")),
    "topk": (_NO_BOOL, RuntimeError, "topk does not support bool dtypes on CPU"),
    "argmax": (_NO_BOOL, RuntimeError, "argmax(): does not support bool input"),
    "argmin": (_NO_BOOL, RuntimeError, "argmin(): does not support bool input"),
    "quantile": (lambda dt: str(dt) not in ("float32", "float64"), RuntimeError,
                 "quantile() input tensor must be either float or double dtype"),
    "nanquantile": (lambda dt: str(dt) not in ("float32", "float64"), RuntimeError,
                    "quantile() input tensor must be either float or double dtype"),
}


def refused(name, x, kwargs):
    """Raise torch's error when torch refuses `name` for x's dtype."""
    dt = getattr(x, "dtype", None)
    if dt is None or kwargs.get("dtype") is not None:
        return
    kinds, err, message = REFUSED[name]
    if kinds(dt) if callable(kinds) else dt.kind in kinds:
        raise err(message.format(T=scalar_type(dt)))


def _checked(name, fn):
    if getattr(fn, "_refusal_of", None) == name:
        return fn
    @functools.wraps(fn)
    def checked(x, *args, **kwargs):
        refused(name, x, kwargs)
        return fn(x, *args, **kwargs)
    checked._refusal_of = name
    return checked


def install(*namespaces):
    """Wrap every name of REFUSED that each namespace (Tensor, the eager module, nn.functional,
    special) has with its check."""
    for ns in namespaces:
        for name in REFUSED:
            fn = ns.__dict__.get(name) if isinstance(ns, type) else getattr(ns, name, None)
            if fn is not None and callable(fn):
                setattr(ns, name, _checked(name, fn))


# torch's refusals of a source whose dtype is not self's (the index ops cast nothing)
_MISMATCH = {
    "scatter": "scatter(): Expected self.dtype to be equal to src.dtype",
    "index_add": "index_add_(): self ({x}) and source ({s}) must have the same scalar type",
    "index_reduce": "index_reduce_(): self ({x}) and source ({s}) must have the same scalar "
                    "type",
    "index_copy": "index_copy_(): self and source expected to have the same dtype, but got "
                  "(self) {x} and (source) {s}",
    "put": "put_(): self and source expected to have the same dtype, but got self.dtype = {x} "
           "and source.dtype = {s}",
    "index_put": "Index put requires the source and destination dtypes match, got {x} for the "
                 "destination and {s} for the source.",
    "masked_scatter": "masked_scatter: expected self and source to have same dtypes but got "
                      "{x} and {s}",
}


def same_dtype_source(name, x, source):
    """Refuse, as torch, a source tensor of another dtype than x's."""
    if isinstance(source, Tensor) and source.dtype != x.dtype:
        raise RuntimeError(_MISMATCH[name].format(x=scalar_type(x.dtype),
                                                  s=scalar_type(source.dtype)))
