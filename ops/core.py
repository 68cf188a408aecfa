"""The op registry: one `Op` entry per primitive, and `bind`, which hands a call to an interpreter.

An op is defined once (shape rule, NumPy kernel, gradient rule, scalar form, samples) and
every interpreter runs the same call: `bind(op, *args, **attrs)` picks the interpreter of
highest `level` among the engine-owned arguments (eager `Tensor` 0, graph `Tensor` 1, the
compiler's tracing tensor 2) and the innermost entry of this thread's trace stack (pushed
with `tracing(interpreter)` by the graph functions and by `compile(fn)` while it traces), and
lets it decide what "running" the op means. With neither, the kernel runs on the arrays.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ShapeError", "KernelError", "DtypeError", "ComplexError", "Spec", "Op", "Sample", "REGISTRY", "ELEMENTWISE",
    "REDUCTION", "FLOATING", "register", "bind", "bind_args", "engine_of", "tracing",
    "current_trace", "TRACING",
    "spec_of", "user_frame", "fmt_shape", "infer_spec",
]


class ShapeError(ValueError, RuntimeError):
    """An op's shape or dtype rule failed: the message names the op, every input shape and the rule.
    A ValueError, as TF1 raises it, and a RuntimeError, as torch does."""


class KernelError(RuntimeError):
    """A kernel failed for a reason the shape rule does not cover (e.g. an index out of range)."""


class DtypeError(TypeError, RuntimeError):
    """An op refuses its operands' dtypes (a bool tensor in a subtraction): a TypeError, as
    NumPy and TF raise it, and a RuntimeError, as torch does."""


class ComplexError(NotImplementedError):
    """An op whose entry does not declare complex support (`Op.complex`) got a complex
    operand: torch's NotImplementedError ("... not implemented for 'ComplexFloat'"), a
    RuntimeError too, as NotImplementedError is one."""


# NOTE: c10's names of the complex dtypes, in torch's "not implemented for" messages
COMPLEX_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def complex_refusal(op, dtype) -> ComplexError:
    """The error an op that does not declare complex support raises for a complex operand."""
    name = COMPLEX_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)
    return ComplexError(f'"{op.name}" not implemented for \'{name}\'')


def first_complex(values):
    """The dtype of the first complex value among arrays, Specs, tensors and numbers, or None."""
    for v in values:
        if type(v) is complex:
            return np.dtype(np.complex128)
        dt = getattr(v, "dtype", None)
        if dt is not None and getattr(dt, "kind", None) == "c":
            return dt
    return None


@dataclass(frozen=True, slots=True)
class Spec:
    """What is known of a value before it exists: shape (dims may be None) and dtype.

    `shape` itself is None when even the rank is unknown (TF1's `placeholder(dtype)` with
    no shape); `infer_spec` runs shape rules on such inputs.

    `weak` holds the Python scalar itself for a bare `2.0` or `3`, so dtype promotion follows
    NumPy 2's rule for Python scalars (float32 tensor * 2.0 stays float32).
    """
    shape: tuple
    dtype: np.dtype
    weak: Any = None

    @property
    def ndim(self):
        return None if self.shape is None else len(self.shape)


def spec_of(x) -> Spec:
    """The Spec of an engine tensor, an array or a Python scalar."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return Spec((), np.result_type(x), weak=x)
    s = getattr(x, "spec", None)
    if s is not None:
        return s
    x = np.asarray(x)
    return Spec(x.shape, x.dtype)


def fmt_shape(shape) -> str:
    if isinstance(shape, Spec):
        shape = shape.shape
    if shape is None:
        return "<unknown rank>"
    inner = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


@dataclass(frozen=True, slots=True)
class Sample:
    """One test input for an op: argument shapes (tuples) or literal values, and attrs.

    `domain` bounds the random floats (log and sqrt want positive inputs); `match` makes it an
    error sample: the op must raise ShapeError whose message matches this regex.
    """
    args: tuple
    attrs: dict = field(default_factory=dict)
    domain: tuple = (-2.0, 2.0)
    match: str | None = None
    grad: bool = True


class Op:
    """One primitive. docs/architecture.md ('One op, one entry') says what each field means."""
    __slots__ = ("name", "infer", "kernel", "vjp", "scalar", "reduce", "category", "samples", "ref",
                 "stateful", "view", "onnx", "tf", "nondiff", "fn", "decompose", "promote",
                 "shape_only_from", "zero_from", "may_alias", "inference_identity", "front",
                 "alias_layout", "grad_at", "scalar_opmath", "complex", "reads", "tf_name")

    def __init__(self, name, infer, kernel, vjp=None, *, scalar=None, reduce=None, category=None,
                 samples=(), ref=None, stateful=False, view=False, onnx=None, tf=None, promote=None,
                 shape_only_from=None, zero_from=(), may_alias=False, inference_identity=False,
                 front=(), alias_layout=None, grad_at=None, scalar_opmath=False, complex=False,
                 reads=None, tf_name=None):
        self.name, self.infer, self.kernel, self.vjp = name, infer, kernel, vjp
        self.scalar, self.reduce, self.samples, self.ref = scalar, reduce, tuple(samples), ref
        self.onnx = onnx   # the ONNX operator that computes the same from the same inputs
        self.tf = tf       # the TF op that does, with its `T` attribute only (as_graph_def)
        self.category = category or ("elementwise" if scalar is not None else
                             "reduction" if reduce is not None else "other")
        self.stateful, self.view = stateful, view
        # how operands of several dtypes combine under PyTorch's rules: None, "common",
        # "divide" or "where" (ops.rules.torch_compute_dtype)
        self.promote = promote
        # a Python number operand of a float16 / bfloat16 tensor is read in float32, not rounded
        # to the tensor's dtype first: torch's mul and div (ops.rules.torch_scalar_opmath)
        self.scalar_opmath = scalar_opmath
        # inputs from this position on are read for their spec only (CSE compares those by spec)
        self.shape_only_from = shape_only_from
        # positions of inputs any of which all zeros makes the result all zeros (simplify)
        self.zero_from = tuple(zero_from)
        # the kernel may return its input itself (a view always may): buffer planning keeps it
        self.may_alias = may_alias or view
        # what a result that aliases input 0 is (the plan's memory report reads it): "same_spec"
        # (the input itself, only when shape and dtype are unchanged), "reshape" (a view of a
        # contiguous input, a copy of a strided one), "transpose" (contiguous only when it
        # moves nothing), "strided" (a strided view); None: a view as contiguous as its input
        self.alias_layout = alias_layout
        self.inference_identity = inference_identity   # its input at inference (freeze, export)
        # grad_at(**attrs): the basic index of input 0 the result's gradient lands at, the rest
        # of input 0's gradient being zero (slice): backward adds it into a running total there
        # instead of building a full-size gradient per use (ops.autodiff's add_into)
        self.grad_at = grad_at
        # the front ends that offer the op unchanged, and under which name (ops/api.py)
        self.front = dict(front) if isinstance(front, dict) else {f: name for f in front}
        self.nondiff = vjp is None
        # the kernel computes torch's result for complex operands too; an op that does not
        # declare it refuses them in every engine (`register` wraps its shape rule; eager's
        # dispatch asks it before the kernel): ComplexError, torch's NotImplementedError
        self.complex = complex
        # which values the gradient rule reads: a tuple of input positions, with "out" for the
        # result (exp: ("out",); add: ()), or a function of `needs` (which inputs want a
        # gradient) giving one (mul reads y for x's gradient); None, undeclared: every input,
        # and the result if the rule names `out`; a view's rule reads neither input 0 nor the
        # result. Eager's version check (torch's saved tensors) raises only when a value the
        # rule reads was written in place since
        self.reads = None if reads is None else reads if callable(reads) else tuple(reads)
        # the default name tf.compat.v1 gives the node this op builds, where it is not the
        # op's own name ("MatMul", "truediv"); the graph front end names nodes by it
        self.tf_name = tf_name or name
        self.fn = None  # the public function, e.g. ops.add
        self.decompose = None   # the same as a composite of other ops: what compile() traces

    def scalar_form(self, attrs) -> str:
        """This call's scalar expression over {0}, {1}, … (ops/scalar.py's vocabulary); a form
        that depends on attrs (cast's target dtype) is a function of them."""
        s = self.scalar
        return s(**attrs) if callable(s) else s

    def _read(self, needs):
        return self.reads(needs) if callable(self.reads) else self.reads

    def reads_input(self, k, needs=None) -> bool:
        """Whether the gradient rule reads input k's values (not only its shape) when the
        inputs marked in `needs` want a gradient (None: all of them)."""
        if self.reads is None:
            return k != 0 or not self.view
        return k in self._read(needs)

    def reads_out(self, needs=None) -> bool:
        """Whether the gradient rule reads the result's values: undeclared, when the rule
        names `out` (the walker passes the result by that name only)."""
        if self.reads is None:
            return not self.view and _names_out(self.vjp)
        return "out" in self._read(needs)

    def __repr__(self):
        return f"<op {self.name}>"

    def __reduce__(self):  # ops travel by name only (graph files store names, never objects)
        return (REGISTRY.__getitem__, (self.name,))


@functools.lru_cache(maxsize=None)
def _names_out(rule) -> bool:
    try:
        return "out" in inspect.signature(rule).parameters
    except (TypeError, ValueError):
        return True


REGISTRY: dict[str, Op] = {}
ELEMENTWISE: set[str] = set()   # ops with a scalar form, fusable into one loop
REDUCTION: set[str] = set()     # ops with a `reduce` form: what the fuse pass may fold into a loop
FLOATING: set[str] = set()      # ops whose result is floating point whatever the input
FRONTS = ("torch", "tf", "tf.math")   # where an op may be offered unchanged (Op.front, ops/api.py)


# Ops whose NumPy kernel warns on finite inputs (log(0), sqrt(-1), x / 0, exp(100) in float32,
# 0 ** -1, the polynomials' casts): torch's and TF's kernels give the inf or nan without a
# word, so these run under np.errstate(all="ignore") (a context of the call only, never the
# user's setting); a user's `-W error` or pytest's warning summary then sees what it sees with
# torch. tests/ops/test_fp_warnings.py finds every op that warns on such inputs. Left out on
# purpose: add, sub, mul and matmul, which warn only on inf or nan inputs or overflow of huge
# values, and are the hot path of every step (the context costs ~0.8 us a call).
QUIET_FP = frozenset({
    "div", "exp", "expm1", "floordiv", "floormod", "log", "log1p", "pow", "sqrt",
    "sigmoid_grad", "tanh_grad", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"})


def quietly(op, arrays, attrs):
    """op's kernel run again without NumPy's floating-point warnings: after one was raised as
    an error (the user's `-W error`), the inf or nan torch and TF give instead."""
    with np.errstate(all="ignore"):
        return op.kernel(*arrays, **attrs)


def _quiet_fp(kernel):
    def run(*args, **attrs):
        with np.errstate(all="ignore"):
            return kernel(*args, **attrs)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    run.__wrapped__ = kernel
    return run


def register(name, infer, kernel, vjp=None, floating=False, **kw) -> Op:
    """Add an op to the registry. `floating=True` (unary: exp, sqrt, sigmoid, …): integer and
    bool inputs compute in float32, as PyTorch's do, in the shape rule and the kernel alike, so
    every engine and the fused loops agree (NumPy alone would give float16 for uint8)."""
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is registered twice")
    if name in QUIET_FP and kernel is not None:
        kernel = _quiet_fp(kernel)
    if floating:
        infer, kernel = _floating_infer(infer), _floating_kernel(kernel)
        FLOATING.add(name)
    if not kw.get("complex"):
        infer = _real_infer(name, infer)
    op = Op(name, infer, kernel, vjp, **kw)
    if set(op.front) - set(FRONTS):
        raise ValueError(f"op {name!r}: front {sorted(op.front)} is not among {FRONTS}")
    op.fn = _binder(op)
    _check_fusion_forms(op)
    REGISTRY[name] = op
    if op.scalar is not None:
        ELEMENTWISE.add(name)
    if op.reduce is not None:
        REDUCTION.add(name)
    return op


def _real_infer(name, infer):
    """The shape rule of an op without complex support: a complex input is refused, so the
    graph builder, compile()'s trace and the meta engine refuse it as eager's dispatch does."""
    def rule(*specs, **attrs):
        dt = first_complex(specs)
        if dt is not None:
            raise complex_refusal(REGISTRY[name], dt)
        return infer(*specs, **attrs)
    rule.__wrapped__ = infer
    return rule


def _floating_infer(infer):
    def rule(x, **attrs):
        if x.dtype.kind in "biu":
            x = Spec(x.shape, np.dtype(np.float32))
        return infer(x, **attrs)
    return rule


def _floating_kernel(kernel):
    # NOTE: on eager's dispatch path: one type test and one dtype test for float inputs
    def run(x, **attrs):
        if type(x) is not np.ndarray or x.dtype.kind in "biu":
            x = _as_floating(x)
        return kernel(x, **attrs)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


def _as_floating(x):
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype.kind in "biu" else x


def _check_fusion_forms(op):
    """An op's scalar form and reduction (`reduce`) must be in the generator's vocabulary: checked
    when the op is registered, not when a graph first fuses it."""
    from .scalar import REDUCTIONS, check_form
    if op.reduce is not None and op.reduce not in REDUCTIONS:
        raise ValueError(f"op {op.name!r}: reduce={op.reduce!r} is not one of {REDUCTIONS}")
    forms = [op.scalar] if isinstance(op.scalar, str) else \
        [op.scalar_form(s.attrs) for s in op.samples] if op.scalar is not None else []
    for form in forms:
        try:
            check_form(form)
        except ValueError as e:
            raise ValueError(f"op {op.name!r}: {e}") from None


# -- the broadcast warning's off switch (rules.warn_outer) ------------------------------------
class _Quiet(threading.local):
    depth = 0


QUIET_BROADCAST = _Quiet()   # read by rules.warn_outer


@contextlib.contextmanager
def quiet_broadcast():
    """No `warn_outer` warning within the block (this thread): a gradient rule, a rule run on
    stand-in ranks, or a loss that has already warned in its own words."""
    QUIET_BROADCAST.depth += 1
    try:
        yield
    finally:
        QUIET_BROADCAST.depth -= 1


# -- shape rules on inputs of unknown rank -----------------------------------------------------
_STAND_IN_RANKS = range(6)


def infer_spec(op: Op, specs, attrs) -> Spec:
    """`op.infer`, also when an input's rank is unknown (Spec.shape None): the rule runs with
    that input standing in at each rank 0-5 (all dims None), and what every rank that fits
    agrees on is kept — a reduction to a scalar, `reshape(x, [-1, n])` -> (?, n) — while
    disagreement leaves a dim None, or the rank unknown."""
    if all(s.shape is not None for s in specs):
        return op.infer(*specs, **attrs)
    outs, err = [], None
    for r in _STAND_IN_RANKS:
        stand = [Spec((None,) * r, s.dtype, s.weak) if s.shape is None else s for s in specs]
        try:
            with quiet_broadcast():
                outs.append(op.infer(*stand, **attrs))
        except ShapeError as e:
            err = e
    if not outs:
        raise ShapeError(f"{op.name}: no rank fits the input of unknown rank "
                         f"({', '.join(fmt_shape(s) for s in specs)}): {err}")
    return _join(outs)


def _join(outs) -> Spec:
    first = outs[0]
    if any(o.shape is None or len(o.shape) != len(first.shape) for o in outs):
        return Spec(None, first.dtype)
    dims = tuple(d if all(o.shape[i] == d for o in outs) else None
                 for i, d in enumerate(first.shape))
    return Spec(dims, first.dtype)


# -- the trace stack: which interpreter runs an op call ----------------------------------------
class _TraceStack(threading.local):
    def __init__(self):
        self.stack = []


_TRACES = _TraceStack()   # per thread, as JAX keeps its trace state
TRACING = [0]             # traces active in any thread: eager's fast path reads only this
_COUNT_LOCK = threading.Lock()


@contextlib.contextmanager
def tracing(interpreter):
    """Hand this thread's op calls to `interpreter` (an object with `level` and
    `apply(op, args, attrs)`) while the block runs, unless an argument's engine outranks it."""
    stack = _TRACES.stack
    stack.append(interpreter)
    with _COUNT_LOCK:
        TRACING[0] += 1
    try:
        yield interpreter
    finally:
        with _COUNT_LOCK:
            TRACING[0] -= 1
        stack.pop()


def current_trace():
    """The innermost interpreter pushed by `tracing` in this thread, or None."""
    stack = _TRACES.stack
    return stack[-1] if stack else None


def bind(op: Op, *args, **attrs):
    """Hand one op call to its interpreter (JAX's Primitive.bind).

    The highest `level` among the arguments' engines and this thread's innermost trace wins
    (eager 0, graph 1, compiler's tracer 2; the trace on a tie): an eager parameter used with
    a tracing tensor, or inside a traced function, is captured by the trace, not computed.
    """
    if TRACING[0]:
        stack = _TRACES.stack
        if stack:
            top = stack[-1]
            engine = _engine_of(args)
            return (top if engine is None or top.level >= engine.level else engine).apply(
                op, args, attrs)
    return bind_args(op, args, attrs)


def bind_args(op: Op, args, attrs):
    """`bind` by the arguments alone, as if no trace were active: how an interpreter hands on
    a call that is not its own (the compile() tracer, for ops on constants only)."""
    engine = _engine_of(args)
    if engine is None:
        return run_kernel(op, args, attrs)
    return engine.apply(op, args, attrs)


def engine_of(x):
    """The engine that owns x (its tensor type's `_engine`), or None for arrays and numbers."""
    return getattr(x, "_engine", None)


def is_value(x) -> bool:
    """True for an engine tensor (something a gradient can flow to)."""
    return getattr(x, "_engine", None) is not None


def primitive(op: Op):
    """The op's public function (`ops.exp`, `ops.add`, ...): `op.fn`, which `register` made."""
    return op.fn


def _binder(op: Op):
    """The plain function that binds `op`; `register` makes it `op.fn`. A module whose public
    function normalises its arguments first (`ops.reshape`) puts that one there instead."""
    def fn(*args, **attrs):
        if TRACING[0]:
            return bind(op, *args, **attrs)
        # NOTE: bind_args inlined: two Python frames fewer on every eager op call
        engine = _engine_of(args)
        if engine is None:
            return run_kernel(op, args, attrs)
        return engine.apply(op, args, attrs)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = f"The `{op.name}` primitive (see ops.REGISTRY[{op.name!r}])."
    return fn


def _engine_of(args):
    """The engine of highest level among the arguments' (None for arrays and numbers)."""
    engine = None
    for a in args:
        e = getattr(a, "_engine", None)
        if e is not None and e is not engine and (engine is None or e.level > engine.level):
            engine = e
    return engine


def run_kernel(op, arrays, attrs):
    """Run a kernel; any failure becomes the op's ShapeError (from its rule) or a KernelError."""
    if not op.complex:
        dt = first_complex(arrays)
        if dt is not None:
            raise complex_refusal(op, dt)
    try:
        return op.kernel(*arrays, **attrs)
    except RuntimeWarning:
        return quietly(op, arrays, attrs)
    except Exception as e:  # noqa: BLE001 - re-raised below with the op's own words
        raise explain_failure(op, [spec_of(a) for a in arrays], attrs, e) from e


def explain_failure(op, specs, attrs, err) -> Exception:
    """Turn a kernel failure into the error a user should see (kernel first, rule on failure)."""
    try:
        op.infer(*specs, **attrs)
    except ShapeError as se:
        return se
    shapes = ", ".join(fmt_shape(s) for s in specs)
    return KernelError(f"{op.name}: failed on inputs {shapes}: {err}")


# -- where the user is ------------------------------------------------------------------------
def _framework_dirs() -> tuple[str, ...]:
    """Where the engines' own files are, asked of the import system (dualgrad.ops, .eager,
    .graph, .compiler), so a user's folder that happens to be called ops/ or graph/ is user code."""
    import importlib.util
    root = __name__.split(".")[0]
    dirs = []
    for sub in ("ops", "eager", "graph", "compiler"):
        spec = importlib.util.find_spec(f"{root}.{sub}")   # imports no engine, only the root
        dirs += [os.path.join(os.path.abspath(d), "") for d in spec.submodule_search_locations]
    return tuple(dirs)


FRAMEWORK_DIRS = _framework_dirs()


def user_frame(skip_dirs=FRAMEWORK_DIRS) -> tuple[str, int] | None:
    """(filename, lineno) of the innermost frame outside the framework's packages."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(skip_dirs) and not fn.startswith("<frozen"):
            return fn, f.f_lineno
        f = f.f_back
    return None


def user_stacklevel(skip_dirs=FRAMEWORK_DIRS) -> int:
    """The `stacklevel` that files a warning raised by the caller at the user's line (what
    Python 3.12's `skip_file_prefixes` does): a fixed number breaks when a wrapper is added."""
    f, level = sys._getframe(1), 1
    while f is not None and (f.f_code.co_filename.startswith(skip_dirs)
                             or f.f_code.co_filename.startswith("<frozen")):
        f, level = f.f_back, level + 1
    return level


def where_str(loc) -> str:
    if loc is None:
        return "<unknown>"
    fn, line = loc
    try:
        rel = os.path.relpath(fn)
        fn = rel if not rel.startswith("..") else fn
    except ValueError:
        pass
    return f"{fn}:{line}"


def located(msg, cls=None) -> Exception:
    """An error raised by a frontend function (a composite, a graph layer), not an op's shape
    rule, placed at the user's line as the engines place primitives' errors."""
    loc = user_frame()
    err = (cls or ShapeError)(f"{msg} (at {where_str(loc)})")
    err.location = loc
    return err
