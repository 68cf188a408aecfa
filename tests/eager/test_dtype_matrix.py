"""Every operator on every pair of dtypes, against torch: each Python operator with a tensor of
each of 9 dtypes on the left and, on the right, a tensor of each dtype or a Python scalar
(bool, small, negative, wide and float numbers) on either side; the Scalar arguments torch
casts instead of promoting (add/sub's alpha, addcmul's value) and the index ops that refuse a
source of another dtype. Eager must raise where torch raises and otherwise give torch's
dtype and values; compile() gives eager's dtype for the operators (one right-hand scalar per
pair, a capped sample: compiling every case would take minutes).

Found by this matrix, each a quiet difference before: bool ** 3 was bool (int64), uint8 & 3
and uint8 << 3 were int64 (uint8), 3 ** int8 was int64, uint8 ** -2 gave 1 (raises), bool - 1
and int - True computed (raise), True // 0 and True % 0 of integer tensors computed,
bool % 1.5 raised after subtraction of bools was refused (float32); uint8 += int64 raised (torch
wraps), int_tensor.masked_fill_(mask, 1.5) raised (1), sum(dtype=int8) was int64."""
import operator
import warnings

import numpy as np
import pytest

from dualgrad import compiler, eager

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = [True, 0, 3, -2, 200, 1.5, -0.5]
OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    "<": operator.lt, "==": operator.eq,
}


def _values(dtype):
    if dtype == "bool":
        return [True, False, True]
    if dtype == "uint8":
        return [0, 3, 250]
    return [-3, 0, 5] if dtype[0] in "iu" else [-1.5, 0.0, 2.25]


def _tensor(lib, dtype):
    return lib.tensor(_values(dtype), dtype=getattr(lib, dtype))


def _outcome(lib, fn):
    """("raises", exception name) or (dtype name, values as float64)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib)
    except Exception as e:  # noqa: BLE001 - which error is compared below, by kind
        return ("raises", type(e).__name__)
    arr = out.numpy() if hasattr(out, "numpy") else np.asarray(out)
    return (str(arr.dtype), arr.astype(np.float64))


def _differs(want, got):
    if (want[0] == "raises") != (got[0] == "raises"):
        return True
    if want[0] == "raises":
        return False
    return want[0] != got[0] or not np.allclose(want[1], got[1], rtol=1e-3, atol=1e-3,
                                                 equal_nan=True)


def _against_torch(what, fn):
    """[what, with both outcomes] when eager's outcome of fn(lib) differs from torch's."""
    want, got = _outcome(torch, fn), _outcome(eager, fn)
    if not _differs(want, got):
        return []
    return [f"{what}: torch {want[0]} {want[1]}, eager {got[0]} {got[1]}"]


def _cases(op):
    for left in DTYPES:
        for right in DTYPES:
            yield f"{left} {op} {right}", lambda L, a=left, b=right: \
                OPERATORS[op](_tensor(L, a), _tensor(L, b))
        for s in SCALARS:
            yield f"{left} {op} {s!r}", lambda L, a=left, s=s: OPERATORS[op](_tensor(L, a), s)
            yield f"{s!r} {op} {left}", lambda L, a=left, s=s: OPERATORS[op](s, _tensor(L, a))


@pytest.mark.parametrize("op", list(OPERATORS))
def test_an_operator_on_every_pair_of_dtypes_is_torchs(op):
    bad = []
    for what, fn in _cases(op):
        bad += _against_torch(what, fn)
    assert not bad, f"{len(bad)} of {len(list(_cases(op)))} cases differ:\n" + "\n".join(bad)


@pytest.mark.parametrize("op", list(OPERATORS))
def test_compile_gives_eager_dtypes_for_an_operator(op):
    bad = []
    for left in DTYPES:
        for right in ([left, "float32"] + [3, 1.5]):
            x = _tensor(eager, left)
            if isinstance(right, str):
                y = _tensor(eager, right)
                fn = lambda a, b: OPERATORS[op](a, b)   # noqa: E731
                args = (x, y)
            else:
                fn = lambda a, s=right: OPERATORS[op](a, s)   # noqa: E731
                args = (x,)
            want = _outcome(eager, lambda _: fn(*args))
            if want[0] == "raises":
                continue
            got = _outcome(eager, lambda _: compiler.compile(fn)(*args))
            if _differs(want, got):
                bad.append(f"{left} {op} {right!r}: eager {want[0]}, compiled {got[0]} {got[1]}")
    assert not bad, "\n".join(bad)


SCALAR_ARGS = {
    "add(alpha)": lambda L, a, b, k: L.add(a, b, alpha=k),
    "sub(alpha)": lambda L, a, b, k: L.sub(a, b, alpha=k),
    "add_(alpha)": lambda L, a, b, k: a.clone().add_(b, alpha=k),
    "addcmul(value)": lambda L, a, b, k: L.addcmul(a, b, b, value=k),
    "addcmul_(value)": lambda L, a, b, k: a.clone().addcmul_(b, b, value=k),
    "addcdiv(value)": lambda L, a, b, k: L.addcdiv(a, b, b + 7, value=k),
}


@pytest.mark.parametrize("name", list(SCALAR_ARGS))
def test_a_scalar_argument_takes_the_operands_dtype(name):
    bad = []
    for dtype in DTYPES:
        for k in (2, 1.5, -1.5, True):
            fn = lambda L, d=dtype, k=k: SCALAR_ARGS[name](L, _tensor(L, d), _tensor(L, d), k)  # noqa: E731,E501
            bad += _against_torch(f"{name} {dtype} {k!r}", fn)
    assert not bad, "\n".join(bad)


INDEX_OPS = {
    "scatter": lambda L, x, i, s: x.scatter(0, i, s),
    "scatter_add": lambda L, x, i, s: x.scatter_add(0, i, s),
    "scatter_reduce": lambda L, x, i, s: x.scatter_reduce(0, i, s, "sum"),
    "index_add": lambda L, x, i, s: x.index_add(0, i, s),
    "index_copy": lambda L, x, i, s: x.index_copy(0, i, s),
    "index_reduce": lambda L, x, i, s: x.index_reduce(0, i, s, "prod"),
    "put": lambda L, x, i, s: x.put(i, s),
    "put_": lambda L, x, i, s: x.clone().put_(i, s, accumulate=True),
    "index_put": lambda L, x, i, s: x.index_put((i,), s),
    "masked_scatter": lambda L, x, i, s: x.masked_scatter(L.tensor([True, True, False]), s),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(INDEX_OPS))
def test_an_index_op_refuses_a_source_of_another_dtype_as_torch(name):
    bad = []
    for self_dt in ("float32", "float64", "int64", "uint8"):
        for src_dt in ("float32", "float64", "int64", "uint8"):
            def fn(L, a=self_dt, b=src_dt):
                x = L.zeros(3, dtype=getattr(L, a))
                return INDEX_OPS[name](L, x, L.tensor([0, 1]),
                                       L.tensor([1, 2], dtype=getattr(L, b)))
            bad += _against_torch(f"{name} self {self_dt} source {src_dt}", fn)
    assert not bad, "\n".join(bad)


def _reduce_call(name):
    """x.name(...) with the arguments each of eager/refusals.py's names needs."""
    args = {"softmax": (1,), "log_softmax": (1,), "logcumsumexp": (1,), "kthvalue": (1, 1),
            "topk": (1,), "quantile": (0.5,), "nanquantile": (0.5,), "renorm": (2, 0, 1.0)}
    if name == "dist":
        return lambda lib, x: x.dist(x), lambda lib, x: lib.dist(x, x)
    if name == "bincount":
        return lambda lib, x: x.reshape(-1).bincount(), lambda lib, x: lib.bincount(x.reshape(-1))
    a = args.get(name, ())
    return (lambda lib, x: getattr(x, name)(*a)), (lambda lib, x: getattr(lib, name)(x, *a))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "float32"])
def test_a_method_or_function_torch_refuses_for_a_dtype_is_refused(dtype):
    """Every name of eager/refusals.py's table, as a method and as a function, on 2x3
    tensors of 5 dtypes: raises where torch raises, torch's dtype where torch computes."""
    from dualgrad.eager.refusals import REFUSED
    bad = []
    rows = [[True, False, True], [False, False, True]] if dtype == "bool" else \
        [[1, 0, 5], [2, 3, 4]] if dtype[0] in "iu" else [[-1.5, 0.0, 2.25], [1.0, 2.0, 3.0]]
    for name in REFUSED:
        for form, call in zip(("method", "function"), _reduce_call(name)):
            if form == "function" and not hasattr(torch, name):
                continue
            fn = lambda L, c=call: _first(c(L, L.tensor(rows, dtype=getattr(L, dtype))))  # noqa: E731,E501
            bad += _against_torch(f"{form} {name} of {dtype}", fn)
    assert not bad, "\n".join(bad)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


IN_PLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "&=": operator.iand,
    "<<=": operator.ilshift,
}


@pytest.mark.parametrize("op", list(IN_PLACE))
def test_an_in_place_operator_on_every_pair_of_dtypes_is_torchs(op):
    """x op= y writes the result in x's dtype where torch.can_cast allows it (uint8 += int64
    wraps) and raises where it does not (int64 += 1.5)."""
    bad = []
    for left in DTYPES:
        for right in DTYPES + [True, 3, -2, 1.5]:
            def fn(L, a=left, b=right):
                return IN_PLACE[op](_tensor(L, a), _tensor(L, b) if isinstance(b, str) else b)
            bad += _against_torch(f"{left} {op} {right!r}", fn)
    assert not bad, "\n".join(bad)


METHODS = {
    "masked_fill_(1.5)": lambda L, x: x.masked_fill_(L.tensor([True, False, True]), 1.5),
    "masked_fill(1.5)": lambda L, x: x.masked_fill(L.tensor([True, False, True]), 1.5),
    "sum(dtype=int8)": lambda L, x: x.sum(dtype=L.int8),
    "cumsum(dtype=float16)": lambda L, x: x.cumsum(0, dtype=L.float16),
    "mean(dtype=float64)": lambda L, x: x.mean(dtype=L.float64),
    "round(decimals=1)": lambda L, x: x.round(decimals=1),
    "clamp(max=1.5)": lambda L, x: x.clamp(max=1.5),
    "clamp_(max=1.5)": lambda L, x: x.clamp_(max=1.5),
    "fill_(1.5)": lambda L, x: x.fill_(1.5),
    "copy_(float64)": lambda L, x: x.copy_(L.tensor([1.7, -2.2, 3.9], dtype=L.float64)),
    "where(c, x, 1.5)": lambda L, x: L.where(L.tensor([True, False, True]), x, 1.5),
    "x[0] = 1.7": lambda L, x: (x.__setitem__(0, 1.7), x)[1],
    "x[x > 0] = 300": lambda L, x: (x.__setitem__(x > 0, 300), x)[1],
    "floor_divide_(1.5)": lambda L, x: x.floor_divide_(1.5),
    "true_divide_(2)": lambda L, x: x.true_divide_(2),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_a_method_with_a_number_or_dtype_argument_is_torchs(name):
    bad = []
    for dtype in DTYPES:
        fn = lambda L, d=dtype: METHODS[name](L, _tensor(L, d))   # noqa: E731
        bad += _against_torch(f"{name} of {dtype}", fn)
    assert not bad, "\n".join(bad)


LOSS_TARGETS = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                "binary_cross_entropy_with_logits"]   # NOTE: every loss: test_loss_matrix.py


@pytest.mark.parametrize("loss", LOSS_TARGETS)
def test_a_loss_with_a_target_of_another_dtype_is_torchs(loss):
    """A bool (or integer, or other float) target beside a float32 input: torch's mse_loss
    reads a bool target as the input's dtype (eager's refusal of a bool in a subtraction
    must not reach inside the loss)."""
    bad = []
    for dtype in DTYPES:
        def fn(L, d=dtype):
            f = getattr(L.nn.functional, loss)
            return f(L.tensor([0.5, 1.0, -2.0]), _tensor(L, d))
        bad += _against_torch(f"{loss} target {dtype}", fn)
    assert not bad, "\n".join(bad)


def test_where_of_two_numbers_is_torchs():
    bad = []
    for a, b in [(1.0, 0.0), (1, 0), (True, False), (1, 0.5), (True, 2), (2.5, True)]:
        fn = lambda L, a=a, b=b: L.where(L.tensor([True, False]), a, b)   # noqa: E731
        bad += _against_torch(f"where(c, {a!r}, {b!r})", fn)
    assert not bad, bad


def test_can_cast_is_torchs():
    bad = [(a, b) for a in DTYPES for b in DTYPES
           if eager.can_cast(getattr(eager, a), getattr(eager, b))
           != torch.can_cast(getattr(torch, a), getattr(torch, b))]
    assert not bad, bad


def test_the_refusal_tables_example_runs():
    import doctest

    from dualgrad.eager import refusals
    assert doctest.testmod(refusals).failed == 0


def _x(L):
    return L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])


INDEX_ARGS = {
    "index_select": lambda L, i: L.index_select(_x(L), 0, i),
    "Tensor.index_select": lambda L, i: _x(L).index_select(0, i),
    "gather": lambda L, i: L.gather(_x(L), 1, i.reshape(3, 1)),
    "scatter": lambda L, i: _x(L).scatter(1, i.reshape(3, 1), L.ones(3, 1)),
    "scatter_": lambda L, i: _x(L).scatter_(1, i.reshape(3, 1), L.ones(3, 1)),
    "scatter_add": lambda L, i: _x(L).scatter_add(1, i.reshape(3, 1), L.ones(3, 1)),
    "scatter_reduce": lambda L, i: _x(L).scatter_reduce(1, i.reshape(3, 1), L.ones(3, 1), "sum"),
    "index_add": lambda L, i: _x(L).index_add(0, i, L.ones(3, 3)),
    "index_add_": lambda L, i: _x(L).index_add_(0, i, L.ones(3, 3)),
    "index_copy": lambda L, i: _x(L).index_copy(0, i, L.ones(3, 3)),
    "index_fill": lambda L, i: _x(L).index_fill(0, i, -1.0),
    "index_reduce": lambda L, i: _x(L).index_reduce(0, i, L.ones(3, 3), "prod"),
    "take": lambda L, i: L.take(_x(L), i),
    "put": lambda L, i: _x(L).put(i, L.ones(3)),
    "take_along_dim": lambda L, i: L.take_along_dim(_x(L), i.reshape(3, 1), 1),
    "x[i]": lambda L, i: _x(L)[i],
    "x[i, i]": lambda L, i: _x(L)[i, i],
    "x[i] = 0": lambda L, i: (_x(L).__setitem__(i, 0.0), 0)[1],
    "x[i] = rows": lambda L, i: (_x(L).__setitem__(i, L.zeros(3) + 7), 0)[1],
    "index_put": lambda L, i: _x(L).index_put((i,), L.tensor(0.0)),
    "embedding": lambda L, i: L.nn.functional.embedding(i, _x(L)),
    "one_hot": lambda L, i: L.nn.functional.one_hot(i, 3),
}


@pytest.mark.filterwarnings("ignore::UserWarning")   # NOTE: torch's uint8 mask deprecation
@pytest.mark.parametrize("name", list(INDEX_ARGS))
def test_an_index_argument_of_each_dtype_is_taken_or_refused_as_torch(name):
    """int64 (and int32 where torch takes it) as positions, bool as a mask, uint8 as a mask
    in t[i] (torch's deprecated byte mask: it selects rows, it does not index them), every
    other dtype refused with torch's error."""
    bad = []
    for dtype in ["bool", "uint8", "int8", "int16", "int32", "int64", "float32"]:
        def fn(L, d=dtype):
            i = L.tensor([True, False, True] if d == "bool" else [0, 2, 1],
                         dtype=getattr(L, d))
            return INDEX_ARGS[name](L, i)
        bad += _against_torch(f"{name} with a {dtype} index", fn)
    if name in ("gather", "scatter", "take"):   # NOTE: an empty index: torch's gather and
        for dtype in ["uint8", "int16", "float32"]:   # scatter do not check its dtype
            def empty(L, d=dtype):
                i = L.zeros(0, 3, dtype=getattr(L, d))
                return L.gather(_x(L), 0, i) if name == "gather" else \
                    _x(L).scatter(0, i, _x(L)[:0]) if name == "scatter" else L.take(_x(L), i)
            bad += _against_torch(f"{name} with an empty {dtype} index", empty)
    assert not bad, "\n".join(bad)


def _mixed_cases(L):
    F = L.nn.functional
    x32, x64 = L.ones(2, 3), L.ones(2, 3, dtype=L.float64)
    x16, i64 = L.ones(2, 3, dtype=L.float16), L.ones(2, 3, dtype=L.int64)
    w32, w64 = L.ones(4, 3), L.ones(4, 3, dtype=L.float64)
    img64, k32 = L.ones(1, 2, 5, 5, dtype=L.float64), L.ones(3, 2, 3, 3)
    return {
      "linear(f64 x, f32 w)": lambda: F.linear(x64, w32),
      "linear(f32 x, f64 w)": lambda: F.linear(x32, w64),
      "linear(f32 x, f32 w, f64 b)": lambda: F.linear(x32, w32, L.ones(4, dtype=L.float64)),
      "linear(i64 x, f32 w)": lambda: F.linear(i64, w32),
      "matmul f32@f64": lambda: x32 @ w64.T,
      "matmul f64@f32": lambda: x64 @ w32.T,
      "matmul i64@f32": lambda: i64 @ w32.T,
      "mm f16@f32": lambda: L.mm(x16, w32.T),
      "bmm f32 f64": lambda: L.bmm(x32[None], w64.T[None]),
      "conv2d(f64 x, f32 w)": lambda: F.conv2d(img64, k32),
      "conv2d(f32 x, f32 w, f64 b)": lambda: F.conv2d(img64.float(), k32, L.ones(3, dtype=L.float64)),
      "Linear module(f64)": lambda: L.nn.Linear(3, 4)(x64),
      "Conv2d module(f64)": lambda: L.nn.Conv2d(2, 3, 3)(img64),
      "LayerNorm module(f64)": lambda: L.nn.LayerNorm(3)(x64),
      "layer_norm(f64 x, f32 w)": lambda: F.layer_norm(x64, (3,), L.ones(3), L.zeros(3)),
      "layer_norm(f32 x, f64 w)": lambda: F.layer_norm(x32, (3,), L.ones(3, dtype=L.float64), L.zeros(3, dtype=L.float64)),
      "BatchNorm1d module(f64)": lambda: L.nn.BatchNorm1d(3)(x64),
      "batch_norm(f64, f32 stats)": lambda: F.batch_norm(x64, L.zeros(3), L.ones(3), training=False),
      "group_norm(f64, f32 w)": lambda: F.group_norm(img64, 1, L.ones(2), L.zeros(2)),
      "embedding(i64, f64 w)": lambda: F.embedding(L.tensor([0, 1]), w64),
      "Embedding(int32 idx)": lambda: L.nn.Embedding(4, 3)(L.tensor([0, 1], dtype=L.int32)),
      "LSTM module(f64)": lambda: L.nn.LSTM(3, 4, batch_first=True)(x64[None])[0],
      "GRU module(f64)": lambda: L.nn.GRU(3, 4)(x64[None])[0],
      "MultiheadAttention(f64)": lambda: L.nn.MultiheadAttention(3, 1)(x64[None], x64[None], x64[None])[0],
      "prelu(f64, f32 w)": lambda: F.prelu(x64, L.ones(1)),
      "addmm(f32, f64, f64)": lambda: L.addmm(L.ones(2, 4), x64, w64.T),
      "baddbmm(f64, f32, f32)": lambda: L.baddbmm(L.ones(1, 2, 4, dtype=L.float64), x32[None], w32.T[None]),
      "einsum f32 f64": lambda: L.einsum("ij,kj->ik", x32, w64),
      "dot f32 f64": lambda: L.dot(L.ones(3), L.ones(3, dtype=L.float64)),
      "cross_entropy(f64 logits)": lambda: F.cross_entropy(x64, L.tensor([0, 1])),
      "mse_loss(f32, f64)": lambda: F.mse_loss(x32, x64),
      "scaled_dot_product_attention(f32,f64,f64)": lambda: F.scaled_dot_product_attention(x32[None], x64[None], x64[None]),
      "interpolate(f64)": lambda: F.interpolate(img64, scale_factor=2),
      "max_pool2d(i64)": lambda: F.max_pool2d(L.ones(1, 1, 4, 4, dtype=L.int64), 2),
      "avg_pool2d(i64)": lambda: F.avg_pool2d(L.ones(1, 1, 4, 4, dtype=L.int64), 2),
      "softmax(i64)": lambda: F.softmax(i64, dim=1),
      "relu(i64)": lambda: F.relu(i64),
      "gelu(i64)": lambda: F.gelu(i64),
      "sigmoid(i64)": lambda: L.sigmoid(i64),
      "dropout(i64)": lambda: F.dropout(i64, 0.0),
      "tanh(bool)": lambda: L.tanh(L.tensor([True])),
      "cumsum(bool)": lambda: L.cumsum(L.tensor([True, True]), 0),
      "mean(bool)": lambda: L.tensor([True]).float().mean(),
      "pad(i64)": lambda: F.pad(i64, (1, 1)),
      "normalize(i64)": lambda: F.normalize(i64),
      "cosine_similarity(f32,f64)": lambda: F.cosine_similarity(x32, x64),
      "pairwise_distance(f32,f64)": lambda: F.pairwise_distance(x32, x64),
      "cdist(f32,f64)": lambda: L.cdist(x32, x64),
    }


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_float64_batch_into_a_float32_layer_raises_as_torch():
    """torch gives the matrix products, convolutions, normalisations, RNNs and attention no
    type promotion: a float64 (or integer) input into float32 weights raises there ("expected
    scalar type Float but found Double") and must raise here, not compute in float64
    (eager/refusals.py SAME_DTYPE); the rest of the table computes in both."""
    bad = []
    for name in _mixed_cases(torch):
        # NOTE: dtypes only: the layers draw their own weights
        bad += _against_torch(name, lambda L, n=name: _mixed_cases(L)[n]().detach() * 0)
    assert not bad, "\n".join(bad)
