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
import inspect
import warnings

import numpy as np

from dualgrad.ops.core import ComplexError
from dualgrad.ops.rules import TORCH_C_NAMES, norm_axis, torch_result_dtype

from .amp import AUTOCAST
from .core import Tensor

SCALAR_TYPE = {"float32": "Float", "float64": "Double", "float16": "Half",
               "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
               "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble"}


def scalar_type(dtype):
    """torch's C++ name of a dtype (Float, Long, Bool, ...), as its error messages spell it."""
    name = dtype_name(dtype)
    return SCALAR_TYPE.get(name, name)


def dtype_name(dtype) -> str:
    """NumPy's name of a dtype (a torch.dtype, a NumPy dtype or a name): "float32"."""
    return getattr(dtype, "name", dtype)


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
    "gelu": (_NO_NUMBERS, *_not_implemented("GeluKernelImpl")),
    "normalize": (_NO_NUMBERS, RuntimeError, "linalg.vector_norm: Expected a floating point or "
                  "complex tensor as input. Got {T}"),
    "quantile": (lambda dt: dtype_name(dt) not in ("float32", "float64"), RuntimeError,
                 "quantile() input tensor must be either float or double dtype"),
    "nanquantile": (lambda dt: dtype_name(dt) not in ("float32", "float64"), RuntimeError,
                    "quantile() input tensor must be either float or double dtype"),
}


# dualgrad's functions composed of ops that do declare complex support (ops/core.py's
# `Op.complex`) whose composition is still not torch's for complex input: a norm, a variance or
# a distance of complex numbers is real in torch (|z|, not z, squared), a covariance
# conjugates one factor. Each refuses a complex tensor argument with the registry's
# ComplexError; tests/eager/test_opdb.py finds the compositions that differ (its complex
# status file, tests/eager/opdb_complex.json). Keys: the namespace under eager ("": eager
# and Tensor's methods).
COMPLEX_REFUSED = {
    "": ("asinh", "arcsinh", "corrcoef", "cov", "dist", "float_power", "ldexp", "norm", "std",
         "var", "std_mean", "var_mean"),
    "nn.functional": ("pairwise_distance",),
    "linalg": ("ldl_solve", "matrix_norm", "norm", "vector_norm"),
    "masked": ("logsumexp", "prod", "std", "var"),
}


def _complex_checked(name, fn):
    if getattr(fn, "_complex_refusal_of", None) == name:
        return fn

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for v in (*args, *kwargs.values()):
            if isinstance(v, Tensor) and v.dtype.kind == "c":
                raise ComplexError(f'"{name}" not implemented for \'{scalar_type(v.dtype)}\' '
                                   f"in dualgrad (torch computes it; dualgrad's composition "
                                   f"would not give torch's result)")
        return fn(*args, **kwargs)
    checked._complex_refusal_of = name
    return checked


def install_complex(ns, names):
    """Wrap the names of `names` that namespace `ns` has with the complex refusal."""
    method = isinstance(ns, type)
    for name in names:
        fn = ns.__dict__.get(name) if method else getattr(ns, name, None)
        if fn is not None and callable(fn) and not isinstance(fn, type):
            setattr(ns, name, _complex_checked(name, fn))


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


# The two-operand functions whose operands torch's signatures declare Tensor (no Scalar
# overload): a Python number there is a TypeError in torch, however the arithmetic would go.
# Each row names the positions: "input" (torch.maximum(0.5, t) raises) and "other"
# (t.maximum(0.5) and torch.maximum(t, 0.5) raise). tests/eager/test_binary_matrix.py holds
# this table against torch.
_BOTH, _FIRST = ("input", "other"), ("input",)
TENSOR_ONLY = {
    **dict.fromkeys(("maximum", "minimum", "fmax", "fmin", "nextafter", "gcd", "lcm",
                     "logical_and", "logical_or", "logical_xor", "isclose", "ldexp", "atan2",
                     "arctan2", "hypot", "logaddexp", "logaddexp2"), _BOTH),
    "heaviside": ("input", "values"),
    "addcmul": ("input", "tensor1", "tensor2"), "addcdiv": ("input", "tensor1", "tensor2"),
    "lerp": ("input", "end"),
    **dict.fromkeys(("fmod", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal",
                     "less", "less_equal", "not_equal", "rsub", "copysign", "clamp_min",
                     "clamp_max"), _FIRST),
}


def _tensor_only(name, fn, positions, method):
    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for k, param in enumerate(positions):
            v = args[k] if k < len(args) else kwargs.get(param)
            if k == 0 and method:
                continue
            if isinstance(v, (bool, int, float, complex)):
                raise TypeError(f"{name}(): argument '{param}' (position {k + 1}) must be "
                                f"Tensor, not {type(v).__name__}")
        return fn(*args, **kwargs)
    checked._tensor_only_of = name
    return checked


# The dtypes torch's index arguments take (the in-place forms, name_, alike): the argument,
# the dtypes, the exception and torch's message ({T}: the index's dtype).
_INT32_64, _INT64 = ("int32", "int64"), ("int64",)
_SCATTER = ("index", _INT32_64, RuntimeError, "scatter(): Expected dtype int32/int64 for index")
INDEX_DTYPES = {
    "index_select": ("index", _INT32_64, RuntimeError,
                     "index_select(): Expected dtype int32 or int64 for index"),
    "gather": ("index", _INT32_64, RuntimeError, "gather(): Expected dtype int32/int64 for index"),
    "scatter": _SCATTER, "scatter_add": _SCATTER, "scatter_reduce": _SCATTER,
    "index_add": ("index", _INT32_64, RuntimeError,
                  "index_add_(): Expected dtype int32/int64 for index but got: {T}"),
    "index_reduce": ("index", _INT32_64, RuntimeError,
                     "index_reduce_(): Expected dtype int32/int64 for index but got: {T}"),
    "index_copy": ("index", _INT64, RuntimeError,
                   "index_copy_(): Expected a long tensor for index, but got {T}"),
    "index_fill": ("index", _INT64, IndexError, "index_fill_(): Expected dtype int64 for index."),
    "take": ("index", _INT64, RuntimeError, "take(): Expected a long tensor for index, but got {T}"),
    "put": ("index", _INT64, RuntimeError, "put_(): Expected a long tensor for index, but got {T}"),
    "take_along_dim": ("indices", _INT64, RuntimeError,
                       "torch.take_along_dim(): dtype of indices should be Long but got {T}"),
    "one_hot": ("tensor", _INT64, RuntimeError,
                "one_hot is only applicable to index tensor of type LongTensor."),
    "embedding": ("input", _INT32_64, RuntimeError,
                  "Expected tensor for argument #1 'indices' to have one of the following scalar "
                  "types: Long, Int; but got torch.{t} instead (while checking arguments for "
                  "embedding)"),
    "embedding_bag": ("input", _INT32_64, RuntimeError,
                      "Expected tensor for argument #1 'indices' to have one of the following "
                      "scalar types: Long, Int; but got torch.{t} instead (while checking "
                      "arguments for embedding_bag)"),
}


# NOTE: torch's gather and scatter check an index's dtype only when it has elements
_EMPTY_UNCHECKED = ("gather", "scatter", "scatter_add", "scatter_reduce")


def _index_checked(name, fn, row):
    param, dtypes, err, message = row
    base = name.rstrip("_")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    if param not in sig.parameters:
        return fn

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            index = sig.bind_partial(*args, **kwargs).arguments.get(param)
        except TypeError:
            index = None   # NOTE: the call's own error follows, from fn
        dt = getattr(index, "dtype", None)
        if isinstance(index, Tensor) and dtype_name(dt) not in dtypes and \
                (index.numel() or base not in _EMPTY_UNCHECKED):
            raise err(message.format(T=scalar_type(dt), t=dtype_name(dt)))
        return fn(*args, **kwargs)
    checked._index_of = name
    return checked


# The functions torch gives no type promotion: every tensor argument named in a row must have
# the first one's dtype (a float64 batch into a float32 model raises, as torch's kernels do,
# instead of computing in float64). {A}/{B}: torch's scalar type names of the two dtypes,
# {a}/{b}: the C++ names.
_MIXED = "mixed dtype (CPU): all inputs must share same datatype."
_SCALAR = "expected scalar type {A} but found {B}"
_M1M2 = "expected m1 and m2 to have the same dtype, but got: {a} != {b}"
_CONV = ("input", "weight", "bias")
SAME_DTYPE = {
    "linear": (("input", "weight", "bias"),
               "mat1 and mat2 must have the same dtype, but got {A} and {B}"),
    "bilinear": (("input1", "input2", "weight", "bias"), _SCALAR),
    **dict.fromkeys(("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                     "conv_transpose3d"), (_CONV, _SCALAR)),
    "layer_norm": (("input", "weight", "bias"), _MIXED),
    "batch_norm": (("input", "running_mean", "running_var", "weight", "bias"), _MIXED),
    "instance_norm": (("input", "running_mean", "running_var", "weight", "bias"), _MIXED),
    "group_norm": (("input", "weight", "bias"), _MIXED),
    "prelu": (("input", "weight"), "prelu: Type promoting not supported. Got {A} and {B}"),
    "addmm": (("input", "mat1", "mat2"), "self and mat2 must have the same dtype, but got {A} "
              "and {B}"),
    "addmv": (("input", "mat", "vec"), _SCALAR),
    "addbmm": (("input", "batch1", "batch2"), _SCALAR),
    "baddbmm": (("input", "batch1", "batch2"), _SCALAR),
    "mm": (("input", "mat2"), _M1M2), "bmm": (("input", "mat2"), _SCALAR),
    "mv": (("input", "vec"), _SCALAR),
    "dot": (("input", "tensor"), "dot : expected both vectors to have same dtype, but found {A} "
            "and {B}"),
    "vdot": (("input", "other"), "vdot : expected both vectors to have same dtype, but found {A} "
             "and {B}"),
    "cdist": (("x1", "x2"), _SCALAR),
    "scaled_dot_product_attention": (("query", "key", "value"), "Expected query, key, and "
                                     "value to have the same dtype, but got {a} and {b}"),
    "einsum": (("operands",), _SCALAR),
}


def _same_dtype_checked(name, fn, row):
    params, message = row
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    if not any(p in sig.parameters for p in params):
        return fn

    autocast = getattr(fn, "__autocast__", None)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        if autocast and AUTOCAST.enabled:   # NOTE: autocast casts the operands to one dtype
            return fn(*args, **kwargs)
        try:
            bound = sig.bind_partial(*args, **kwargs).arguments
        except TypeError:
            bound = {}   # NOTE: the call's own error follows, from fn
        ts = []
        for p in params:
            v = bound.get(p)
            ts += [x for x in v if isinstance(x, Tensor)] if isinstance(v, (tuple, list)) \
                else [v] if isinstance(v, Tensor) else []
        for t in ts[1:]:
            if t.dtype != ts[0].dtype:
                a, b = dtype_name(ts[0].dtype), dtype_name(t.dtype)
                raise RuntimeError(message.format(A=scalar_type(a), B=scalar_type(b),
                                                  a=TORCH_C_NAMES.get(a, a),
                                                  b=TORCH_C_NAMES.get(b, b)))
        return fn(*args, **kwargs)
    checked._same_dtype_of = name
    return checked


def no_bool_clamp(name, x, *bounds):
    """torch's clamp, clamp_min and clamp_max refuse a bool result: "{name}_scalar_cpu" for
    number bounds, "{name}_cpu" for tensor ones (clamp_min/max of tensors compute)."""
    bounds = [b for b in bounds if b is not None]
    scalar = all(isinstance(b, (bool, int, float)) for b in bounds)
    arrays = [b._array if isinstance(b, Tensor) else b for b in (x, *bounds)]
    if bounds and (scalar or name == "clamp" and len(bounds) == 2) and \
            torch_result_dtype(arrays).kind == "b":
        kernel = f"{name}_scalar_cpu" if scalar else f"{name}_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _clamp_checked(fn):
    @functools.wraps(fn)
    def checked(self, min=None, max=None):  # noqa: A002 - torch's names
        no_bool_clamp("clamp", self, min, max)
        return fn(self, min, max)
    checked._refusal_of = "clamp"
    return checked


def install(*namespaces):
    """Wrap every name of REFUSED, TENSOR_ONLY and INDEX_DTYPES (with the in-place forms of
    its names) that each namespace (Tensor, the eager module, nn.functional, special) has
    with its check."""
    for ns in namespaces:
        method = isinstance(ns, type)
        if method and getattr(ns.__dict__.get("clamp"), "_refusal_of", None) != "clamp":
            ns.clamp = ns.clip = _clamp_checked(ns.__dict__["clamp"])
        for name, row in SAME_DTYPE.items():
            fn = ns.__dict__.get(name) if method else getattr(ns, name, None)
            if fn is not None and callable(fn) and getattr(fn, "_same_dtype_of", None) != name:
                setattr(ns, name, _same_dtype_checked(name, fn, row))
        for base, row in INDEX_DTYPES.items():
            for name in (base, base + "_"):
                fn = ns.__dict__.get(name) if method else getattr(ns, name, None)
                if fn is not None and callable(fn) and getattr(fn, "_index_of", None) != name:
                    setattr(ns, name, _index_checked(name, fn, row))
        for name in REFUSED:
            fn = ns.__dict__.get(name) if method else getattr(ns, name, None)
            if fn is not None and callable(fn):
                setattr(ns, name, _checked(name, fn))
        for name, positions in TENSOR_ONLY.items():
            fn = ns.__dict__.get(name) if method else getattr(ns, name, None)
            if fn is not None and callable(fn) and getattr(fn, "_tensor_only_of", None) != name:
                setattr(ns, name, _tensor_only(name, fn, positions, method))


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


def index_tensors(index, setting=None):
    """index with its tensors read as torch reads them: int64 and int32 as positions, bool
    as a mask, uint8 as a mask too (with torch's deprecation warning), any other dtype
    refused with torch's IndexError. setting: the value of t[index] = value (a uint8 mask
    with a scalar value raises, as torch's masked_fill_)."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if type(p) is slice and p.step is not None and not isinstance(p.step, Tensor) and \
                p.step <= 0:   # NOTE: torch flips nothing: x[::-1] is an error there
            raise ValueError("step must be greater than zero" if p.step else
                             "slice step cannot be zero")
    if not any(isinstance(p, Tensor) and p.dtype.kind != "b" and p.dtype not in _POSITIONS
               for p in parts):
        return index
    out = []
    for p in parts:
        if isinstance(p, Tensor) and p.dtype == np.uint8:
            if setting is not None and not (isinstance(setting, Tensor) and setting.ndim):
                raise RuntimeError("masked_fill_ only supports boolean masks, but got mask "
                                   "with dtype unsigned char")
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                          "dtype torch.bool instead.", UserWarning, stacklevel=4)
            p = p != 0
        elif isinstance(p, Tensor) and p.dtype.kind != "b" and p.dtype not in _POSITIONS:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        out.append(p)
    return tuple(out) if isinstance(index, tuple) else out[0]


_POSITIONS = (np.dtype(np.int64), np.dtype(np.int32))


def in_range(index, x, dim, name):
    """torch's gather, scatter and index_select take indices in [0, size) only (NumPy's
    -1 is the last element; torch's is an error): an eager index's values, checked."""
    arr = getattr(index, "_array", index)
    if not isinstance(arr, np.ndarray) or not arr.size or arr.dtype.kind not in "iu" or \
            not x.ndim:
        return
    d = norm_axis(name, dim, x.ndim)
    n = x.shape[d]
    low, high = arr.min(), arr.max()
    if low >= 0 and high < n:
        return
    if name == "index_select":
        raise IndexError("index out of range in self")
    bad = low if low < 0 else high
    raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")
