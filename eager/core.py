"""The eager Tensor: every op runs at once; autograd records a tape as it goes.

>>> from dualgrad import eager
>>> x = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""
from __future__ import annotations

import threading
import weakref
from collections import namedtuple

import numpy as np

from dualgrad import ops
from dualgrad.ops import REGISTRY as R
from dualgrad.ops.autodiff import backprop, toposort
from dualgrad.ops.composite import current_composite
from dualgrad.ops.reduce import nonempty_reduction
from dualgrad.ops.core import (FLOATING, TRACING, ComplexError, complex_refusal, current_trace,
                               explain_failure, first_complex, quietly, spec_of, user_frame,
                               where_str)
from dualgrad.ops.rules import (as_operand, bfloat16, inexact, ints_fit, is_bfloat16, norm_axis,
                                torch_int_scalar, torch_needs_cast, torch_result_dtype,
                                torch_scalar_opmath, warn_outer)

from . import devices as _device
from .dtypes import TABLE as _DTYPES
from .printing import tensor_repr
from .size import as_size
from .amp import AUTOCAST as _AUTOCAST, lowers as _lowers
from .hooks import (HOOK as _HOOK, LEAF_HOOKS as _LEAF_HOOKS, RemovableHandle as _HookHandle,
                    leaf_hooked)

_NP_FLOAT32 = np.dtype(np.float32)
_FLOAT32 = _DTYPES[_NP_FLOAT32]   # NOTE: torch.float32, Tensor.dtype's common case


class _GradMode(threading.local):
    enabled = True   # NOTE: per thread, as PyTorch's grad mode; the hot path reads one attribute


_GRAD = _GradMode()
_new = object.__new__


class Entry(tuple):
    """A tensor's tape entry (`Tensor._node`): `op` was applied to `inputs` with `attrs` and
    gave the tensor, at `clock`, the in-place write counter then (None for an entry that
    `recorded` joined to the tape, which skips the check that its inputs were not written
    since). A tuple, so the reverse-mode walker shared with the graph engine reads its first
    three fields as it reads a graph node's (ops/autodiff.py). Built by `entry` only."""
    __slots__ = ()
    op = property(lambda e: e[0])
    inputs = property(lambda e: e[1])
    attrs = property(lambda e: e[2])
    clock = property(lambda e: e[3])


_tuple_new = tuple.__new__


def entry(op, inputs, attrs, clock=None) -> Entry:
    """The one place a tape entry is made."""
    return _tuple_new(Entry, (op, inputs, attrs, clock))


def blank(cls, requires_grad=False):
    """A new `cls` (Tensor or a subclass) made without __init__ and off the tape: no grad, no
    entry, its array not set yet. The compile() tracer makes its tensors so
    (compiler/tracer.py), which then hold a graph value instead of an array."""
    t = _new(cls)
    t.requires_grad, t.grad, t._node, t._root, t._size = requires_grad, None, None, None, None
    return t


def _wrapped(out, op, inputs, attrs, track, _entry=_tuple_new, _Entry=Entry):
    """A new Tensor holding a kernel's result: on the tape (`op` of `inputs`) when `track` (an
    input requires grad), grad mode is on and the result is floating point. What every op
    call ends with: `EagerEngine.apply` and the operator fast path (`_binary`) alike."""
    t = _new(Tensor)
    t._array = out = out if type(out) is np.ndarray else np.asarray(out)
    t.grad = t._root = t._size = None
    if track and _GRAD.enabled and (out.dtype.kind in "fc" or is_bfloat16(out.dtype)):
        if out.dtype.kind == "c":
            raise no_complex_autograd(op.name)
        t.requires_grad = True
        t._node = _entry(_Entry, (op, inputs, attrs, CLOCK[0]))   # NOTE: entry(), inlined
    else:
        t.requires_grad = False
        t._node = None
    return t
CLOCK = [0]   # ticks once per in-place write; tape entries record the tick they were made at
# The tick of the last in-place write into each storage: id(array) of a base tensor (the
# `_root` of its views) -> (weakref to that array, tick). torch's version counter is shared by
# a tensor and all its views (detach too): a write through one view must fail the backward of
# an entry that saved another view of the same memory, or the base itself.
_WRITTEN = {}


def _storage_key(t):
    root = getattr(t, "_root", None)
    return t._array if root is None else root.array


def stamp_storage(t, tick):
    """Record an in-place write into t's memory at `tick` (t's own, or the base it views)."""
    if type(getattr(t, "_root", None)) is DataStorage:
        return
    arr = _storage_key(t)
    if type(arr) is not np.ndarray:
        return
    key = id(arr)
    held = _WRITTEN.get(key)
    if held is None or held[0]() is not arr:
        held = (weakref.ref(arr, lambda _r, key=key: _WRITTEN.pop(key, None)), tick)
    _WRITTEN[key] = (held[0], tick)


def written_at(t):
    """The tick of the last in-place write into t or into memory t shares with its base or
    the base's other views; -1 if none."""
    tick = getattr(t, "_modified", -1)
    arr = _storage_key(t)
    held = _WRITTEN.get(id(arr))
    if held is not None and held[0]() is arr and held[1] > tick:
        return held[1]
    return tick


RETAINS_GRAD = {}   # id(non-leaf) -> weakref to it: backward() fills its .grad (retain_grad)
DEFAULT_FLOAT = [np.dtype(np.float32)]   # torch.get_default_dtype / set_default_dtype
_F32 = DEFAULT_FLOAT[0]


def no_complex_autograd(what) -> ComplexError:
    """dualgrad has no complex autograd (torch's conjugate Wirtinger gradients): a complex
    tensor that would require grad raises this instead of a gradient nobody checked."""
    return ComplexError(f"{what}: dualgrad does not differentiate complex tensors (torch's "
                        f"complex autograd is not implemented); compute under torch.no_grad() "
                        f"or detach() the real inputs")


def default_float():
    return DEFAULT_FLOAT[0]


def retains_grad(t):
    ref = RETAINS_GRAD.get(id(t))
    return ref is not None and ref() is t

_ADD, _SUB, _MUL, _DIV, _POW, _MATMUL, _NEG = (
    R["add"], R["sub"], R["mul"], R["div"], R["pow"], R["matmul"], R["neg"])
_CMP = {n: R[n] for n in ("eq", "ne", "lt", "le", "gt", "ge")}

ValuesIndices = namedtuple("ValuesIndices", "values indices")


class GradFn:
    """What `tensor.grad_fn` gives, as torch's autograd Node: `name()` ("MulBackward0": the
    op's name in torch's spelling), `next_functions` (for each input, the GradFn that made it,
    an AccumulateGrad for a leaf that requires grad, or None), printed as torch prints it.
    Two reads of one tensor's grad_fn are equal (the same tape entry)."""
    __slots__ = ("_node",)

    def __init__(self, node):
        self._node = node

    def name(self):
        op = self._node.name if type(self._node) is _Freed else self._node[0].name
        return "".join(p[:1].upper() + p[1:] for p in
                       op.replace(":", "_").replace(".", "_").split("_")) + "Backward0"

    @property
    def next_functions(self):
        if type(self._node) is _Freed:
            return ()
        out = []
        for x in self._node[1]:
            if not isinstance(x, Tensor) or not x.requires_grad:
                out.append((None, 0))
            else:
                out.append((AccumulateGrad(x) if x._node is None else x.grad_fn, 0))
        return tuple(out)

    def __eq__(self, other):
        return type(other) is type(self) and other._node is self._node

    def __hash__(self):
        return id(self._node)

    def __repr__(self):
        return f"<{self.name()} object at {id(self._node):#x}>"


class AccumulateGrad:
    """The next function a leaf that requires grad appears as (`variable` is the leaf)."""
    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    next_functions = ()

    def __eq__(self, other):
        return type(other) is type(self) and other.variable is self.variable

    def __hash__(self):
        return id(self.variable)

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self.variable):#x}>"


_WARNED = set()


def warn_once(message, stacklevel=2):
    """A UserWarning given once per process, as torch's TORCH_WARN_ONCE warnings are
    (x.T of a 3-d tensor, meshgrid without indexing, the deprecated chain_matmul, ...)."""
    if message not in _WARNED:
        _WARNED.add(message)
        import warnings
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


class _Freed:
    """Marks a tape entry whose saved inputs were released by backward()."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


_FREED = {}


def _freed(name):
    """The (shared, immutable) marker of a freed entry of op `name`."""
    f = _FREED.get(name)
    if f is None:
        f = _FREED[name] = _Freed(name)
    return f


def _located(err):
    """An error raised before a kernel ran, placed at the user's line as `_fail` places one."""
    loc = user_frame()
    err.args = (f"{err.args[0]} (at {where_str(loc)})",)
    err.location = loc
    return err


def _fail(op, args, attrs, err):
    """The error a user sees when a kernel fails: the op's own rule, at the user's line."""
    e = explain_failure(op, [spec_of(a._array if isinstance(a, Tensor) else a) for a in args],
                        attrs, err)
    loc = user_frame()
    inside = current_composite()   # e.g. softmax's inner max: say which call the user made
    inside = f"in {inside}, " if inside and not e.args[0].startswith(inside) else ""
    e.args = (f"{e.args[0]} ({inside}at {where_str(loc)})",)
    e.location = loc
    return e


class EagerEngine:
    """Runs each op the moment it is called: kernel first, the shape rule only to explain."""
    level = 0   # ops.bind: a graph (1) or tracing (2) argument's engine wins over this one

    @staticmethod
    def records():
        """Whether op calls record on the tape now (grad mode; in backward, create_graph): a
        gradient rule may then run a one-kernel form that records nothing (ops/norm.py)."""
        return _GRAD.enabled

    @staticmethod
    def apply(op, args, attrs):
        # NOTE: one pass over args both unwraps the arrays and notes whether any input
        # requires grad; a list comprehension plus an any() over a generator cost 0.35 us more.
        arrays, track = [], False
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a._array)
                if a.requires_grad:
                    track = True
            else:
                arrays.append(a)
        if not op.complex:   # NOTE: the op's entry says whether its kernel is right for complex
            dt = first_complex(arrays)
            if dt is not None:
                raise _located(complex_refusal(op, dt))
        narrow = None
        if op.promote is not None:   # NOTE: PyTorch's dtype, decided before the kernel runs
            if op.scalar_opmath and len(arrays) == 2 and type(arrays[1]) is np.ndarray and \
                    not arrays[1].ndim:
                arrays, narrow = _opmath_arrays(op, arrays)
            if narrow is None:
                arrays = _promote_arrays(op, arrays)
        elif DEFAULT_FLOAT[0] is not _F32 and op.name in FLOATING:
            want = torch_needs_cast(op, arrays, DEFAULT_FLOAT[0])   # NOTE: exp(int) in the
            if want is not None:                                    # default float dtype
                arrays = [as_operand(a, want) for a in arrays]
        try:
            try:
                out = op.kernel(*arrays, **attrs)
            except RuntimeWarning:    # NOTE: NumPy's under -W error: torch's inf and nan
                out = quietly(op, arrays, attrs)
            if narrow is not None:
                out = out.astype(narrow)
        except Exception as err:  # noqa: BLE001 - becomes the op's ShapeError / KernelError
            raise _fail(op, args, attrs, err) from None
        t = _wrapped(out, op, args, attrs, track)
        if op.view:
            _note_view(t, args[0])
        return t


class Storage:
    """The array a view's elements lie in (torch's storage), held by the view. Not copied or
    pickled with it: a copy, a deepcopy or an unpickled tensor (a DataLoader worker's sample)
    has storage of its own, and never drags its base's whole array along."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return None

    def __reduce__(self):
        return type(None), ()


class UntypedStorage:
    """`Tensor.untyped_storage()`: the bytes a tensor's elements lie in, as torch's, for the
    questions programs ask of it (do two tensors share memory: `data_ptr()`; how big:
    `nbytes()`, `size()`)."""
    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    def data_ptr(self):
        return 0 if self._array.size == 0 else self._array.__array_interface__["data"][0]

    def nbytes(self):
        return self._array.nbytes

    size = __len__ = nbytes

    def element_size(self):
        return 1

    @property
    def device(self):
        from .devices import device
        return device("cpu")

    def __repr__(self):
        return f"UntypedStorage of {self._array.nbytes} bytes on cpu"


class DataStorage(Storage):
    """The storage of a tensor made by `.data`: the same memory, but torch gives `.data` a
    version counter of its own, so a write through it is not one a backward checks for
    (`y.data.mul_(2)` changes what `y`'s rule reads, silently, as in torch)."""
    __slots__ = ()


def _note_view(t, src):
    """t, a view op's result, keeps the storage of the tensor whose memory it lies in
    (torch's `_base`: src's own base, or src), when it does lie there (a reshape may copy).
    The array, not the tensor: a view must not keep its base's tape alive."""
    within = t._array.base            # NOTE: NumPy's base of a view is the memory's owner
    if within is None or not isinstance(src, Tensor):
        return
    root = getattr(src, "_root", None)
    mem = src._array if root is None else root.array
    if type(mem) is not np.ndarray:
        return
    if within is mem or within is mem.base or np.may_share_memory(t._array, mem):
        t._root = Storage(mem) if root is None else root


def view_base(t):
    """The storage (`Storage`) of the tensor t is a view of (made by a view op: slicing,
    transpose, reshape, ..., or detach), or None: what torch calls `t._base`'s."""
    return getattr(t, "_root", None)


def keep_view_base(t, of):
    """t stands for `of` (a compile() tracer for an eager argument): it has of's base."""
    base = getattr(of, "_root", None)
    if base is not None:
        t._root = base


def storage_of(t):
    """Where t's elements lie as torch sees them, when t is a view of a tensor whose elements
    lie row-major: (that tensor's elements as a 1-d array sharing its memory, t's offset in
    it, t's strides in it), all in elements. None when t's storage is its own."""
    root = getattr(t, "_root", None)
    if root is None:
        return None
    arr, mem = t._array, root.array
    if not (isinstance(arr, np.ndarray) and isinstance(mem, np.ndarray)) or \
            not mem.flags.c_contiguous or mem.dtype != arr.dtype or \
            not np.may_share_memory(arr, mem):
        return None
    item, lo = arr.itemsize, arr.__array_interface__["data"][0] - mem.__array_interface__["data"][0]
    if lo % item or any(s % item or s < 0 for s in arr.strides):
        return None
    return mem.reshape(-1), lo // item, tuple(s // item for s in arr.strides)


def _promote_arrays(op, arrays):
    """The operands cast to the dtype PyTorch computes `op` in (ops.rules.torch_needs_cast,
    the rule compile() records too), so the kernel's result has it: nothing runs twice."""
    if _one_dtype(op, arrays):
        return arrays
    want = torch_needs_cast(op, arrays, DEFAULT_FLOAT[0])
    if want is None:
        return arrays
    skip = 1 if op.promote == "where" else 0
    return [as_operand(a, want) if i >= skip else a for i, a in enumerate(arrays)]


def _opmath_arrays(op, arrays):
    """(arrays, dtype) for op(a, b) with b a 0-d array that torch's kernel reads at its own
    value in float32 (rules.torch_scalar_opmath): both in float32 (a by way of the half
    result dtype, as torch casts it), the result to be rounded to that dtype once; else
    (arrays, None)."""
    wide = torch_scalar_opmath(op, arrays)
    if wide is None:
        return arrays, None
    a, b = arrays
    narrow = torch_result_dtype(arrays)
    return [np.asarray(a, narrow).astype(wide), b.astype(wide)], narrow


def _one_dtype(op, arrays):
    """The common case, asked in a few identity tests: arrays of one dtype (and Python
    numbers that do not lift an integer one to float), so the kernel gives PyTorch's dtype."""
    dt, num, anynum, wide, python_bool = None, False, False, False, False
    for a in arrays[op.promote == "where":]:
        t = type(a)
        if t is np.ndarray:
            if dt is None:
                dt = a.dtype
            elif a.dtype is not dt:
                return False
        elif t is float:
            num = anynum = True
        elif t is int:
            anynum, wide = True, wide or not 0 <= a <= 127
        elif t is bool:
            python_bool = True
        else:
            return False
    if dt is None or anynum and (is_bfloat16(dt) or dt.kind == "b"):
        return False    # NOTE: a number lifts a bool tensor (bool ** 3 is int64, as torch's)
    if python_bool and dt.kind != "b":
        return False    # NOTE: the rules see it (int - True raises, as torch's)
    if wide and dt.kind in "iu" and not ints_fit(arrays, dt):
        return False    # NOTE: a Python int outside an integer dtype wraps, as torch's
    # NOTE: rules.inexact inlined: this runs on every call of a promoting op
    return dt.kind in "fc" or is_bfloat16(dt) or not num and op.promote != "divide"


_NUMBERS = (int, float, bool, complex)


def foreign(b):
    """Whether b is an operand torch's operators refuse: not a Tensor, a Python or NumPy number,
    a NumPy array, or a higher engine's value (a graph tensor, a compile() tracer). The
    operator then returns NotImplemented, so Python tries b's reflected method, raises
    TypeError (t + "a", t < None) or, for == and !=, compares identity (t == None and
    t == [1., 1.] are False), as torch's operators do. An object-dtype array raises torch's
    TypeError."""
    if type(b) in _NUMBERS or isinstance(b, Tensor):
        return False
    if isinstance(b, (np.ndarray, np.generic)):
        if b.dtype.kind == "O":
            raise TypeError("can't convert np.ndarray of type numpy.object_. The only supported "
                            "types are: float64, float32, float16, complex64, complex128, "
                            "int64, int32, int16, int8, uint64, uint32, uint16, uint8, and bool.")
        return False
    return getattr(getattr(b, "_engine", None), "level", None) is None


def _picked(x, dim, keepdim, reduce, arg):
    """max(dim) / min(dim): (values, indices) where the values are read at the indices, so
    the gradient goes to that one element, as torch's (amax and max() share it among ties)."""
    if x.ndim == 0:   # NOTE: torch lets a 0-d tensor take dim 0 or -1
        return ValuesIndices(reduce(x, axis=dim, keepdims=keepdim),
                             arg(x, axis=dim, keepdims=keepdim))
    index = arg(x, axis=dim, keepdims=True)
    values = ops.gather(x, index, axis=dim)
    if not keepdim:
        values, index = ops.squeeze(values, axis=dim), ops.squeeze(index, axis=dim)
    return ValuesIndices(values, index)


def _binary(op, a, b):
    """The operator fast path (a + b …): no attrs, one kernel call, one wrap."""
    if type(b) not in _NUMBERS and not isinstance(b, Tensor) and foreign(b):
        return NotImplemented
    if TRACING[0]:   # NOTE: a thread may be tracing (compile): ops.bind asks its trace stack
        return ops.bind(op, a, b)
    x, y, bt = a._array, b, type(b)
    if not op.complex and (x.dtype.kind == "c" or bt is complex or isinstance(b, Tensor) and
                           b._array.dtype.kind == "c"):
        raise _located(complex_refusal(op, first_complex((x, b))))
    if bt is complex:
        x, y = _promote_arrays(op, [x, y])   # NOTE: float32 * 1j is complex64, as torch's
    elif bt is Tensor or isinstance(b, Tensor):
        y = b._array
        if op.scalar_opmath and not y.ndim and y.dtype is not x.dtype:
            return EagerEngine.apply(op, (a, b), {})   # NOTE: the scalar read in float32
        # NOTE: mixed dtypes, or int / int: PyTorch's dtype, cast to before the kernel
        if y.dtype is not x.dtype or op.promote == "divide" and x.dtype.kind in "biu":
            x, y = _promote_arrays(op, [x, y])
    elif bt is not float and bt is not int and isinstance(b, np.generic):
        return _binary(op, a, _number(b))
    elif x.dtype.kind in "biu" and (bt is float or op.promote == "divide") or \
            bt is int and x.dtype.kind == "b" or \
            bt is bool and x.dtype.kind != "b":   # NOTE: bool ** 3 is int64; int - True raises
        x, y = _promote_arrays(op, [x, y])
    elif bt is int and not 0 <= b <= 127 and x.dtype.kind in "iu" and \
            (b > 0 or op is not _POW):   # NOTE: uint8 ** -2 raises (the kernel's check)
        if op is _POW:   # NOTE: int8 ** 200 raises (an exponent is a Scalar argument)
            torch_int_scalar(b, x.dtype)
        x, y = _promote_arrays(op, [x, y])   # NOTE: uint8 - 1 adds 255, as torch's
    try:
        out = op.kernel(x, y)
    except RuntimeWarning:        # NOTE: NumPy's under -W error: torch's inf and nan
        out = quietly(op, (x, y), {})
    except Exception as err:  # noqa: BLE001
        # NOTE: an operand of a higher-level engine (a graph tensor, a compiler tracer)
        # refuses to be an array and lands here: ops.bind hands the call to its engine.
        # Zero cost on the path where the kernel works.
        if getattr(getattr(b, "_engine", None), "level", 0) > EagerEngine.level:
            return ops.bind(op, a, b)
        raise _fail(op, (a, b), {}, err) from None
    if type(b) is Tensor and b._array.ndim != a._array.ndim and op is not _MATMUL:
        warn_outer(op.name, a._array.shape, b._array.shape)   # NOTE: (N, 1) - (N,) is (N, N)
    return _wrapped(out, op, (a, b), {}, a.requires_grad or isinstance(b, Tensor)
                    and b.requires_grad)


def recorded(data, op, inputs, attrs):
    """A tensor holding `data` that backward() treats as `op` applied to `inputs`: the walk
    calls `op.vjp(g, *inputs, out=, needs=, **attrs)`. How an op built outside the registry
    joins the tape (a compile()d function's whole graph; torch's autograd.Function)."""
    t = Tensor(data)
    t.requires_grad = True
    t._node = entry(op, tuple(inputs), attrs)
    return t


def leaves_reached(outputs):
    """The leaf tensors a backward() from `outputs` would give gradients to (torch's DDP walks
    the autograd graph the same way to find unused parameters)."""
    return [t for t in toposort([o for o in outputs if _needs_grad(o)], _node_of, _needs_grad)
            if t._node is None]


@_lowers
def _autocast_matmul(a, b):
    return ops.matmul(a, b)


def _number(v):
    """A NumPy scalar as torch reads it: a Python number (an integer as int, else float)."""
    return int(v) if isinstance(v, np.integer) else float(v)


def _rbinary(op, a, b):
    """b op a where b is not a Tensor (2 - t)."""
    if type(b) not in _NUMBERS and foreign(b):
        if op is _DIV:   # NOTE: torch's o / t is t.reciprocal() * o, through Python's * protocol
            return a.reciprocal() * b
        return NotImplemented
    if isinstance(b, np.generic):
        b = _number(b)
    if op is _MUL:   # NOTE: torch's 2 * t is t.mul(2): the scalar second (torch_scalar_opmath)
        return _binary(op, a, b)
    if op is _DIV and type(b) in (int, float, bool):
        # NOTE: torch's 2 / t is t.reciprocal() * 2, rounded twice (not torch.div(2, t))
        return _binary(_MUL, _reflected(op, a, 1.0), b)
    return _reflected(op, a, b)


def _reflected(op, a, b):
    """op(b, a), b a number."""
    if TRACING[0]:
        return ops.bind(op, b, a)
    return EagerEngine.apply(op, (b, a), {})


def _node_of(t):
    node = t._node
    if type(node) is _Freed:
        raise RuntimeError(
            f"Trying to backward through the graph a second time (through '{node.name}'): "
            f"its saved values were freed by the first backward(). Pass retain_graph=True to "
            f"the first backward() if you need to call it twice.")
    if node is not None and node[3] is not None and node[3] != CLOCK[0]:
        return _check_unmodified(t, node)
    return node


def _check_unmodified(t, node):
    """PyTorch's version-counter check. An entry whose gradient rule reads a value (its
    `Op.reads`: torch's saved tensors) that was written in place since the entry was made
    raises PyTorch's error; a value it does not read may have been written: the entry then
    takes the tensor as it was (`as_of`, the tape entry it had then), so `y[:, :2] =
    y[:, :2].sigmoid()` or `y[..., 0] *= 2` differentiate as torch's. Returns the entry, with
    its inputs as they were where that differs."""
    op, clock, inputs, swapped = node[0], node[3], node[1], None
    needs = tuple(isinstance(v, Tensor) and v.requires_grad for v in inputs)
    if op.reads_out(needs) and written_at(t) > clock:
        _modified_error(t, t, node)
    for k, v in enumerate(inputs):
        if isinstance(v, Tensor) and written_at(v) > clock:
            if op.reads_input(k, needs):
                _modified_error(t, v, node)
            old = as_of(v, clock)
            if old is None:
                _modified_error(t, v, node)
            if old is not v:
                swapped = list(inputs) if swapped is None else swapped
                swapped[k] = old
    return node if swapped is None else entry(op, tuple(swapped), node[2], clock)


def _modified_error(t, v, node):
    what = "its output" if v is t else f"an input of shape {tuple(v.shape)}"
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} ({v.dtype}) of '{node[0].name}' was written in "
        f"place after '{node[0].name}' used it. Hint: make the in-place change out of "
        f"place (y = y + 1 instead of y += 1), or clone() the tensor first.")


def keep_before(t, tick, snapshot):
    """t was written in place at `tick` with its tape entry replaced; `snapshot` (a tensor)
    holds its value and tape entry from just before. Held weakly: it lives as long as the
    tape that uses it."""
    held = [k for k in (getattr(t, "_before", None) or ()) if k[1]() is not None]
    held.append((tick, weakref.ref(snapshot)))
    t._before = held


def as_of(v, clock):
    """v with the tape entry it had at `clock` (a snapshot a later write kept, or v's view of
    its base as the base was then); v itself when no write since replaced an entry; None
    when the one it had is no longer held."""
    for tick, ref in getattr(v, "_before", None) or ():
        if tick > clock:
            return ref()
    node = v._node
    if node is None or type(node) is not Entry or not node[0].view or \
            not isinstance(node[1][0], Tensor) or getattr(v, "_root", None) is None:
        return v
    base = as_of(node[1][0], clock)
    if base is None or base is node[1][0]:
        return base
    rest = [a._array if isinstance(a, Tensor) else a for a in node[1][1:]]
    old = blank(Tensor, v.requires_grad)
    old._array = node[0].kernel(base._array, *rest, **node[2])
    old._node = entry(node[0], (base,) + tuple(node[1][1:]), node[2], node[3])
    return old


def owned_array(arr, taken):
    """arr itself if a leaf's .grad may keep it, else a copy.

    A gradient can be a read-only broadcast view (from sum), a view of another array, the
    same array as another leaf's gradient (add passes g to both sides) or the caller's own
    `gradient`: .grad must be a writable array of its own, as in torch.
    """
    f = arr.flags
    if not (f.owndata and f.writeable) or id(arr) in taken:
        arr = arr.copy()
    taken.add(id(arr))
    return arr


_POST_ACCUMULATE_HOOKS = {}   # id(leaf) -> (weakref to it, [hook(leaf)])



def _accumulate_grad(t, g, create_graph, owned):
    """Add a leaf's gradient from one backward() into its .grad, then run its hooks."""
    hooked = leaf_hooked(t, g) if _LEAF_HOOKS else g   # NOTE: register_hook's hooks see
    if hooked is not g and not create_graph:           # (and may replace) g first; what one
        hooked = Tensor(np.array(hooked._array))       # returns may be held: .grad is a copy
    g = hooked
    if not create_graph or not g.requires_grad:   # NOTE: .grad is added into in place later
        arr = owned_array(g._array, owned)
        if arr is not g._array or g.requires_grad:   # NOTE: else g is a plain tensor to keep
            g = Tensor(arr)
    add_into_grad(t, g, create_graph)
    held = _POST_ACCUMULATE_HOOKS.get(id(t))
    if held is not None and held[0]() is t:
        for hook in list(held[1]):
            hook(t)


def add_into_grad(t, g, create_graph):
    """t.grad += g as torch's AccumulateGrad: into the same .grad tensor (a reference the user
    holds sees the sum) unless the backward records a graph or .grad is part of one, where
    .grad becomes a new tensor, the sum."""
    old = t.grad
    if old is None:
        t.grad = g
        return
    arr, add = old._array, g._array
    if not create_graph and not old.requires_grad and type(arr) is np.ndarray and \
            arr.flags.writeable and arr.shape == np.shape(add) and arr.dtype == add.dtype:
        np.add(arr, add, out=arr)
    else:
        t.grad = old + g


def array_of(t):
    """The NumPy array that holds t's values, itself (not a copy): what compile() feeds its
    plans from and writes a step's results back into. Reading it records nothing."""
    return t._array


def grad_hooks(t):
    """The hooks a backward() runs for t: (register_hook's, register_post_accumulate_grad_hook's),
    each a list; compile() reads them to know when a traced backward would skip one."""
    def live(table):
        held = table.get(id(t))
        return list(held[1]) if held is not None and held[0]() is t else []
    return live(_LEAF_HOOKS), live(_POST_ACCUMULATE_HOOKS)


def traced_step():
    """The compile() trace running in this thread when it records a training step's side
    effects (compiler/tracer.py), else None."""
    tr = current_trace() if TRACING[0] else None
    return tr if getattr(tr, "steps", False) else None


def zero_grads(params, set_to_none):
    """Module.zero_grad and Optimizer.zero_grad: drop each .grad, or fill it with zeros in
    place; inside compile() the change is recorded, to be made at every call."""
    tr = traced_step()
    for p in params:
        if tr is not None:
            tr.note_grad(p, "write" if set_to_none else "read")
        if set_to_none or p.grad is None:
            p.grad = None
        elif tr is not None:
            tr.zero_grad(p)
        else:
            p.grad._array[...] = 0


def _free(t):
    """backward() is done with t's tape entry: its saved values go, and a second backward
    through it raises (torch frees its buffers the same way, node by node)."""
    name = t._node[0].name
    t._node = _FREED.get(name) or _freed(name)


def _keep(t):
    """backward(retain_graph=True) is done with t's entry: it stays for the next one."""


def _after_hooks(t, g, grads):
    """A retained gradient is the one t's register_hook hooks passed on, as torch's."""
    node = t._node
    if type(node) is Entry and node[0] is _HOOK:
        passed = grads.get(id(node[1][0]))
        return g if passed is None else passed[1]
    return g


def _add_into(total, g, at=None):
    """backward()'s in-place sum of two gradients (ops.autodiff's add_into): arrays of one
    shape and dtype only, so the values are those of `total + g`; with `at` (a basic index),
    g is added into total[at], which has g's shape."""
    a, b = total._array, getattr(g, "_array", None)
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype or \
            not a.flags.writeable:
        return False
    if at is None:
        if a.shape != b.shape:
            return False
        np.add(a, b, out=a)
        return True
    part = a[at]
    if type(part) is not np.ndarray or part.shape != b.shape or part.base is None:
        return False
    np.add(part, b, out=part)
    return True


def _one_node(t, gradient, create_graph, retain_graph, owned):
    """backward() from `t` when its tape is one op on leaves (a compile()d function's entry,
    a loss of parameters): the rule runs and the leaves accumulate, without the walk. False
    (nothing done) for any other tape."""
    node = t._node
    if type(node) is not Entry or create_graph or _POST_ACCUMULATE_HOOKS or RETAINS_GRAD:
        return False
    op, inputs = node[0], node[1]
    if op.vjp is None or node[3] is not None and node[3] != CLOCK[0]:
        return False
    needs = []
    for inp in inputs:
        if isinstance(inp, Tensor) and inp.requires_grad:
            if inp._node is not None:
                return False
            needs.append(True)
        else:
            needs.append(False)
    prev, _GRAD.enabled = _GRAD.enabled, False   # NOTE: as the walk: no create_graph here
    try:
        in_grads = op.vjp(gradient, *inputs, out=t, needs=tuple(needs), **node[2])
    finally:
        _GRAD.enabled = prev
    acc = {}
    for inp, need, g in zip(inputs, needs, in_grads):
        if need and g is not None:   # NOTE: a leaf used twice gets the sum, then accumulates
            prev = acc.get(id(inp))
            acc[id(inp)] = (inp, g if prev is None else prev[1] + g)
    for leaf, g in acc.values():
        _accumulate_grad(leaf, g, False, owned)
    if not retain_graph:
        t._node = _freed(op.name)
    return True


# NOTE: torch's anomaly mode (autograd.set_detect_anomaly / detect_anomaly), process-wide as
# torch's: backward then checks every rule's results for NaN
ANOMALY = {"enabled": False, "check_nan": True}


def anomaly_check():
    """The check backprop runs on each rule's results, or None when anomaly mode is off."""
    return _anomaly_check if ANOMALY["enabled"] and ANOMALY["check_nan"] else None


def _anomaly_check(op, grads):
    for i, g in enumerate(grads):
        a = getattr(g, "_array", g)
        if not isinstance(a, np.ndarray) or not inexact(a.dtype):
            continue
        if np.isnan(a.astype(np.float32) if is_bfloat16(a.dtype) else a).any():
            raise RuntimeError(f"Function '{op.name}' returned nan values in its {i}th "
                               f"output.")


def gradients_at(outputs, seeds, inputs, retain_graph, create_graph):
    """The gradients of outputs (weighted by seeds) at each of inputs, None where an input
    is not reached: autograd.grad's walk, and backward(inputs=)'s."""
    prev = _GRAD.enabled
    _GRAD.enabled = bool(create_graph)
    try:
        found = backprop(outputs, seeds, _node_of, _needs_grad, stop={id(x) for x in inputs},
                         on_done=_keep if retain_graph else _free, check=anomaly_check())
    finally:
        _GRAD.enabled = prev
    out = []
    for x in inputs:
        hit = found.get(id(x))
        out.append(None if hit is None else hit[1] if create_graph else
                   Tensor(np.array(hit[1]._array, copy=True)))
    return out


def accumulate_into(outputs, seeds, inputs, retain_graph, create_graph):
    """backward(inputs=...): the gradients added into those tensors' .grad only (leaves or
    not; one not reached keeps its .grad), as torch's."""
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    retain_graph = create_graph if retain_graph is None else retain_graph
    for x, g in zip(inputs, gradients_at(outputs, seeds, inputs, retain_graph, create_graph)):
        if g is not None:
            add_into_grad(x, g, create_graph)


def seed_gradient(out, gradient):
    """The gradient a backward from `out` starts with: `gradient` as a tensor, or ones for
    a one-element output; an output that requires no grad raises, as torch."""
    if not isinstance(out, Tensor) or not out.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have "
                           "a grad_fn")
    if gradient is None:
        if out._array.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; "
                               f"this output has shape {out._array.shape}")
        return Tensor(np.ones_like(out._array))
    if not isinstance(gradient, Tensor):
        return Tensor(np.asarray(gradient, dtype=out._array.dtype))
    if gradient._array.dtype != out._array.dtype:
        # NOTE: torch's engine casts a gradient to the dtype of the tensor it is for (a float32
        # grad_output of a float64 output is read as float64)
        return ops.cast(gradient, out._array.dtype)
    return gradient


def _needs_grad(v):
    """v can carry a gradient: it requires grad and its producer (if any) has a rule.

    NOTE: the output of a rule-less op (stop_gradient, argsort, …) keeps requires_grad, as in
    torch, but no gradient is built for it: x - stop_gradient(m) computes no -g for m.
    """
    if not isinstance(v, Tensor) or not v.requires_grad:
        return False
    node = v._node
    return node is None or type(node) is _Freed or node[0].vjp is not None


def printed(t, prefix):
    """t's text as torch prints it, after `prefix` ("tensor(")."""
    arr = t._array if type(t._array) is np.ndarray else t._concrete("repr", "print")
    node = t.grad_fn
    return tensor_repr(arr, DEFAULT_FLOAT[0], prefix, node and node.name(), t.requires_grad)


class Tensor:
    """An n-dimensional array with autograd, in PyTorch's style: its core here (storage,
    dtype and shape, autograd, the arithmetic operators); every other method and operator
    comes from the table in eager/surface.py."""
    __slots__ = ("_array", "requires_grad", "grad", "_node", "_modified", "_root", "_size",
                 "_before", "__weakref__")
    _engine = EagerEngine
    __array_ufunc__ = None   # ndarray + Tensor defers to Tensor.__radd__

    def __init__(self, data, requires_grad=False):
        self._array = data if type(data) is np.ndarray else np.asarray(data)
        if requires_grad and self._array.dtype.kind == "c":   # NOTE: nn.Parameter too
            raise no_complex_autograd("requires_grad=True")
        self.requires_grad = bool(requires_grad)
        self.grad = self._root = self._size = None
        self._node = None

    # -- what it is ---------------------------------------------------------------------------
    @property
    def data(self):
        """The values without autograd, as in PyTorch: a tensor sharing this one's array.

        `p.data.normal_()`, `p.data.zero_()`, `p.data -= lr * p.grad` write into this
        tensor and are not recorded; `p.data = t` makes this tensor share `t`'s values (its
        shape may change), also unrecorded. `t.numpy()` is the NumPy array itself.
        """
        out = self.detach()   # NOTE: inside compile() too: read at every call, as detach is
        root = getattr(out, "_root", None)
        if type(root) is Storage:   # NOTE: detach's memory, with a version counter of its own
            out._root = DataStorage(root.array)
        return out

    @data.setter
    def data(self, value):
        self._array = value._array if isinstance(value, Tensor) else np.asarray(value)

    @property
    def shape(self):
        """torch.Size: made once per shape the tensor has had (shape is read on hot paths)."""
        shape = self._array.shape
        try:
            size = self._size
            if size == shape:
                return size
        except AttributeError:   # NOTE: a tensor made by `_new` that did not set it
            pass
        size = self._size = as_size(shape)
        return size

    @property
    def dtype(self):   # NOTE: torch.dtype, one per NumPy dtype (eager/dtypes.py): a lookup,
        d = self._array.dtype   # after an identity test for NumPy's own float32 (hashing a
        return _FLOAT32 if d is _NP_FLOAT32 else _DTYPES[d]   # dtype costs more than `is`)

    @property
    def spec(self):
        return ops.Spec(self._array.shape, self._array.dtype)

    @property
    def ndim(self):
        return self._array.ndim

    @property
    def grad_fn(self):
        node = self._node
        if type(node) is Entry and node[0] is _HOOK:   # register_hook's entry: what it wraps
            return node[1][0].grad_fn
        return None if node is None else GradFn(node)

    @property
    def is_leaf(self):
        return self._node is None

    def size(self, dim=None):
        return self.shape if dim is None else self._array.shape[dim]

    def dim(self):
        return self._array.ndim

    def numel(self):
        return self._array.size

    def storage_offset(self):
        """Where this tensor's first element lies in its storage, in elements: its place in
        the tensor it is a view of (slicing, transpose, ...), else 0."""
        where = storage_of(self)
        if where is None and getattr(self, "_root", None) is not None and \
                type(self._array) is not np.ndarray:
            tr = current_trace()            # NOTE: compile()'s tracer for an eager view
            if tr is not None:
                tr.break_here("layout")
        return 0 if where is None else where[1]

    def data_ptr(self):
        """The address of this tensor's first element, as torch's (0 when it has none): two
        tensors sharing memory from the same place (a tied weight, a view at offset 0) give
        the same number."""
        arr = self._concrete("data_ptr")
        return 0 if arr.size == 0 else arr.__array_interface__["data"][0]

    def untyped_storage(self):
        """The memory this tensor's elements lie in, as torch's `UntypedStorage`: the
        storage of the tensor it is a view of, else its own (`data_ptr()`, `nbytes()`)."""
        root = getattr(self, "_root", None)
        return UntypedStorage(self._concrete("untyped_storage") if root is None else root.array)

    def _concrete(self, what, kind="layout"):
        """The tensor's NumPy array; inside compile() a traced value has no address (or,
        for `kind` "print", no values to show): the trace ends here and the function runs
        eagerly from this call on."""
        arr = self._array
        if type(arr) is not np.ndarray:
            tr = current_trace()
            if tr is not None:
                tr.break_here(kind)
            arr = np.asarray(arr)
        return arr

    def __len__(self):
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __repr__(self):
        """As torch prints it (eager/printing.py): `tensor([1.5000, 2.0000])`, the dtype
        when it is not the default one of its kind, then `grad_fn=` or `requires_grad=`;
        a subclass's name in place of `tensor`."""
        return printed(self, "tensor(" if type(self) is Tensor else f"{type(self).__name__}(")

    # -- leaving the tensor world ---------------------------------------------------------------
    def numpy(self):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on a Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if is_bfloat16(self._array.dtype):   # NOTE: as torch: NumPy has no bfloat16
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._array

    def item(self):
        if self._array.size != 1:
            raise RuntimeError(f"a Tensor with {self._array.size} elements cannot be converted "
                               f"to Scalar")
        return self._array.item()

    def __format__(self, spec):
        """A 0-d tensor formats as its number (f"{loss:.4f}"), as torch's; others take no
        format spec."""
        if self._array.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def tolist(self):
        return self._array.tolist()

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)

    def __bool__(self):
        if self._array.size != 1:
            raise RuntimeError(f"Boolean value of a Tensor with shape {self._array.shape} is "
                               f"ambiguous; use .any() or .all()")
        return bool(self._array)

    def __float__(self):
        return float(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __complex__(self):
        return complex(self._scalar())

    def _scalar(self):
        """The one element Python's float(), int() and complex() take (torch's ValueError for
        more, where item() raises RuntimeError)."""
        if self._array.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self):
        """A single-element integer or bool tensor of any shape, as torch's (`names[t]` with
        t of shape (1,) works there)."""
        if self._array.dtype.kind not in "iub" or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self._array.reshape(()))

    __hash__ = object.__hash__

    # -- autograd -----------------------------------------------------------------------------
    def detach(self):
        if TRACING[0] and current_trace() is not None:
            # NOTE: a trace (compile) reads a parameter's detach at every call; another
            # thread's trace leaves this thread's detach sharing the array, as always
            out = ops.stop_gradient(self)
            out.requires_grad, out._node = False, None
            return out
        out = Tensor(self._array)
        base = getattr(self, "_root", None)
        out._root = Storage(self._array) if base is None else base   # NOTE: as torch's
        return out

    def requires_grad_(self, requires_grad=True):
        if self._node is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if requires_grad and not inexact(self._array.dtype):
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, "
                               f"got {self._array.dtype}")
        if requires_grad and self._array.dtype.kind == "c":
            raise no_complex_autograd("requires_grad_")
        self.requires_grad = bool(requires_grad)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False,
                 retain_variables=None, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's .grad that requires grad (with
        `inputs`, into those tensors' .grad only, leaves or not); the graph is kept when
        create_graph is (retain_graph defaults to it, as in torch).
        `retain_variables=` is torch 0.3's name of retain_graph."""
        if retain_variables is not None:
            retain_graph = retain_variables if retain_graph is None else retain_graph
        if inputs is not None:
            accumulate_into([self], [seed_gradient(self, gradient)], inputs, retain_graph,
                            create_graph)
            return
        if retain_graph is None:
            retain_graph = create_graph
        gradient = seed_gradient(self, gradient)
        owned, done = {id(gradient._array)}, set()
        if _one_node(self, gradient, create_graph, retain_graph, owned):
            return
        on_leaf = None
        if _POST_ACCUMULATE_HOOKS:   # NOTE: leaves with hooks get .grad as soon as it is final
            def on_leaf(t, g):
                done.add(id(t))
                _accumulate_grad(t, g, create_graph, owned)
        prev = _GRAD.enabled
        _GRAD.enabled = create_graph
        # NOTE: each entry is done with (freed, unless retained) as soon as its rule ran;
        # with retain_grad() tensors, inner gradients are kept and entries freed after
        on_done = None if RETAINS_GRAD else _keep if retain_graph else _free
        try:
            grads = backprop([self], [gradient], _node_of, _needs_grad, on_leaf=on_leaf,
                             on_done=on_done, add_into=None if create_graph else _add_into,
                             check=anomaly_check())
        finally:
            _GRAD.enabled = prev
        for t, g in grads.values():   # NOTE: the leaves, and the inner values kept above
            if t._node is None:
                if id(t) not in done:
                    _accumulate_grad(t, g, create_graph, owned)
            elif on_done is None:
                if retains_grad(t):
                    _accumulate_grad(t, _after_hooks(t, g, grads), create_graph, owned)
                if not retain_graph:
                    _free(t)

    def register_post_accumulate_grad_hook(self, hook):
        """Call hook(self) each time backward() has accumulated this leaf's .grad, as torch.

        Hooks run during the backward pass, as soon as this leaf's gradient is complete.
        Returns a handle whose .remove() unregisters the hook.
        """
        if self._node is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        key = id(self)
        held = _POST_ACCUMULATE_HOOKS.get(key)
        if held is None or held[0]() is not self:
            held = _POST_ACCUMULATE_HOOKS[key] = (
                weakref.ref(self, lambda _, k=key, d=_POST_ACCUMULATE_HOOKS: d.pop(k, None)), [])
        held[1].append(hook)
        return _HookHandle(held[1], hook)

    # -- operators ----------------------------------------------------------------------------
    def __add__(self, o):
        return _binary(_ADD, self, o)

    def __radd__(self, o):
        return _rbinary(_ADD, self, o)

    def __sub__(self, o):
        return _binary(_SUB, self, o)

    def __rsub__(self, o):
        return _rbinary(_SUB, self, o)

    def __mul__(self, o):
        return _binary(_MUL, self, o)

    def __rmul__(self, o):
        return _rbinary(_MUL, self, o)

    def __truediv__(self, o):
        return _binary(_DIV, self, o)

    def __rtruediv__(self, o):
        return _rbinary(_DIV, self, o)

    def __pow__(self, o):
        return _binary(_POW, self, o)

    def __rpow__(self, o):
        return _rbinary(_POW, self, o)

    def __matmul__(self, o):
        if _AUTOCAST.enabled:   # NOTE: CPU autocast lowers matmul (eager/amp.py)
            return _autocast_matmul(self, o)
        return _binary(_MATMUL, self, o)

    def __rmatmul__(self, o):
        if _AUTOCAST.enabled:
            return _autocast_matmul(o, self)
        return _rbinary(_MATMUL, self, o)

    def __neg__(self):
        if TRACING[0]:
            return ops.bind(_NEG, self)
        return EagerEngine.apply(_NEG, (self,), {})

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()        # NOTE: through the method, so torch's refusals apply (bool)

    def __eq__(self, o):
        return _binary(_CMP["eq"], self, o)

    def __ne__(self, o):
        return _binary(_CMP["ne"], self, o)

    def __lt__(self, o):
        return _binary(_CMP["lt"], self, o)

    def __le__(self, o):
        return _binary(_CMP["le"], self, o)

    def __gt__(self, o):
        return _binary(_CMP["gt"], self, o)

    def __ge__(self, o):
        return _binary(_CMP["ge"], self, o)

    # NOTE: & | ^ ~ (logical on bools, bitwise on integers) come from eager/pointwise.py

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # -- methods, as torch names them ---------------------------------------------------------
    def mean(self, dim=None, keepdim=False, *, dtype=None):
        return ops.mean(self if dtype is None else ops.cast(self, np.dtype(dtype)), axis=dim,
                        keepdims=keepdim)

    def max(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):   # NOTE: torch.max(input, other) is maximum
            return self.maximum(dim)
        nonempty_reduction("max", self.shape, dim)
        if dim is None:
            return ops.max(self)
        return _picked(self, dim, keepdim, ops.max, ops.argmax)

    def min(self, dim=None, keepdim=False):
        if isinstance(dim, Tensor):   # NOTE: torch.min(input, other) is minimum
            return self.minimum(dim)
        nonempty_reduction("min", self.shape, dim)
        if dim is None:
            return ops.min(self)
        return _picked(self, dim, keepdim, ops.min, ops.argmin)

    def amax(self, dim=None, keepdim=False):
        nonempty_reduction("amax", self.shape, dim)
        return ops.max(self, axis=dim, keepdims=keepdim)

    def argmax(self, dim=None, keepdim=False):
        nonempty_reduction("argmax", self.shape, dim)
        if dim is None:
            return ops.argmax(self.reshape(-1), axis=0)
        return ops.argmax(self, axis=dim, keepdims=keepdim)

    def argmin(self, dim=None, keepdim=False):
        nonempty_reduction("argmin", self.shape, dim)
        if dim is None:
            return ops.argmin(self.reshape(-1), axis=0)
        return ops.argmin(self, axis=dim, keepdims=keepdim)

    def logsumexp(self, dim, keepdim=False):
        """(ops only: eager.logsumexp runs it on a compile() tracer or a graph tensor too)"""
        if self.dtype.kind in "biu":   # NOTE: torch computes integers in the default float
            self = ops.cast(self, DEFAULT_FLOAT[0])
        if len(self.shape) == 0:    # NOTE: torch reads a 0-d tensor as one element along dim 0
            return ops.reshape(ops.logsumexp(ops.reshape(self, (1,)), axis=0), ())
        return ops.logsumexp(self, axis=dim, keepdims=keepdim)

    def norm(self, p=2, dim=None, keepdim=False):
        if p == "nuc":      # NOTE: torch.norm's nuclear norm: over dim, a pair (the last two)
            return ops.singular_value_norm(self, "nuc", (-2, -1) if dim is None else tuple(dim),
                                           keepdim)
        return ops.norm(self, ord=p, axis=dim, keepdims=keepdim)

    def flip(self, *dims, **kwargs):
        """x.flip(0, 1), x.flip((0, 1)) or x.flip(dims=...): a copy, as torch's."""
        if kwargs:
            if dims or set(kwargs) != {"dims"}:
                raise TypeError(f"flip() got unexpected arguments {sorted(kwargs)}; "
                                "it takes dims, as torch's")
            dims = (kwargs["dims"],)
        dims = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims
        return ops.flip(self, dims if isinstance(dims, int) else tuple(dims))

    def tril(self, diagonal=0):
        return ops.tril(self, diagonal)

    def triu(self, diagonal=0):
        return ops.triu(self, diagonal)

    def masked_fill(self, mask, value):
        return ops.masked_fill(self, mask, value)

    def repeat(self, *sizes):
        sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        return ops.tile(self, sizes)

    def chunk(self, chunks, dim=0):
        n = self.shape[dim]
        return tuple(ops.split(self, -(-n // chunks), axis=dim))

    def split(self, split_size_or_sections, dim=0):
        return tuple(ops.split(self, split_size_or_sections, axis=dim))

    def square(self):
        return ops.square(self)

    def rsqrt(self):
        return ops.rsqrt(self)

    def sin(self):
        return ops.sin(self)

    def cos(self):
        return ops.cos(self)

    def softmax(self, dim, dtype=None):
        return ops.softmax(self if dtype is None else ops.cast(self, np.dtype(dtype)), axis=dim)

    def log_softmax(self, dim, dtype=None):
        x = self if dtype is None else ops.cast(self, np.dtype(dtype))
        return ops.log_softmax(x, axis=dim)

    def exp(self):
        return ops.exp(self)

    def log(self):
        return ops.log(self)

    def sqrt(self):
        return ops.sqrt(self)

    def tanh(self):
        return ops.tanh(self)

    def sigmoid(self):
        return ops.sigmoid(self)

    def relu(self):
        return ops.relu(self)

    def abs(self):
        return ops.abs(self)

    def pow(self, exponent):
        return self ** exponent

    def matmul(self, other):
        return _autocast_matmul(self, other)

    def clamp(self, min=None, max=None):  # noqa: A002 - torch's names
        return ops.clamp(self, min, max)   # NOTE: a bool result refused: refusals.install

    clip = clamp

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return ops.reshape(self, shape)

    def view(self, *shape):
        """reshape. NOTE: dualgrad's arrays do not always have torch's strides (a product may
        come out transposed), so a view that torch must refuse is not refused here: where the
        strides do not allow one, it is a copy (docs/pytorch-compat.md)."""
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
            raise NotImplementedError("Tensor.view(dtype) (reinterpreting the bytes) is not "
                                      "supported by dualgrad; use .to(dtype) to convert values")
        return self.reshape(*shape)

    def flatten(self, start_dim=0, end_dim=-1):
        nd = self._array.ndim
        if nd == 0:
            return self.reshape(1)
        s, e = (norm_axis("flatten", d, nd, self.shape, frontend=True)
                for d in (start_dim, end_dim))
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        shape = self._array.shape
        return ops.reshape(self, shape[:s] + (-1,) + shape[e + 1:])

    def transpose(self, dim0, dim1):
        nd = self.ndim
        # NOTE: a 0-d tensor takes dims 0 and -1 (as one of 1 dim), and is its own transpose
        dim0, dim1 = (norm_axis("transpose", d, max(nd, 1), self.shape, frontend=True)
                      for d in (dim0, dim1))
        axes = list(range(nd))
        if nd:
            axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return ops.transpose(self, axes=tuple(axes))

    def permute(self, *dims):
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        return ops.transpose(self, axes=tuple(dims))

    @property
    def T(self):
        if self._array.ndim not in (0, 2):
            warn_once("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated and it will throw an error in a future release. "
                      "Consider `x.mT` to transpose batches of matrices or "
                      "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                      "dimensions of a tensor.", stacklevel=2)
        return ops.transpose(self, axes=tuple(reversed(range(self._array.ndim))))

    def unsqueeze(self, dim):
        return ops.expand_dims(self, axis=dim)

    def squeeze(self, dim=None):
        """Drop dims of size 1: all of them, or those of `dim` (an int or a tuple) that have
        size 1; a named dim of another size is left as it is, as in torch."""
        if dim is None:
            return ops.squeeze(self, axis=None)
        shape = tuple(self.shape)
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        nd = max(len(shape), 1)
        for d in dims:
            if not -nd <= d < nd:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-nd}, {nd - 1}], but got {d})")
        keep = tuple(sorted({d % nd for d in dims if shape and shape[d % nd] == 1}))
        if not keep:
            return ops.reshape(self, shape)
        return ops.squeeze(self, axis=keep if len(keep) > 1 else keep[0])

    def expand(self, *sizes):
        sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        lead = len(sizes) - self._array.ndim
        shape = tuple(self._array.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        return ops.broadcast_to(self, shape=shape)

    def expand_as(self, other):
        return ops.broadcast_like(self, other)

    # -- device and dtype ---------------------------------------------------------------------
    @property
    def device(self):
        return _device.CPU

    is_cuda = False

    def cpu(self):
        return self

    def cuda(self, device=None, non_blocking=False):
        raise AssertionError(_device.NO_CUDA)

    def type(self, dtype=None):
        """The type's name ('torch.FloatTensor'), or this tensor cast to a dtype, to a legacy
        type (torch.LongTensor) or to a legacy type's name."""
        if dtype is None:
            return _TYPE_NAMES.get(self._array.dtype.name, self._array.dtype.name)
        if isinstance(dtype, str) and dtype in _TYPE_DTYPES:
            dtype = _TYPE_DTYPES[dtype]
            dtype = bfloat16() if dtype == "bfloat16" else dtype
        return ops.cast(self, getattr(dtype, "dtype", dtype))

    def type_as(self, other):
        return self.to(other.dtype)

    def float(self, memory_format=None):
        return self._as("float32", memory_format)

    def double(self, memory_format=None):
        return self._as("float64", memory_format)

    def long(self, memory_format=None):
        return self._as("int64", memory_format)

    def int(self, memory_format=None):
        return self._as("int32", memory_format)

    def bool(self, memory_format=None):
        return self._as("bool", memory_format)

    def bfloat16(self, memory_format=None):
        return self._as(bfloat16(), memory_format)



CORE_NAMES = frozenset(vars(Tensor))   # what eager/surface.py's table does not override

_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
               "float16": "torch.HalfTensor", "bfloat16": "torch.BFloat16Tensor",
               "int64": "torch.LongTensor",
               "int32": "torch.IntTensor", "bool": "torch.BoolTensor"}
_TYPE_DTYPES = {v: k for k, v in _TYPE_NAMES.items()}


def register_hook(t, hook):
    """Tensor.register_hook (eager/hooks.py says how a leaf's and a non-leaf's hooks run)."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._node is None:
        key = id(t)
        held = _LEAF_HOOKS.get(key)
        if held is None or held[0]() is not t:
            held = _LEAF_HOOKS[key] = (
                weakref.ref(t, lambda _, k=key: _LEAF_HOOKS.pop(k, None)), [])
        hooks = held[1]
    elif type(t._node) is Entry and t._node[0] is _HOOK:
        hooks = t._node[2]["hooks"]
    else:
        if type(t._node) is not Entry:
            raise RuntimeError("register_hook: the tensor's graph was freed by backward()")
        prev = _new(Tensor)       # NOTE: t's old self, sharing its storage
        prev._array, prev.grad = t._array, None
        prev.requires_grad, prev._node = True, t._node
        hooks = []
        t._node = entry(_HOOK, (prev,), {"hooks": hooks})
    hooks.append(hook)
    return _HookHandle(hooks, hook)
