"""PyTorch's OpInfo database (`op_db`) as the oracle of `dualgrad.eager`.

For one op_db entry:
- `resolve(op)` finds dualgrad's callable: the entry's name as a path under `dualgrad.eager`
  (`nn.functional.conv2d` -> `eager.nn.functional.conv2d`, `linalg.norm`, `special.*`, ...),
  a Tensor method (`__radd__`, `T`) on `eager.Tensor`, or the entry's own lambda run with
  `torch` replaced by `dualgrad.eager` (`lambda x: x.contiguous()`). None: not provided.
- `samples(op, dtype)` gives torch's `sample_inputs(device="cpu", dtype=...)` (float64 with
  requires_grad where the entry supports autograd).
- `check_sample(op, fn, sample, mode)` runs the sample on torch and on dualgrad (eager, or
  inside `dualgrad.compiler.compile()` of a function calling it) and returns a list of
  differences (empty: agrees): result structure, shape, dtype, values (torch.testing's
  tolerances for the dtype), gradients of float64 samples against torch's autograd (against
  finite differences where op_db marks torch's own gradient as failing gradcheck), and
  aliasing (an in-place write through each result changes the inputs exactly when torch's
  does). As torch's tests, values go through the sample's output_process_fn_grad (eigenvectors
  compared by absolute value) and gradients through the entry's gradcheck_wrapper.
  dualgrad may be more accurate than torch, never less: values beyond torch's tolerance pass
  when they are at least as close as torch's to a higher-precision reference, torch's result
  on the sample upcast to float64 or, for the Bessel functions, mpmath's (opdb_accuracy.py).

Random ops (torch's own result changes with the seed) are compared in shape and dtype only:
the streams differ by design (docs/pytorch-compat.md, "Random streams differ").
Used by tests/eager/test_opdb.py and tests/eager/opdb_summary.py.
"""
from __future__ import annotations

import functools
import math
import random
import types
import unittest
import warnings

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

from dualgrad import compiler, eager

from .opdb_accuracy import VALUES_DIFFER, at_least_as_accurate, precise_result

OP_DB = op_db

# torch dtype -> dualgrad dtype name, in the order the reports list them
DTYPES = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
          torch.int32: "int32", torch.int64: "int64", torch.float16: "float16",
          torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
          torch.complex64: "complex64", torch.complex128: "complex128"}
COMPLEX = (torch.complex64, torch.complex128)
BY_NAME = {v: k for k, v in DTYPES.items()}
_NAMESPACES = ("", "nn.functional", "nn", "linalg", "special", "fft")


def entry_id(op) -> str:
    """`name` or `name.variant_test_name`: the key of an entry in every table."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def entries():
    return {entry_id(op): op for op in OP_DB}


def eager_dtype(name):
    """dualgrad's dtype of that name, or None when dualgrad has none."""
    return getattr(eager, name if name != "bool" else "bool_", None)


# -- resolving an entry to dualgrad's callable -----------------------------------------------
def _path(root, dotted):
    obj = root
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except (AttributeError, NotImplementedError):
            return None
    return obj


def _code_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _seeded(fn, *args, **kwargs):
    """op_db's wrapper_set_seed, on dualgrad's generator."""
    eager.manual_seed(42)
    return fn(*args, **kwargs)


def _rebound_lambda(f):
    """The entry's lambda with `torch` meaning dualgrad.eager, or None when a name it uses
    is not provided."""
    names = _code_names(f.__code__) - {"wrapper_set_seed", "torch"}
    spaces = [eager, eager.Tensor, eager.nn, eager.nn.functional, eager.linalg, eager.special]
    for n in names:
        if not any(_path(ns, n) is not None for ns in spaces):
            return None
    glob = dict(f.__globals__, torch=eager, wrapper_set_seed=_seeded)
    return types.FunctionType(f.__code__, glob, f.__name__, f.__defaults__, f.__closure__)


def resolve(op):
    """dualgrad's callable for the entry, called as torch's `op.op(input, *args, **kwargs)`;
    None when dualgrad does not provide it."""
    f = op.op
    qual = getattr(f, "__qualname__", "") or ""
    if "<lambda>" in qual:
        return _rebound_lambda(f)
    if qual.startswith(("TensorBase.", "Tensor.")):
        return _path(eager.Tensor, qual.split(".", 1)[1])
    if op.name.startswith("torch.") or op.name.startswith("_"):
        return None          # aten internals (torch.ops.aten.*, _softmax_backward_data)
    return _path(eager, op.name)


# -- samples ---------------------------------------------------------------------------------
def supported_dtypes(op):
    """The dtypes of DTYPES torch supports for the entry on CPU, in DTYPES' order."""
    sup = op.supported_dtypes("cpu")
    return [d for d in DTYPES if d in sup]


def samples(op, dtype, cap=None):
    """torch's sample inputs for one dtype (float64 with requires_grad where the entry
    supports autograd), the first `cap` of them."""
    rg = dtype == torch.float64 and op.supports_autograd
    out = []
    # NOTE: op.sample_inputs wraps this generator in a tracker that walks the Python stack
    # (inspect.stack) per sample to find a unittest method: 95% of the time, for nothing here
    # NOTE: some entries draw arguments with Python's `random` (huber_loss's delta): seeded
    # too, so every run checks the same samples (the previous state is put back)
    torch.manual_seed(0)
    state = random.getstate()
    random.seed(0)
    try:
        for s in op.sample_inputs_func(op, "cpu", dtype, rg):
            out.append(s)
            if cap is not None and len(out) >= cap:
                break
    finally:
        random.setstate(state)
    return out


# -- converting torch values to dualgrad's ---------------------------------------------------
class Unconvertible(Exception):
    """A sample holds a torch object dualgrad has no counterpart of."""


def to_eager(v, leaves):
    """A sample's value with torch tensors as dualgrad tensors (leaves collects the pairs
    (torch tensor, dualgrad tensor) of every tensor converted)."""
    if isinstance(v, torch.Tensor):
        name = DTYPES.get(v.dtype)
        dt = eager_dtype(name) if name else None
        if dt is None:
            raise Unconvertible(f"dualgrad has no dtype {v.dtype}")
        t = _as_view(v, dt)
        if t is None:
            t = eager.tensor(_host(v), dtype=dt, requires_grad=v.requires_grad)
        leaves.append((v, t))
        return t
    if isinstance(v, torch.dtype):
        dt = eager_dtype(DTYPES.get(v, "-"))
        if dt is None:
            raise Unconvertible(f"dualgrad has no dtype {v}")
        return dt
    if isinstance(v, torch.Size):
        return tuple(v)
    if isinstance(v, torch.device):
        return eager.device(str(v))
    if isinstance(v, torch.memory_format):
        fmt = getattr(eager, str(v).split(".")[-1], None)
        if fmt is None:
            raise Unconvertible(f"a memory_format argument ({v})")
        return fmt
    if isinstance(v, torch.layout):
        lay = getattr(eager, str(v).split(".")[-1], None)
        if lay is None:
            raise Unconvertible(f"a layout argument ({v})")
        return lay
    if isinstance(v, (list, tuple)):
        return type(v)(to_eager(x, leaves) for x in v)
    if isinstance(v, dict):
        return {k: to_eager(x, leaves) for k, x in v.items()}
    if callable(v) and not isinstance(v, type):
        return _callable_to_eager(v)
    return v


def _host(v):
    # NOTE: resolve_conj: op_db's complex samples include conjugate views (the conj bit),
    # whose .numpy() would be the unconjugated memory
    v = v.detach().resolve_conj()
    return v.to(torch.float32 if v.dtype == torch.bfloat16 else v.dtype).numpy().copy()


def _as_view(v, dt):
    """A torch view (base[5:15], x.t()) as the same view of a dualgrad base, so that what
    reads storage (as_strided, storage_offset) sees torch's; None for any other tensor."""
    base = v._base
    if base is None or not base.is_contiguous() or v.dtype != base.dtype or v.is_conj() or \
            v.is_neg():
        return None
    whole = eager.tensor(_host(base), dtype=dt)
    view = eager.as_strided(whole, tuple(v.shape), v.stride(), v.storage_offset()).detach()
    return view.requires_grad_(True) if v.requires_grad else view


def _callable_to_eager(f):
    """dualgrad's counterpart of a torch callable passed as an argument (a loss's
    distance_function): a torch function -> dualgrad's function of the same name; a torch.nn
    module without parameters -> dualgrad's module of the same class name with the same
    settings (the attributes torch lists in `__constants__`)."""
    if isinstance(f, torch.nn.Module):
        cls = getattr(eager.nn, type(f).__name__, None)
        if cls is None or any(True for _ in f.parameters()) or any(True for _ in f.buffers()):
            raise Unconvertible(f"a callable argument ({f!r})")
        ours = cls()
        for name in getattr(type(f), "__constants__", ()):
            setattr(ours, name, getattr(f, name))
        return ours
    mod, name = getattr(f, "__module__", None) or "", getattr(f, "__name__", "")
    space = {"torch": "", "torch.functional": "", "torch.nn.functional": "nn.functional",
             "torch.linalg": "linalg", "torch.special": "special"}.get(mod)
    ours = None if space is None else _path(eager, f"{space}.{name}".lstrip("."))
    if ours is None:
        raise Unconvertible(f"a callable argument ({f!r})")
    return ours


# -- comparing results -----------------------------------------------------------------------
def _np(t):
    return np.asarray(t.detach()) if isinstance(t, eager.Tensor) else np.asarray(t)   # bf16 too


def _tolerances(dtype):
    """torch.testing.assert_close's (rtol, atol) for the dtype, except the absolute tolerance
    of the half types: 1e-5 is below float16's resolution near 1 (9.8e-4), so two correct
    kernels that round an intermediate differently (torch's float16 log_softmax rounds x - max
    to float16; dualgrad computes in float32 and rounds once) differ by more; 1e-3 there."""
    if dtype in (torch.float16,):
        return 1e-3, 1e-3
    if dtype == torch.bfloat16:
        return 1.6e-2, 1e-2
    if dtype == torch.float32:
        return 1.3e-6, 1e-5
    if dtype in (torch.float64, torch.complex128):
        return 1e-7, 1e-7
    if dtype == torch.complex64:
        return 1.3e-6, 1e-5
    return 0, 0


def reference_tolerances(op):
    """{torch dtype: (rtol, atol)}: what the entry's own tests allow where torch's result is
    compared with another implementation's, NumPy's reference (`toleranceOverride`s on
    TestCommon.test_numpy_refs, for the CPU or any device), as dualgrad's is another one:
    addbmm's float32 1.3e-5, for BLAS's summation orders. Used where above the defaults."""
    out = {}
    for info in getattr(op, "decorators", None) or ():
        if getattr(info, "cls_name", None) != "TestCommon" or \
                getattr(info, "test_name", None) != "test_numpy_refs" or \
                getattr(info, "device_type", None) not in (None, "cpu"):
            continue
        for dec in getattr(info, "decorators", ()):
            for dtype, t in (getattr(dec, "d", None) or {}).items():
                out[dtype] = (t.rtol, t.atol)
    return out


def compare_values(op, s, ours, ref, where="result", values=True, tols=None, process=None):
    """compare(), and where values differ, compare() again against the sample's
    `precise_result` (through `process`, the sample's output processing, when given): values
    farther from torch's than its tolerance pass when they are at least as close to that
    higher-precision reference as torch's are (tests/eager/opdb_accuracy.py)."""
    diffs = compare(ours, ref, where, values, tols)
    if not any(VALUES_DIFFER in d for d in diffs):
        return diffs
    precise = precise_result(op, s, entry_id(op))
    if precise is None:
        return diffs
    return compare(ours, ref, where, values, tols, process(precise) if process else precise)


def compare(ours, ref, where="result", values=True, tols=None, precise=None):
    """Differences between dualgrad's result and torch's, as a list of strings. tols: the
    entry's `reference_tolerances`, used where they are wider than the dtype's defaults.
    precise: a higher-precision result of the same structure (`precise_result`): values
    that differ from torch's pass when they are at least as close to it as torch's are."""
    if isinstance(ref, torch.Tensor):
        if not isinstance(ours, eager.Tensor):
            return [f"{where}: torch returns a Tensor, dualgrad a {type(ours).__name__}"]
        a = _np(ours)
        if tuple(a.shape) != tuple(ref.shape):
            return [f"{where}: shape {tuple(a.shape)} != torch's {tuple(ref.shape)}"]
        if str(a.dtype) != DTYPES.get(ref.dtype, str(ref.dtype)):
            return [f"{where}: dtype {a.dtype} != torch's {ref.dtype}"]
        if not values:
            return []
        rtol, atol = _tolerances(ref.dtype)
        if tols and ref.dtype in tols:
            rtol, atol = max(rtol, tols[ref.dtype][0]), max(atol, tols[ref.dtype][1])
        host = np.float32 if a.dtype.name == "bfloat16" else a.dtype   # ml_dtypes' bfloat16
        got = torch.from_numpy(np.array(a, dtype=host, copy=True)).to(ref.dtype)
        try:
            torch.testing.assert_close(got, ref.detach(), rtol=rtol, atol=atol,
                                       equal_nan=True, check_stride=False)
        except AssertionError as e:
            if isinstance(precise, torch.Tensor) and tuple(precise.shape) == tuple(ref.shape) \
                    and (ref.dtype.is_floating_point or ref.dtype.is_complex) and \
                    at_least_as_accurate(_wide(got), _wide(ref.detach()),
                                         _wide(precise.detach()), ref.dtype, rtol, atol):
                return []
            msg = " ".join(str(e).split())[:300]
            return [f"{where}: {VALUES_DIFFER} ({msg})"]
        return []
    if isinstance(ref, (tuple, list)):
        if not isinstance(ours, (tuple, list)) or len(ours) != len(ref):
            n = len(ours) if isinstance(ours, (tuple, list)) else type(ours).__name__
            return [f"{where}: torch returns a {type(ref).__name__} of {len(ref)}, "
                    f"dualgrad {n}"]
        fields = getattr(type(ref), "_fields", None) or getattr(ref, "_fields", None)
        if fields and getattr(ours, "_fields", None) != fields:
            return [f"{where}: torch's fields {fields}, dualgrad's "
                    f"{getattr(ours, '_fields', None)}"]
        parts = precise if isinstance(precise, (tuple, list)) and len(precise) == len(ref) \
            else [None] * len(ref)
        return [d for i, (o, r, p) in enumerate(zip(ours, ref, parts))
                for d in compare(o, r, f"{where}[{i}]", values, tols, p)]
    if isinstance(ref, (bool, int, float)):
        if isinstance(ours, eager.Tensor) or type(ours) is not type(ref):
            return [f"{where}: torch returns {type(ref).__name__} {ref!r}, dualgrad "
                    f"{type(ours).__name__} {ours!r}"]
        same = ours == ref or (isinstance(ref, float) and math.isnan(ref) and math.isnan(ours))
        if values and not same and not (isinstance(ref, float) and math.isclose(
                ours, ref, rel_tol=1e-5, abs_tol=1e-6)):
            return [f"{where}: {ours!r} != torch's {ref!r}"]
        return []
    if isinstance(ref, torch.dtype):
        return [] if str(ours) == DTYPES.get(ref) else [f"{where}: {ours} != torch's {ref}"]
    if ref is None:
        return [] if ours is None else [f"{where}: torch returns None, dualgrad {ours!r}"]
    if ours != ref:
        return [f"{where}: {ours!r} != torch's {ref!r}"]
    return []


def _wide(t):
    """t in float64, or complex128 when complex (what the accuracy rule compares in)."""
    return t.resolve_conj().to(torch.complex128) if t.dtype.is_complex else t.double()


def _tensors(v):
    if isinstance(v, (torch.Tensor, eager.Tensor)):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for x in v for t in _tensors(x)]
    return []


# -- the sample's run on each side -----------------------------------------------------------
def _torch_call(op, s):
    return op.op(s.input, *s.args, **s.kwargs)


def is_random(op, s, ref):
    """torch's own result changes with the seed: compare shape and dtype only."""
    if "empty" in op.name:
        return True          # uninitialised memory: shape and dtype are all there is
    if _uses_seed(op):
        return True          # op_db seeds torch's generator for it: it draws random numbers
    if not op.is_factory_function and "rand" not in op.name:
        return False
    torch.manual_seed(2)
    again = _torch_call(op, s)
    return bool(compare_torch(again, ref))


def _uses_seed(op):
    code = getattr(op.op, "__code__", None)
    return code is not None and "wrapper_set_seed" in _code_names(code) or op.name in (
        "bernoulli", "multinomial", "normal", "nn.functional.dropout", "rand_like")


def compare_torch(a, b):
    ta, tb = _tensors(a), _tensors(b)
    return len(ta) != len(tb) or any(x.shape != y.shape or not torch.equal(x, y) for x, y in zip(ta, tb))


def _call(fn, mode, args, kwargs):
    """dualgrad's call, eagerly or inside compile() (tensors as the compiled function's
    arguments, everything else closed over)."""
    if mode == "eager":
        return fn(*args, **kwargs), False
    flat = []
    spec = _flatten((args, kwargs), flat)

    def traced(*ts):
        a, k = _unflatten(spec, iter(ts))
        return fn(*a, **k)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = compiler.compile(traced)(*flat)
    broke = any("graph break" in str(x.message) or "runs eagerly" in str(x.message) for x in w)
    return out, broke


def _flatten(v, flat):
    if isinstance(v, eager.Tensor):
        flat.append(v)
        return ("T",)
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return (type(v), [_flatten(x, flat) for x in v])
    if isinstance(v, dict):
        return (dict, {k: _flatten(x, flat) for k, x in v.items()})
    return ("C", v)


def _unflatten(spec, it):
    if spec[0] == "T":
        return next(it)
    if spec[0] == "C":
        return spec[1]
    if spec[0] is dict:
        return {k: _unflatten(x, it) for k, x in spec[1].items()}
    return spec[0](_unflatten(x, it) for x in spec[1])


def _cotangent(ref_out, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(t.shape)) for t in ref_out]


def check_grads(ours, ref, leaves):
    """Gradients of sum(out * cotangent) over the float outputs, against torch's autograd."""
    r_outs = [t for t in _tensors(ref) if t.requires_grad and t.dtype.is_floating_point]
    if not r_outs:
        return []
    o_all = _tensors(ours)
    if len(o_all) != len(_tensors(ref)):
        return ["gradient: outputs differ"]
    pick = [i for i, t in enumerate(_tensors(ref)) if t.requires_grad and t.dtype.is_floating_point]
    o_outs = [o_all[i] for i in pick]
    cts = _cotangent(r_outs)
    r_in = [(r, o) for r, o in leaves if r.requires_grad]
    rg = torch.autograd.grad([o for o in r_outs], [r for r, _ in r_in],
                             [torch.from_numpy(c).to(o.dtype) for c, o in zip(cts, r_outs)],
                             allow_unused=True)
    if not all(o.requires_grad for o in o_outs):
        return ["gradient: dualgrad's result does not require grad where torch's does"]
    og = _our_grads(o_outs, cts, [o for _, o in r_in])
    diffs = []
    for k, ((r, _), gr, go) in enumerate(zip(r_in, rg, og)):
        if gr is None:
            gr = torch.zeros_like(r)
        if go is None:
            go = eager.zeros(*r.shape, dtype=eager.float64)
        diffs += compare(go, gr, f"gradient of input {k}")
    return diffs


def _in_dualgrad(f):
    """f (a function of op_db's module) with `torch` meaning dualgrad.eager."""
    g = types.FunctionType(f.__code__, dict(f.__globals__, torch=eager), f.__name__,
                           f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


def _output_processing(s):
    """(torch's, dualgrad's) form of the sample's output_process_fn_grad, or None when it
    has none: op_db's way of comparing results defined up to a choice (eigenvectors up to
    sign: their absolute values), which torch's own tests apply to both sides."""
    f = s.output_process_fn_grad
    if "SampleInput.__init__" in getattr(f, "__qualname__", ""):
        return None          # the default: the identity
    ours = _in_dualgrad(f)

    def for_dualgrad(out):
        try:
            return ours(out)
        except Exception:  # noqa: BLE001 - it calls torch helpers dualgrad lacks: unprocessed
            return out
    return f, for_dualgrad


def _gradient_functions(op, fn, s, mode, args, kwargs, ours, ref, process):
    """(torch's forward, dualgrad's and torch's outputs) whose gradients are compared: the
    call through op_db's gradcheck_wrapper (a Hermitian input as x + x^H) and its output
    processing, as torch's gradient tests take them."""
    wrapper = op.gradcheck_wrapper
    wrapped = not wrapper.__qualname__.startswith("OpInfo.") and \
        wrapper.__name__ != "wrapper_set_seed"
    t_proc, o_proc = process or (lambda out: out, lambda out: out)

    def forward():
        out = wrapper(op.op, s.input, *s.args, **s.kwargs) if wrapped else _torch_call(op, s)
        return t_proc(out)
    if wrapped:
        try:
            ours_w, _ = _call(lambda *a, **k: _in_dualgrad(wrapper)(fn, *a, **k), mode, args,
                              kwargs)
            return forward, o_proc(ours_w), forward()
        except AttributeError:
            wrapped = False     # NOTE: it calls a torch helper dualgrad lacks (torch.masked's)
    return forward, o_proc(ours), t_proc(ref)


def _our_grads(outs, cts, inputs):
    """dualgrad's gradients of sum(out * cotangent) (the graph kept for a second look)."""
    total = None
    for o, c in zip(outs, cts):
        term = (o * eager.tensor(c, dtype=o.dtype)).sum()
        total = term if total is None else total + term
    return eager.autograd.grad(total, inputs, allow_unused=True, retain_graph=True)


def torch_gradient_fails_gradcheck(op):
    """op_db marks torch's own gradient of the entry as failing its gradient check
    (TestBwdGradients.test_fn_grad an expected failure on CPU): torch's autograd is then no
    oracle, finite differences are (as_strided_scatter's input gradient)."""
    for d in op.decorators:
        if getattr(d, "cls_name", None) == "TestBwdGradients" and \
                getattr(d, "test_name", None) == "test_fn_grad" and \
                unittest.expectedFailure in d.decorators and \
                d.device_type in (None, "cpu") and d.active_if and \
                (d.dtypes is None or torch.float64 in d.dtypes):
            return True
    return False


def check_grads_numerically(forward, ours, ref, leaves, against_torch, eps=1e-6):
    """Where torch's gradient is known wrong: dualgrad's gradients of sum(out * cotangent)
    against central differences of torch's forward (float64), or the differences from torch
    when they disagree with those too."""
    pick = [i for i, t in enumerate(_tensors(ref)) if t.requires_grad and
            t.dtype.is_floating_point]
    cts = _cotangent([_tensors(ref)[i] for i in pick])
    r_in = [(r, o) for r, o in leaves if r.requires_grad]

    def objective():
        with torch.no_grad():
            outs = _tensors(forward())
        return sum(float((outs[i].double() * torch.from_numpy(c)).sum())
                   for i, c in zip(pick, cts))
    og = _our_grads([_tensors(ours)[i] for i in pick], cts, [o for _, o in r_in])
    for (r, _), go in zip(r_in, og):
        num = torch.zeros_like(r, dtype=torch.float64)
        flat, nflat = r.detach().view(-1), num.view(-1)
        for j in range(flat.numel()):
            keep = float(flat[j])
            with torch.no_grad():
                flat[j] = keep + eps
                up = objective()
                flat[j] = keep - eps
                down = objective()
                flat[j] = keep
            nflat[j] = (up - down) / (2 * eps)
        got = np.zeros(tuple(r.shape)) if go is None else _np(go)
        if not np.allclose(got, num.numpy(), rtol=1e-5, atol=1e-5):
            return against_torch + ["gradient: differs from finite differences too"]
    return []


def _write_through(outs):
    """An in-place write to every element of each result (negation for bool, +1 else)."""
    for o in outs:
        if o.numel() == 0:
            continue
        if o.dtype in (torch.bool, eager.bool_):
            o.logical_not_()
        else:
            o.add_(1)


def check_aliasing(op, fn, s, mode):
    """An in-place write through the result changes the inputs exactly when torch's does."""
    with torch.no_grad():
        r_leaves = []
        rs = _detached(s)
        ref = _torch_call(op, rs)
        r_ins = _tensors((rs.input, rs.args, rs.kwargs))
        before = [t.clone() for t in r_ins]
        try:
            _write_through(_tensors(ref))
        except RuntimeError:
            return []        # torch refuses the write (an expanded or overlapping view)
        torch_changed = any(not torch.equal(b, t) for b, t in zip(before, r_ins)
                            if not (b.is_floating_point() and b.isnan().any()))
    leaves = []
    args = to_eager((rs.input,) + tuple(rs.args), leaves)
    kwargs = to_eager(dict(rs.kwargs), leaves)
    with eager.no_grad():
        out, _ = _call(fn, mode, args, kwargs)
        o_ins = [t for _, t in leaves]
        before = [_np(t).copy() for t in o_ins]
        try:
            _write_through(_tensors(out))
        except Exception as e:  # noqa: BLE001 - reported as the difference it is
            return [f"aliasing: writing through the result raised {type(e).__name__}: {e}"]
        ours_changed = any(not np.array_equal(b, _np(t), equal_nan=True)
                           for b, t in zip(before, o_ins))
    if ours_changed != torch_changed:
        return [f"aliasing: a write through the result {'changes' if ours_changed else 'does not change'}"
                f" the input; torch's {'does' if torch_changed else 'does not'}"]
    return []


def _detached(s):
    from torch.testing._internal.opinfo.core import SampleInput

    def d(v):
        if isinstance(v, torch.Tensor):
            if v._base is not None and v._base.is_contiguous():   # NOTE: a view stays a view
                return v._base.detach().clone().as_strided(v.size(), v.stride(),
                                                            v.storage_offset())
            return v.detach().clone()
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(d(x) for x in v)
        if isinstance(v, dict):
            return {k: d(x) for k, x in v.items()}
        return v
    return SampleInput(d(s.input), args=d(tuple(s.args)), kwargs=d(dict(s.kwargs)))


def check_sample(op, fn, s, mode="eager", grads=True, aliasing=True):
    """Differences between dualgrad and torch on one sample (empty list: agrees).
    mode: "eager" or "compile"."""
    torch.manual_seed(1)
    ref = _torch_call(op, s)
    random = is_random(op, s, ref)
    leaves = []
    try:
        args = to_eager((s.input,) + tuple(s.args), leaves)
        kwargs = to_eager(dict(s.kwargs), leaves)
    except Unconvertible as e:
        return [f"sample: {e}"]
    try:
        eager.manual_seed(42)
        ours, _ = _call(fn, mode, args, kwargs)
    except Exception as e:  # noqa: BLE001 - a raise is the difference it is
        if is_refusal(e) and (_complex_in(ref) or _complex_in((s.input, s.args, s.kwargs))
                              or "autograd" in str(e)):
            return [f"{REFUSES} {type(e).__name__}: {str(e)[:300]}"]
        return [f"raised {type(e).__name__}: {str(e)[:300]}"]
    process = _output_processing(s)
    tols = reference_tolerances(op)
    diffs = compare_values(op, s, ours, ref, values=not random and process is None, tols=tols)
    if diffs or random:
        return diffs
    if process is not None:     # NOTE: values compared as torch's test_compare_cpu does
        diffs = compare_values(op, s, process[1](ours), process[0](ref), "processed result",
                               tols=tols, process=process[0])
        if diffs:
            return diffs
    if grads and any(r.requires_grad for r, _ in leaves) and op.supports_autograd:
        try:
            forward, g_ours, g_ref = _gradient_functions(op, fn, s, mode, args, kwargs, ours,
                                                         ref, process)
            got = check_grads(g_ours, g_ref, leaves)
            if got and torch_gradient_fails_gradcheck(op):
                got = check_grads_numerically(forward, g_ours, g_ref, leaves, got)
            diffs += got
        except Exception as e:  # noqa: BLE001
            diffs.append(f"gradient: raised {type(e).__name__}: {str(e)[:300]}")
    if aliasing and not diffs:
        try:
            diffs += check_aliasing(op, fn, s, mode)
        except Exception as e:  # noqa: BLE001
            diffs.append(f"aliasing: raised {type(e).__name__}: {str(e)[:300]}")
    return diffs


@functools.lru_cache(maxsize=None)
def resolved():
    """{entry id: dualgrad callable or None} for every op_db entry."""
    return {entry_id(op): resolve(op) for op in OP_DB}


# -- complex dtypes: computes as torch, or refuses clearly ---------------------------------------
STATUSES = ("agrees", "refuses", "partly")


# check_sample's report of dualgrad refusing, clearly, a sample with a complex input or a
# complex result (torch's complex32, complex autograd), or a gradient it does not compute
# (the Fourier transforms'): not a difference, a status
REFUSES = "refuses:"


def is_refusal(err) -> bool:
    """dualgrad's clear refusal of a complex operand: torch's NotImplementedError type (the
    registry's ComplexError, "... not implemented for 'ComplexFloat'") or an error that names
    complex tensors."""
    return isinstance(err, NotImplementedError) or "omplex" in str(err)


def complex_sample(op, fn, s, mode):
    """("agrees" | "refuses", []) or ("differs", differences) for one complex sample: torch
    and dualgrad both refusing, or dualgrad refusing what torch computes, is a refusal; a
    result is compared as every other dtype's (values, dtype, aliasing; no gradients: dualgrad
    refuses complex autograd, and the samples do not require grad)."""
    torch.manual_seed(1)
    try:
        _torch_call(op, s)
        torch_err = None
    except Exception as e:  # noqa: BLE001 - torch refuses this sample itself
        torch_err = e
    if torch_err is None:
        diffs = check_sample(op, fn, s, mode, grads=False)
        if diffs and diffs[0].startswith(REFUSES):
            return "refuses", []
        return ("agrees", []) if not diffs else ("differs", diffs)
    leaves = []
    try:
        args = to_eager((s.input,) + tuple(s.args), leaves)
        kwargs = to_eager(dict(s.kwargs), leaves)
        _call(fn, mode, args, kwargs)
    except Exception:  # noqa: BLE001 - both refuse: what torch does too
        return "refuses", []
    return "differs", [f"result: torch raises {type(torch_err).__name__} "
                       f"({str(torch_err)[:120]}), dualgrad computes"]


def complex_status(op, fn, dtype, mode, cap):
    """(status, first difference or None) of an entry in one complex dtype and mode over its
    first `cap` samples: "agrees" (every sample computes as torch's), "refuses" (every one
    raises the clear refusal), "partly" (some of each: an argument the entry refuses)."""
    seen = set()
    for s in samples(op, dtype, cap):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            status, diffs = complex_sample(op, fn, s, mode)
        if diffs:
            return "differs", diffs[0]
        seen.add(status)
    if not seen:
        return "agrees", None
    return (seen.pop() if len(seen) == 1 else "partly"), None


def _complex_in(v):
    """A complex tensor (complex32 too, which dualgrad lacks) in a value or structure."""
    return any(t.dtype.is_complex for t in _tensors(v) if isinstance(t, torch.Tensor))


# -- the table's kinds of difference, and the doc page that shows it ----------------------------
KINDS = ("result", "gradient", "aliasing")


def kind_of(diff: str) -> str:
    """Which check a difference comes from: "gradient", "aliasing" or "result"."""
    for k in KINDS[1:]:
        if diff.startswith(k):
            return k
    return "result"


def lookup(name):
    """eager's attribute at torch's dotted name (AttributeError when not provided)."""
    obj = eager
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


DOC = "docs/pytorch-compat.md"
_BEGIN = "<!-- op_db table: generated from eager/not_provided.py by " \
         "`python -m tests.eager.opdb_summary --write-doc`; do not edit -->"
_END = "<!-- end of the op_db table -->"


def render_doc_table():
    """The section of docs/pytorch-compat.md that shows eager/not_provided.py."""
    from dualgrad.eager import not_provided
    ABSENT, DIFFERS = not_provided.ABSENT, not_provided.DIFFERS
    by_reason = {}
    for name, why in sorted(ABSENT.items()):
        by_reason.setdefault(why, []).append(name)
    lines = [_BEGIN, "", f"**Not provided** ({len(ABSENT)} names of op_db; each raises "
             "`AttributeError` with its reason, so `hasattr` is False):", "",
             "| reason | names |", "| --- | --- |"]
    for why, names in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| {why} | {' '.join(f'`{n}`' for n in names)} |")
    if not DIFFERS:
        lines += ["", "**Provided, but differing from torch**: none. Every entry dualgrad "
                  "provides agrees with torch in the test's samples (where only in value, by "
                  "being at least as close as torch's to the higher-precision reference)."]
        return "\n".join(lines + _complex_lines() + ["", _END])
    lines += ["", f"**Provided, but differing from torch** ({len(DIFFERS)} rows; entry, dtype, "
              "mode and check, `*` for all):", "", "| entry | dtype | mode | check | reason |",
              "| --- | --- | --- | --- | --- |"]
    for (eid, dt, mode, kind), why in sorted(DIFFERS.items()):
        lines.append(f"| `{eid}` | {dt} | {mode} | {kind} | {why} |")
    return "\n".join(lines + _complex_lines() + ["", _END])


def _complex_lines():
    """The doc's lines on complex dtypes, from tests/eager/opdb_complex.json."""
    import json
    import os
    path = os.path.join(os.path.dirname(__file__), "opdb_complex.json")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    by = {}
    for eid, st in table.items():
        modes = {m: {st.get(f"{d} {m}") for d in ("complex64", "complex128")} - {None}
                 for m in ("eager", "compile")}
        for m, got in modes.items():
            key = got.pop() if len(got) == 1 else "partly"
            by.setdefault((m, key), []).append(eid)
    lines = ["", f"**Complex dtypes** ({len(table)} entries torch supports for complex64 and "
             "complex128 on CPU; tests/eager/opdb_complex.json, the first samples of each "
             "entry, dtype and mode). Each entry computes torch's result (values, dtype, "
             "aliasing), or refuses clearly: torch's `NotImplementedError` type, "
             "`\"sigmoid\" not implemented for 'ComplexFloat'` where the op's registry entry does not "
             "declare complex support (`Op.complex`), never a silent difference. \"partly\": "
             "some of the entry's samples refused (an argument or a dtype pair), the rest agree; "
             "\"known\": a difference that is a row above. Under `compile()` a complex "
             "argument is refused (its graphs are real); a complex value made inside the "
             "function runs that call eagerly, with compile()'s warning.", "", "| mode | status | entries |",
             "| --- | --- | --- |"]
    for (m, key), eids in sorted(by.items(), key=lambda kv: (kv[0][0] != "eager", kv[0][1])):
        listed = m == "eager" or key != "refuses"
        names = " ".join(f"`{e}`" for e in sorted(eids)) if listed else "every other entry"
        lines.append(f"| {m} | {key} | {len(eids)}: {names} |")
    real = sorted((eid, k.split()[0]) for eid, st in table.items() for k in st
                  if not k.startswith("complex") and k.endswith("eager"))
    if real:
        lines += ["", "Real inputs with a complex result refuse where torch's result needs what "
                  "dualgrad lacks (float64 samples require grad: complex autograd; float16 "
                  "parts: complex32): " + ", ".join(f"`{e}` {d}" for e, d in real) + "."]
    return lines


def _doc_path():
    import os
    return os.path.join(os.path.dirname(__file__), "..", "..", DOC)


def doc_section_in_file():
    text = open(_doc_path(), encoding="utf-8").read()
    if _BEGIN not in text or _END not in text:
        return None
    return text[text.index(_BEGIN):text.index(_END) + len(_END)]


def write_doc():
    """Replace the generated section of docs/pytorch-compat.md (appended under its heading
    when the page has none yet)."""
    path = _doc_path()
    text = open(path, encoding="utf-8").read()
    old = doc_section_in_file()
    new = render_doc_table()
    if old is None:
        text = text.rstrip("\n") + "\n\n## PyTorch's op database: what is not provided\n\n" + \
            "tests/eager/test_opdb.py runs PyTorch's own OpInfo database (`op_db`) against " + \
            "dualgrad.eager, in eager and under `compile()`.\n\n" + new + "\n"
    else:
        text = text.replace(old, new)
    open(path, "w", encoding="utf-8").write(text)


# -- keeping DIFFERS true: rows from what the test's samples show ------------------------------
def proposed_rows(failures, old):
    """DIFFERS rows for {(eid, dtype, mode, kind): first difference}: one row per entry and
    check (mode "*" when both modes differ); a reason already written for a row is kept."""
    by = {}
    for (eid, dt, mode, kind), diff in sorted(failures.items()):
        e = by.setdefault((eid, kind), {"modes": set(), "dtypes": [], "diff": diff})
        e["modes"].add(mode)
        if dt not in e["dtypes"]:
            e["dtypes"].append(dt)
    rows = {}
    for (eid, kind), e in by.items():
        mode = e["modes"].pop() if len(e["modes"]) == 1 else "*"
        key = (eid, "*", mode, kind)
        diff = " ".join(e["diff"].split())
        rows[key] = old.get(key) or f"{', '.join(e['dtypes'])}: {diff[:160]}"
    return rows


def write_rows(rows):
    """Replace the generated rows of DIFFERS in eager/not_provided.py."""
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "eager", "not_provided.py")
    text = open(path, encoding="utf-8").read()
    mark = "edit a reason freely\n"
    start = text.index(mark) + len(mark)
    end = text.index("\n}\n", start - 1) + 1
    body = "".join(f"    {k!r}:\n        {v!r},\n" for k, v in sorted(rows.items()))
    open(path, "w", encoding="utf-8").write(text[:start] + body + text[end:])
