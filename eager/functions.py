"""torch.* math that PyTorch programs call by name (mm, einsum, std, roll, scatter_add, …), as
compositions of the op library's ops, and the same names as Tensor methods.

Functions whose result's shape depends on the values (nonzero, masked_select's count,
bincount, searchsorted, multinomial) compute with NumPy and carry no gradient, like unique.

>>> from dualgrad import eager
>>> x = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> eager.einsum("ij,jk->ik", x, x).tolist(), eager.roll(x, 1, 0).tolist()
([[7.0, 10.0], [15.0, 22.0]], [[3.0, 4.0], [1.0, 2.0]])
"""
from __future__ import annotations

import builtins

import math
import warnings

import numpy as np
from dualgrad.eager.amp import keeps_fp32, lowers
from dualgrad.ops.rules import floating

from dualgrad import ops
from dualgrad.ops.linalg import parse_einsum
from dualgrad.ops.reduce import nonempty_reduction
from dualgrad.ops.composite import in_opmath
from dualgrad.ops.core import user_stacklevel
from dualgrad.ops.rules import (HALF, TORCH_C_NAMES, norm_axis, torch_opmath_dtype, torch_result_dtype,
                                torch_scalar_argument, torch_sum_dtype)

from .core import DEFAULT_FLOAT, Tensor, warn_once
from .refusals import in_range, no_bool_clamp, same_dtype_source, scalar_type


def _t(x):
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x))


def _arr(x):
    return np.asarray(x)


def _no_grad_tensor(arr):
    return Tensor(np.asarray(arr))


def _dims(dim, ndim):
    dims = range(ndim) if dim is None else (dim,) if np.ndim(dim) == 0 else dim
    return tuple(sorted(norm_axis("reduce", d, ndim) for d in dims))


# -- products ---------------------------------------------------------------------------------
def _need_ndim(name, t, nd):
    if t.ndim != nd:
        raise RuntimeError(f"{name}: expected a {nd}-D tensor, got {t.ndim}-D of shape "
                           f"{tuple(t.shape)}")


@lowers
def mm(input, mat2):  # noqa: A002 - torch's argument names
    _need_ndim("mm", input, 2)
    _need_ndim("mm", mat2, 2)
    return ops.matmul(input, mat2)


@lowers
def bmm(input, mat2):  # noqa: A002
    _need_ndim("bmm", input, 3)
    _need_ndim("bmm", mat2, 3)
    return ops.matmul(input, mat2)


def dot(input, tensor):  # noqa: A002
    _need_ndim("dot", input, 1)
    _need_ndim("dot", tensor, 1)
    return ops.matmul(input, tensor)


def outer(input, vec2):  # noqa: A002
    return ops.expand_dims(input, axis=1) * ops.expand_dims(vec2, axis=0)


ger = outer


def zero_link(t):
    """Zeros shaped like t that pass t a zero gradient (torch gives one where an operand does
    not affect the result: copysign's sign, addmv's input at beta=0), not None."""
    t = _t(t)
    if not t.requires_grad:
        return 0.0
    return ops.where(ops.logical_or(isnan(t), isinf(t)), 0.0, t) * 0.0


def _beta_alpha(input, prod, beta, alpha):
    """beta * input + alpha * prod; beta 0 ignores input's values (NaN included), as torch;
    integer tensors take beta and alpha truncated to integers, as torch's do; bool tensors
    give bool, (beta and input) or (alpha and prod), as torch's."""
    if prod.dtype == np.bool_ and _t(input).dtype == np.bool_:
        out = prod if alpha else ops.eq(prod, 2)          # NOTE: alpha 0: all False
        return ops.maximum(_t(input), out) if beta else ops.copy(out)   # NOTE: max is or
    if prod.dtype.kind in "iu":
        beta, alpha = int(beta), int(alpha)
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return prod + zero_link(input) if prod.dtype.kind in "fc" else ops.copy(prod)
    return (input if beta == 1 else input * beta) + prod


@lowers
@in_opmath   # NOTE: torch's CPU gemm adds beta * input in float32 before its one rounding
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2); beta=0 ignores input's values (NaN too), as torch.
    float16 and bfloat16 are computed in float32 and rounded once, as torch's CPU kernel."""
    return _beta_alpha(input, mm(mat1, mat2), beta, alpha)


@lowers
@in_opmath   # NOTE: as addmm's
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _beta_alpha(input, bmm(batch1, batch2), beta, alpha)


@in_opmath   # NOTE: torch's CPU kernel computes a half input's in float32, rounded once
def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    operands = _arrays(input, tensor1, tensor2)
    if torch_result_dtype(operands).kind == "b":
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    value = torch_scalar_argument(value, operands)
    return input + _scaled(tensor1, value) * tensor2   # NOTE: torch's order: (value * t1) * t2


@in_opmath
def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    if all(_t(t).dtype.kind in "biu" for t in (tensor1, tensor2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported: for integer inputs compute "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype), as torch says")
    return input + _scaled(tensor1 / tensor2, value)


def _arrays(*xs):
    """Tensors as their arrays, numbers as they are: what the promotion rules read."""
    return [x._array if isinstance(x, Tensor) else x for x in xs]


def _scaled(x, k):
    return x if k == 1 else x * k


@lowers
def einsum(equation, *operands):
    """torch.einsum: each operand is laid out over every index letter (size 1 where it has
    none), the product is summed over the letters not in the output. Gradients come from
    mul, sum and the layout ops; '...' is supported."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    dts = {_t(o).dtype for o in operands}
    if len(dts) == 1 and torch_opmath_dtype(next(iter(dts))) != next(iter(dts)):
        # NOTE: float16 / bfloat16: torch contracts through bmm, products exact and summed in
        # float32, the result rounded once
        half = dts.pop()
        out = einsum(equation, *[ops.cast(_t(o), torch_opmath_dtype(half)) for o in operands])
        return ops.cast(out, half)
    terms, rhs = parse_einsum(equation, [_t(o).ndim for o in operands], diagonals=True)
    letters = list(dict.fromkeys(rhs + "".join(terms)))
    prod = None
    for term, x in zip(terms, operands):
        x, term = _diagonals(_t(x), term)
        order = [term.index(c) for c in letters if c in term]
        x = x.permute(*order) if order != list(range(len(order))) else x
        shape = [x.shape[[c for c in letters if c in term].index(c)] if c in term else 1
                 for c in letters]
        x = x.reshape(tuple(shape))
        prod = x if prod is None else prod * x
    summed = tuple(i for i, c in enumerate(letters) if c not in rhs)
    if not summed:
        return prod
    out = accumulate(ops.sum, prod, axis=summed)
    # NOTE: torch sums a letter only one operand has (and the output has not) out of that
    # operand first, with sum (integers: int64); the rest goes through bmm, which keeps the
    # operands' dtype: 'ij,jk->ik' of int16 is int16, 'ij,jk->' and 'ij->i' are int64
    solo = any(c not in rhs and sum(c in t for t in terms) == 1 for t in terms for c in t)
    return out if solo or out.dtype == prod.dtype else ops.cast(out, prod.dtype)


def _diagonals(x, term):
    """A letter repeated within one operand ('ii->i') takes that operand's diagonal."""
    for c in list(dict.fromkeys(term)):
        while term.count(c) > 1:
            i = term.index(c)
            j = term.index(c, i + 1)
            x = diagonal(x, 0, i, j)
            term = term[:i] + term[i + 1:j] + term[j + 1:] + c
    return x, term


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The diagonal over dim1, dim2 appended as the last dim: a view, as torch.diagonal."""
    x = _t(input)
    nd = x.ndim
    d1, d2 = norm_axis("diagonal", dim1, nd), norm_axis("diagonal", dim2, nd)
    return ops.diagonal(x, offset=int(offset), axis1=d1, axis2=d2)


def diag(input, diagonal=0):  # noqa: A002
    """A 1-D input becomes a square matrix with it on the given diagonal; a 2-D input gives
    that diagonal."""
    x = _t(input)
    if x.ndim == 1:
        n = x.shape[0] + builtins.abs(diagonal)
        idx = np.arange(x.shape[0])
        r, c = (idx, idx + diagonal) if diagonal >= 0 else (idx - diagonal, idx)
        onto = np.zeros((x.shape[0], n * n), np.float32)
        onto[idx, r * n + c] = 1.0
        return ops.reshape(ops.matmul(x, onto.astype(x.dtype)), (n, n))
    if x.ndim != 2:
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got {x.ndim}-D")
    return ops.copy(globals()["diagonal"](x, diagonal))    # NOTE: a copy, as torch.diag


def kron(input, other):  # noqa: A002
    a, b = _t(input), _t(other)
    nd = builtins.max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (nd - b.ndim) + tuple(b.shape))
    ax = a.reshape(tuple(s for d in a.shape for s in (d, 1)))
    bx = b.reshape(tuple(s for d in b.shape for s in (1, d)))
    return (ax * bx).reshape(tuple(p * q for p, q in zip(a.shape, b.shape)))


@keeps_fp32
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise p-norm distances between the rows of x1 (.., P, M) and x2 (.., R, M)."""
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = ops.expand_dims(x1, axis=-2) - ops.expand_dims(x2, axis=-3)
    # NOTE: ops.norm: torch's zero gradient at a zero distance, float16 computed in float32
    return ops.norm(diff, ord=int(p) if p in (0, 1, 2) else p, axis=-1)


# -- reductions -------------------------------------------------------------------------------
def _correction(name, unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """Variance with Bessel's correction by default (correction=1); correction=0 is the
    population variance."""
    if isinstance(dim, bool):      # torch's var(input, unbiased) overload
        dim, unbiased = None, dim
    return _var(_t(input), dim, keepdim, _correction("var", unbiased, correction))


def _var(x, dim, keepdim, c, root=False):
    """The variance (its square root when root) with correction c. NOTE: torch's CPU kernel
    accumulates in float64 (Welford) for every real dtype and rounds its result, float16 and
    bfloat16 through float32 (their kernel runs in float32). With no degrees of freedom left
    (n <= c) the sum of squares is divided by 0 (inf, or nan for a zero sum), with torch's
    warning."""
    dt = x.dtype
    wide = floating(dt) and dt != np.float64
    if wide:
        x = ops.cast(x, np.float64)
    v = ops.var(x, axis=dim, keepdims=keepdim)
    n = ops.reduce.static_count(x.shape, dim)
    if c and n - c <= 0:     # NOTE: c first: n may be a symbolic dim (check mode)
        warnings.warn(f"{'std' if root else 'var'}(): degrees of freedom is <= 0. Correction "
                      f"should be strictly less than the reduction factor (input numel "
                      f"divided by output numel).", UserWarning, stacklevel=user_stacklevel())
        v = v * float(n) / 0.0
    elif c:
        v = v * (n / (n - c))
    v = ops.sqrt(v) if root else v
    if dt in HALF:
        v = ops.cast(v, np.float32)
    return ops.cast(v, dt) if wide else v


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):      # torch's std(input, unbiased) overload
        dim, unbiased = None, dim
    return _var(_t(input), dim, keepdim, _correction("std", unbiased, correction), root=True)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):      # torch's std_mean(input, unbiased) overload
        dim, unbiased = None, dim
    return std(input, dim, unbiased, keepdim, correction=correction), \
        ops.mean(input, axis=dim, keepdims=keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):      # torch's var_mean(input, unbiased) overload
        dim, unbiased = None, dim
    return var(input, dim, unbiased, keepdim, correction=correction), \
        ops.mean(input, axis=dim, keepdims=keepdim)


def _slices(x, dim):
    n = x.shape[dim]
    lead = (slice(None),) * dim
    return [ops.slice_(x, index=lead + (slice(i, i + 1),)) for i in range(n)]


def accumulating(x, dtype=None):
    """x in the dtype torch's sum, prod, cumsum and cumprod give (`ops.rules.torch_sum_dtype`): `dtype` when given, else int64 for every integer and bool tensor
    (torch.tensor([1], dtype=torch.int32).cumsum(0) is int64)."""
    x = _t(x)
    want = torch_sum_dtype(x.dtype, dtype)
    return x if x.dtype == want else ops.cast(x, want)


def accumulate(op, x, dtype=None, **attrs):
    """op (sum, cumsum) on x as torch computes it: in the accumulating dtype, widened to
    float32 for float16 (`ops.rules.torch_opmath_dtype`) and rounded back once."""
    x = accumulating(x, dtype)
    wide = torch_opmath_dtype(x.dtype)
    if wide == x.dtype:
        out = op(x, **attrs)
        # NOTE: an integer sum is int64 unless dtype= asks for another (sum(dtype=int8) is
        # int8, wrapping as the int64 sum cast to it does)
        return out if out.dtype == x.dtype else ops.cast(out, x.dtype)
    return ops.cast(op(ops.cast(x, wide), **attrs), x.dtype)


@keeps_fp32
def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The product along dim (every element by default), as a chain of multiplies so the
    gradient is exact with zeros present."""
    x = accumulating(input, dtype)
    if dim is None:
        x, dim = x.reshape(-1), 0
    if x.ndim == 0:         # NOTE: torch: a 0-d tensor takes dim 0 or -1, its product is itself
        norm_axis("prod", dim, 1)
        return ops.copy(x)
    d = norm_axis("prod", dim, x.ndim)
    parts = _slices(x, d)
    if len(parts) == 1:     # a new tensor, never a view of the input
        return ops.copy(x) if keepdim else ops.squeeze(ops.copy(x), axis=d)
    out = parts[0] if parts else ops.ones_like(ops.sum(x, axis=d, keepdims=True))
    for p in parts[1:]:
        out = out * p
    return out if keepdim else ops.squeeze(out, axis=d)


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    x = accumulating(input, dtype)
    if x.ndim == 0:         # NOTE: torch: a 0-d tensor's running product is 0-d, itself
        norm_axis("cumprod", dim, 1)
        return ops.copy(x)
    d = norm_axis("cumprod", dim, x.ndim)
    if x.shape[d] == 0:
        return ops.copy(x)
    parts, outs = _slices(x, d), []
    for p in parts:
        outs.append(p if not outs else outs[-1] * p)
    return ops.concat(*outs, axis=d)


def amax(input, dim=(), keepdim=False):  # noqa: A002
    dim = None if dim == () else dim
    nonempty_reduction("amax", _t(input).shape, dim)
    return ops.max(input, axis=dim, keepdims=keepdim)


def amin(input, dim=(), keepdim=False):  # noqa: A002
    dim = None if dim == () else dim
    nonempty_reduction("amin", _t(input).shape, dim)
    return ops.min(input, axis=dim, keepdims=keepdim)


def count_nonzero(input, dim=None):  # noqa: A002
    return ops.sum(ops.cast(ops.ne(input, 0), "int64"), axis=dim)


@in_opmath
def logcumsumexp(input, dim):  # noqa: A002
    x = _t(input)
    if x.ndim == 0:     # NOTE: torch: a 0-d tensor's running log-sum-exp is itself
        return x * 1
    m = ops.stop_gradient(ops.max(x, axis=dim, keepdims=True))
    return ops.log(ops.cumsum(ops.exp(x - m), axis=dim)) + m


# -- elementwise ------------------------------------------------------------------------------
def floor(input):  # noqa: A002
    return ops.floor(input)


def ceil(input):  # noqa: A002
    return ops.ceil(input)


def round(input, *, decimals=0):  # noqa: A001,A002
    if decimals == 0:
        return ops.round(input)
    if _t(input).dtype.kind in "biu":
        raise NotImplementedError(f"\"round_cpu\" not implemented for "
                                  f"'{scalar_type(_t(input).dtype)}'")
    k = 10.0 ** decimals
    return ops.round(input * k) / k


def trunc(input):  # noqa: A002
    return ops.where(ops.ge(input, 0), ops.floor(input), ops.ceil(input))


fix = trunc


def frac(input):  # noqa: A002
    return input - trunc(input)


def promoted(name, operands, kind="common"):
    """The operands of a binary function as tensors of the dtype torch computes it in
    (torch.result_type: a Python number or a 0-d tensor does not widen a tensor with dims, and
    is rounded to its dtype first, as torch's kernels read it: float16 `fmod(x, 0.7)` divides
    by float16(0.7)). kind: "common" keeps that dtype; "float" computes integers and bools in
    the default float (atan2, xlogy, copysign, ldexp); "floating" refuses them (hypot,
    logaddexp, nextafter) and "integer" refuses floats (gcd, lcm), with torch's errors."""
    want = torch_result_dtype(_arrays(*operands), DEFAULT_FLOAT[0])
    if kind == "float" and not floating(want):
        want = DEFAULT_FLOAT[0]
    elif kind == "floating" and not floating(want) or kind == "integer" and want.kind not in "iu":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{scalar_type(want)}'")
    if kind == "common" and want.kind == "b" and name in ("fmod", "remainder"):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    out = []
    for v in operands:
        t = _t(v) if isinstance(v, Tensor) or not isinstance(v, (bool, int, float)) else \
            Tensor(np.asarray(v).astype(want))   # NOTE: a Python int wraps into uint8, as torch's
        out.append(t if t.dtype == want else ops.cast(t, want))
    return out


def fmod(input, other):  # noqa: A002
    """The remainder with the sign of the dividend (C's fmod, exact in every dtype)."""
    return ops.truncatemod(*promoted("fmod", (input, other)))


def remainder(input, other):  # noqa: A002
    """The remainder with the sign of the divisor (Python's %): C's fmod, exact, plus the
    divisor where the signs differ, as torch's and NumPy's."""
    return ops.floormod(*promoted("remainder", (input, other)))


def _is_float(*xs):
    # NOTE: dtypes only, never values: a compile() tracer has none; bfloat16 (kind "V") too
    return builtins.any(floating(np.dtype(x.dtype if hasattr(x, "dtype") else
                                          np.result_type(x))) for x in xs)


def floor_divide(input, other):  # noqa: A002
    """The floor of the exact quotient, as torch's (1 // 0.1 is 9, not floor(1 / 0.1))."""
    return ops.floordiv(input, other, exact=_is_float(input, other))


def add(input, other, *, alpha=1):  # noqa: A002
    """input + alpha * other (torch.add; alpha takes the operands' dtype, see
    rules.torch_scalar_argument)."""
    return input + scaled_by_alpha(other, alpha, input)


def sub(input, other, *, alpha=1):  # noqa: A002
    """input - alpha * other (torch.sub)."""
    return input - scaled_by_alpha(other, alpha, input)


def rsub(input, other, *, alpha=1):  # noqa: A002
    """other - alpha * input (torch.rsub)."""
    return other - scaled_by_alpha(input, alpha, other)


def scaled_by_alpha(x, alpha, other):
    """alpha * x for torch.add / sub (and their in-place forms) beside `other`."""
    if type(alpha) is int and alpha == 1:
        return x
    alpha = torch_scalar_argument(alpha, _arrays(x, other), "alpha")
    if type(x) is bool and type(alpha) is bool:   # NOTE: True * True is the int 1 in Python
        return x and alpha
    return x * alpha


def mul(input, other):  # noqa: A002
    # NOTE: torch.mul(0.7, t) rounds 0.7 to a half t's dtype; 0.7 * t is t.mul(0.7), which
    # does not (rules.torch_scalar_opmath)
    return input * other if isinstance(input, Tensor) else ops.mul(input, other)


def neg(input):  # noqa: A002
    return -input


multiply, subtract, negative = mul, sub, neg


def true_divide(input, other):  # noqa: A002
    # NOTE: torch.div(2, t) divides; 2 / t is t.reciprocal() * 2
    return input / other if isinstance(input, Tensor) else ops.div(input, other)


def div(input, other, *, rounding_mode=None):  # noqa: A002
    if rounding_mode is None:
        return true_divide(input, other)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return trunc(input / other) if _is_float(input, other) else \
            _t((np.trunc(_arr(input) / _arr(other))).astype(np.result_type(_arr(input),
                                                                            _arr(other))))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


divide = div


def log1p(input):  # noqa: A002
    return ops.log1p(input)


def expm1(input):  # noqa: A002
    return ops.expm1(input)


def log2(input):  # noqa: A002
    return ops.log(input) * (1.0 / math.log(2.0))   # a Python float: weak, keeps float32


def log10(input):  # noqa: A002
    return ops.log(input) * (1.0 / math.log(10.0))


def reciprocal(input):  # noqa: A002
    return 1.0 / input


def isnan(input):  # noqa: A002
    return ops.ne(input, input)


def isinf(input):  # noqa: A002
    return ops.eq(ops.abs(input), np.inf)


def isfinite(input):  # noqa: A002
    return ops.logical_not(ops.logical_or(isnan(input), isinf(input)))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """NaN -> nan, +inf -> posinf, -inf -> neginf (the dtype's largest values by default)."""
    x = _t(input)
    if not floating(x.dtype):
        return ops.copy(x)
    big = float(np.finfo(x.dtype).max)
    x = ops.where(isnan(x), nan, x)
    x = ops.where(ops.eq(x, np.inf), big if posinf is None else posinf, x)
    return ops.where(ops.eq(x, -np.inf), -big if neginf is None else neginf, x)


def clamp_min(input, min):  # noqa: A002
    no_bool_clamp("clamp_min", input, min)
    return ops.clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    no_bool_clamp("clamp_max", input, max)
    return ops.clamp(input, max=max)


def lerp(input, end, weight):  # noqa: A002
    """torch's lerp: a floating result only (integers raise its error), and its two forms,
    exact at either end: input + w (end - input) for |w| < 0.5, end - (end - input)(1 - w)
    from there on, computed in float32 for float16 and bfloat16 and rounded once."""
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and other.dtype != _t(input).dtype and \
                (name == "end" or other.ndim):   # NOTE: a 0-d weight promotes instead
            raise RuntimeError(f"expected dtype {TORCH_C_NAMES.get(_t(input).dtype.name)} for "
                               f"`{name}` but got dtype {TORCH_C_NAMES.get(other.dtype.name)}")
    # NOTE: a Python number weight does not take part in the dtype (lerp(uint8, uint8, 0.5)
    # raises), a 0-d tensor one does (lerp(int64, int64, tensor(0.5)) is float32)
    tensors = (input, end, weight) if isinstance(weight, Tensor) else (input, end)
    want = torch_result_dtype(_arrays(*tensors), DEFAULT_FLOAT[0])
    if not floating(want):
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f"\"lerp_kernel_{kind}\" not implemented for "
                                  f"'{scalar_type(want)}'")
    x, e = (t if t.dtype == want else ops.cast(t, want) for t in (_t(input), _t(end)))
    if isinstance(weight, Tensor) and weight.dtype != want:
        weight = ops.cast(weight, want)
    return _lerp(x, e, weight)


@in_opmath
def _lerp(x, e, w):
    d = e - x
    if not isinstance(w, Tensor):
        return x + w * d if abs(w) < 0.5 else e - d * (1 - w)
    return ops.where(ops.lt(ops.abs(w), 0.5), x + w * d, e - d * (1 - w))


def _as_bool(x):
    x = _t(x)
    return x if x.dtype == np.bool_ else ops.ne(x, 0)


def logical_and(input, other):  # noqa: A002
    return ops.logical_and(_as_bool(input), _as_bool(other))


def logical_or(input, other):  # noqa: A002
    return ops.logical_or(_as_bool(input), _as_bool(other))


def logical_not(input):  # noqa: A002
    return ops.logical_not(_as_bool(input))


def logical_xor(input, other):  # noqa: A002
    return ops.ne(_as_bool(input), _as_bool(other))


# -- shapes and indexing ----------------------------------------------------------------------
def narrow(input, dim, start, length):  # noqa: A002
    x = _t(input)
    d = norm_axis("narrow", dim, x.ndim)
    start = start + x.shape[d] if start < 0 else start
    if not 0 <= start <= start + length <= x.shape[d]:
        raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size "
                         f"({x.shape[d]}) of dim {dim}")
    return ops.slice_(x, index=(slice(None),) * d + (slice(start, start + length),))


def unbind(input, dim=0):  # noqa: A002
    x = _t(input)
    d = norm_axis("unbind", dim, x.ndim)
    return tuple(ops.squeeze(p, axis=d) for p in _slices(x, d))


def roll(input, shifts, dims=None):  # noqa: A002
    x = _t(input)
    if dims is None:
        return roll(x.reshape(-1), shifts, 0).reshape(tuple(x.shape))
    shifts = (shifts,) if np.ndim(shifts) == 0 else tuple(shifts)
    dims = (dims,) if np.ndim(dims) == 0 else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims: {len(dims)}")
    return ops.roll(x, shifts, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    x = _t(input)
    if repeats is None:          # torch.repeat_interleave(counts): indices repeated
        counts = _arr(x)
        return _no_grad_tensor(np.repeat(np.arange(counts.size), counts))
    if dim is None:
        x, dim = x.reshape(-1), 0
    d = norm_axis("repeat_interleave", dim, x.ndim)
    idx = np.repeat(np.arange(x.shape[d]), _arr(repeats))
    return ops.take(x, idx, axis=d)


def tile(input, dims):  # noqa: A002
    x = _t(input)
    dims = tuple(dims)
    if len(dims) < x.ndim:
        dims = (1,) * (x.ndim - len(dims)) + dims
    return x.repeat(*dims)


def broadcast_to(input, size):  # noqa: A002
    return ops.broadcast_to(input, shape=tuple(size))


def broadcast_tensors(*tensors):
    shape = np.broadcast_shapes(*[tuple(_t(t).shape) for t in tensors])
    return tuple(broadcast_to(t, shape) for t in tensors)


def take(input, index):  # noqa: A002
    return ops.take(_t(input).reshape(-1), index, axis=0)


def masked_select(input, mask):  # noqa: A002
    x, m = broadcast_tensors(_t(input), _t(mask))
    return ops.take(x.reshape(-1), np.flatnonzero(_arr(m)), axis=0)


def nonzero(input, *, as_tuple=False):  # noqa: A002
    a = _arr(input)
    if a.ndim == 0:     # torch: a 0-d input is one element with no index
        hit = bool(a)
        if as_tuple:
            return (_no_grad_tensor(np.zeros(int(hit), np.int64)),)
        return _no_grad_tensor(np.zeros((int(hit), 0), np.int64))
    idx = np.nonzero(a)
    if as_tuple:
        return tuple(_no_grad_tensor(i.astype(np.int64)) for i in idx)
    return _no_grad_tensor(np.stack(idx, axis=1).astype(np.int64))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of elements is among test_elements (tensors or scalars); no gradient."""
    return _no_grad_tensor(np.isin(_arr(elements), _arr(test_elements),
                                   assume_unique=assume_unique, invert=invert))


def argwhere(input):  # noqa: A002
    return nonzero(input)


def _scatter_index(name, x, dim, index, src):
    """(index as an int64 operand, dim, src shaped as the index): an index tensor stays a
    tensor, so compile() traces it instead of reading its values."""
    idx = index if isinstance(index, Tensor) else np.asarray(index)
    if idx.ndim != x.ndim:
        raise RuntimeError(f"{name}: Index tensor must have the same number of dimensions as "
                           f"self tensor (index {tuple(idx.shape)}, self {tuple(x.shape)})")
    if idx.dtype != np.int64:
        idx = ops.cast(idx, np.dtype(np.int64)) if isinstance(idx, Tensor) else \
            idx.astype(np.int64)
    d = norm_axis(name, dim, x.ndim)
    in_range(idx, x, d, name)
    shape = tuple(idx.shape)
    same_dtype_source("scatter", x, src)   # NOTE: torch casts nothing here
    if not isinstance(src, Tensor) and np.ndim(src) == 0:
        src = np.full(shape, src, x.dtype)
    elif tuple(_t(src).shape) != shape:
        src = _t(src)[tuple(slice(0, n) for n in shape)]
    return idx, d, src


def _scatter_prep(name, x, dim, index, src):
    """_scatter_index with the index's values as a NumPy array."""
    idx, d, src = _scatter_index(name, x, dim, index, src)
    return _arr(idx), d, src


def scatter_add(input, dim, index, src):  # noqa: A002
    """input with src added at index along dim (torch.scatter_add)."""
    x = _t(input)
    idx, d, src = _scatter_index("scatter_add", x, dim, index, src)
    return x + ops.gather_grad(src, idx, x, axis=d)


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    x = _t(input)
    d = norm_axis("diff", dim, x.ndim)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if not n:
        return ops.copy(x)   # NOTE: n=0: a copy of input alone, prepend and append unused (torch)
    parts = [p for p in (prepend, x, append) if p is not None]
    x = ops.concat(*[_t(p) for p in parts], axis=d) if len(parts) > 1 else x
    lead = (slice(None),) * d
    for _ in range(n):
        m = x.shape[d]
        after, before = (ops.slice_(x, index=lead + (slice(1, m),)),
                         ops.slice_(x, index=lead + (slice(0, m - 1),)))
        # NOTE: bool: torch's diff is logical_xor (NumPy has no bool subtraction)
        x = ops.ne(after, before) if x.dtype == np.bool_ else after - before
    return x


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:    # NOTE: torch's default is "ij", with this warning
        warn_once("torch.meshgrid: in an upcoming release, it will be required to pass the "
                  "indexing argument.", stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    ts = [_t(t).reshape(-1) for t in tensors]
    sizes = [t.shape[0] for t in ts]
    if indexing == "xy" and len(ts) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(ts):
        k = i if indexing == "ij" or len(ts) < 2 or i > 1 else 1 - i
        shape = [1] * len(ts)
        shape[k] = t.shape[0]
        out.append(ops.broadcast_to(t.reshape(tuple(shape)), shape=tuple(sizes)))
    return tuple(out)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    if weights is not None and getattr(weights, "requires_grad", False):
        raise NotImplementedError("bincount: weights that require grad are not supported by "
                                  "dualgrad")
    w = None if weights is None else _arr(weights)
    return _no_grad_tensor(np.bincount(_arr(input), w, minlength))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,  # noqa: A002
                 sorter=None):
    side = side or ("right" if right else "left")
    seq, vals = _arr(sorted_sequence), _arr(input)
    if sorter is not None:
        seq = np.take_along_axis(seq, _arr(sorter), axis=-1)
    if seq.ndim == 1:
        out = np.searchsorted(seq, vals, side=side)
    else:
        rows = _rows(seq), _rows(vals)
        out = np.zeros(rows[1].shape, np.int64)
        for i, (s, v) in enumerate(zip(*rows)):
            out[i] = np.searchsorted(s, v, side=side)
        out = out.reshape(vals.shape)
    return _no_grad_tensor(out.astype(np.int32 if out_int32 else np.int64))


def _rows(a):
    """a as a matrix of its last dim (the row count spelled out: -1 is ambiguous at size 0)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- random -----------------------------------------------------------------------------------
def _gen(generator):
    from .generator import rng_of
    return rng_of(generator)


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """Indices drawn from each row's (unnormalised) weights, from uniform draws (NumPy's
    stream, not torch's) by ops, so a compiled function draws anew at every call: with
    replacement, by the inverse of each row's cumulative weights; without, the num_samples
    largest keys log(u) / w (Efraimidis and Spirakis' weighted sampling)."""
    from .generator import drawn
    x = _t(input)
    if x.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {x.ndim}")
    n = x.shape[-1]
    w = ops.stop_gradient(ops.cast(x.reshape(-1, n), np.float64))
    if not replacement:
        _check_enough_categories(w, num_samples)
    shape = (w.shape[0], num_samples if replacement else n)
    u = _t(drawn(generator, shape, np.float64, lambda g: g.random(shape)))
    if replacement:
        cdf = ops.cumsum(w, axis=1)
        cdf = ops.expand_dims(cdf / ops.slice_(cdf, index=(slice(None), slice(n - 1, n))), axis=1)
        out = ops.sum(ops.cast(ops.le(cdf, ops.expand_dims(u, axis=2)), np.int64), axis=2)
        out = ops.minimum(out, n - 1)        # NOTE: rounding of the last cumulative weight
    else:
        keys = ops.where(ops.gt(w, 0), ops.log(u) / ops.maximum(w, 1e-300), -np.inf)
        out = keys.topk(num_samples, dim=1).indices
    return out.reshape(tuple(x.shape[:-1]) + (num_samples,))


def _check_enough_categories(w, num_samples):
    """torch's error for more draws without replacement than nonzero weights (a value a
    compiled function cannot read while tracing: checked in eager calls)."""
    if ops.core.TRACING[0]:
        return
    if num_samples > int((_arr(w) > 0).sum(-1).min()):
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           "without replacement")


def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    """1 where a uniform draw is below the probability (input's, or p), in input's dtype;
    drawn at every call of a compiled function too (eager.generator.drawn)."""
    from .generator import drawn
    x = _t(input)
    shape = tuple(x.shape)
    u = _t(drawn(generator, shape, np.float64, lambda g: g.random(shape)))
    return ops.cast(ops.lt(ops.stop_gradient(u), ops.stop_gradient(x) if p is None else p),
                    x.dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """torch.normal: a tensor mean or std (shape broadcast from them, their dtype), or
    numbers mean and std with `size` (then dtype=, float32 by default)."""
    from .generator import drawn
    from .info import check_layout
    check_layout("normal", layout)
    tensors = [v for v in (mean, std) if hasattr(v, "dtype")]
    if dtype is not None and (tensors or size is None):
        raise TypeError("normal(): dtype= is taken only with numbers mean and std and a size "
                        "(torch.normal(2.0, 3.0, (4,), dtype=torch.float64)); a tensor mean or "
                        "std gives its own dtype")
    if size is not None:
        shape = tuple(size)
    else:
        shape = np.broadcast_shapes(*[tuple(getattr(v, "shape", ())) for v in (mean, std)])
    noise = _t(drawn(generator, shape, np.float32, lambda g: g.standard_normal(shape)))
    dtype = np.dtype(dtype) if dtype is not None else next(
        (np.dtype(v.dtype) for v in tensors if floating(np.dtype(v.dtype))),
        np.dtype(np.float32))
    mean, std = [ops.stop_gradient(v) if isinstance(v, Tensor) else v
                 for v in (mean, std)]
    out = ops.cast(ops.add(mean, ops.mul(std, noise)), dtype)
    return out.requires_grad_() if requires_grad else out


__all__ = TORCH_NAMES = [
    "add", "sub", "rsub", "mul", "neg", "multiply", "subtract", "negative",
    "mm", "bmm", "dot", "outer", "ger", "addmm", "baddbmm", "addcmul", "addcdiv", "einsum",
    "diagonal", "diag", "kron", "cdist", "var", "std", "std_mean", "var_mean", "prod",
    "cumprod", "amax", "amin", "count_nonzero", "logcumsumexp", "floor", "ceil", "round",
    "trunc", "fix", "frac", "fmod", "remainder", "floor_divide", "true_divide", "div",
    "divide", "log1p", "expm1", "log2", "log10", "reciprocal", "isnan", "isinf", "isfinite",
    "nan_to_num", "clamp_min", "clamp_max", "lerp", "logical_and", "logical_or",
    "logical_not", "logical_xor", "narrow", "unbind", "roll", "repeat_interleave", "tile",
    "broadcast_to", "broadcast_tensors", "take", "masked_select", "nonzero", "argwhere",
    "isin", "scatter_add", "diff", "meshgrid", "bincount", "searchsorted", "bucketize",
    "multinomial", "bernoulli", "normal"]
