"""The compile() tracer: eager tensors with a static shape and no values, recording ops.

A `Trace` is an interpreter on this thread's trace stack (`ops.core.tracing`): while the
traced function runs, `ops.bind` hands it every op call, and it records the op into its
`graph.Graph` through `GraphEngine`. The function's tensors are `Tracer`s, eager Tensors
whose methods work unchanged; what needs a value in Python (`bool(t)`, `.item()`,
`.numpy()`, `print(t)`) raises `GraphBreak`, naming the user's line. `compile()`
(compiled.py) and `export()` (export.py) run functions under a `Trace`. A trace's `log`, an
`EffectsLog`, holds what a traced training step changes besides its results (.grad, tensors
written in place, optimizer steps), for every call of the compiled function to do again.

>>> from dualgrad import eager, graph, ops
>>> tr = Trace("f", params=[])
>>> with tr.graph.as_default(), ops.core.tracing(tr):
...     x = tr.wrap(graph.placeholder("float32", (2, 3)), requires_grad=False)
...     y = (x * 2).sum(1)
>>> type(y).__name__, y.shape, [n.op.name for n in tr.graph.get_operations()][-2:]
('Tracer', torch.Size([2]), ['mul', 'sum'])
"""
from __future__ import annotations

import numpy as np
from dualgrad.ops.rules import inexact

from dualgrad import graph
from dualgrad import ops
from dualgrad.eager import is_grad_enabled
from dualgrad.eager.nn import Parameter
from dualgrad.eager.core import Tensor, array_of, blank, foreign
from dualgrad.eager.dtypes import of as torch_dtype
from dualgrad.eager.formats import format_order
from dualgrad.eager.size import as_size
from dualgrad.graph.core import GraphEngine, Tensor as GraphTensor
from dualgrad.ops.rules import (as_operand, torch_needs_cast, torch_result_dtype,
                                torch_scalar_opmath)
from .ddp_sync import average_bucket
from dualgrad.ops.core import ELEMENTWISE, FLOATING, ComplexError, bind_args, current_trace, \
    first_complex, tracing, user_frame, \
    where_str

__all__ = ["Trace", "EffectsLog", "Tracer", "TraceEngine", "GraphBreak", "active_trace",
           "flatten_out", "rebuild_out"]

# A captured eager tensor up to this many elements is a constant of the graph (folded), its
# values checked at every call; a larger one is an input fed at every call.
CONSTANT_CHECK_MAX = 1 << 16
KEEP = "keep"   # an optimizer step's .grad that is the tensor the call finds (EffectsLog)
_STOP = ops.REGISTRY["stop_gradient"]
_CAST = ops.REGISTRY["cast"]
_RAND = ops.REGISTRY["rand_like"]


# -- graph breaks -----------------------------------------------------------------------------
class GraphBreak(Exception):
    """Raised while tracing by what needs a tensor's value in Python."""

    def __init__(self, what, hint, loc):
        self.what, self.hint, self.loc = what, hint, loc
        super().__init__(f"{what} at {where_str(loc)}")


_BREAKS = {
    "bool": ("Python control flow on a tensor's value (bool(), `if t`, `while t`, and/or)",
             "choose elementwise with eager.where(cond, a, b), or move the branch out of the "
             "compiled function"),
    "item": ("a tensor's value read into Python (.item(), float(), int(), an index)",
             "keep it a tensor (0-d tensors work in arithmetic), or return it and call .item() "
             "on the result"),
    "numpy": ("a tensor converted to NumPy (.numpy(), .tolist(), .data, np.asarray)",
              "use ops on the tensor, or return it and convert the result"),
    "print": ("a tensor's values printed (print, repr, str)",
              "print t.shape or t.dtype (known while tracing), or print the returned result"),
    "inplace": ("a tensor changed in place", "build a new tensor (e.g. eager.where(mask, v, t))"),
    "backward": ("this backward() inside the compiled function",
                 "return the loss and call .backward() on the result"),
    "step": ("this learning-rate scheduler step (or optimizer step with a closure) inside "
             "the compiled function", "call it outside, after the compiled function returns"),
    "after_step": ("a parameter read after the optimizer's step() inside the compiled "
                   "function", "end the function with the step: compute what you need from "
                   "the parameters before it, or after the call"),
    "layout": ("a tensor's memory layout read (is_contiguous(), stride(), storage_offset() "
               "of a view passed in, data_ptr() or untyped_storage())",
               "read it outside the compiled function: a traced tensor has no layout of its "
               "own (contiguous() is traced)"),
    "storage": ("as_strided of a view (a slice, a transpose, ...) passed in, which reads the "
                "storage of the tensor it is a view of",
                "pass that tensor in and take as_strided of it, or of a contiguous() copy"),
    "requires_grad": ("requires_grad_() on a traced tensor",
                      "pass the tensor in with requires_grad=True"),
}


def _hooked(leaf, averaged):
    """leaf has gradient hooks a traced backward would skip: any register_hook hook, or a
    post-accumulate hook other than DistributedDataParallel's for a bucket averaged here."""
    from dualgrad.eager.core import grad_hooks
    from dualgrad.eager.nn.parallel import is_bucket_hook
    on_grad, after = grad_hooks(leaf)
    if on_grad:
        return True
    ddp = {id(p) for buckets, _ in averaged for bucket in buckets for _, p in bucket}
    return any([not is_bucket_hook(h) or id(leaf) not in ddp for h in after])


def _overlap(u, t):
    """Two eager tensors whose arrays share memory."""
    a, b = array_of(u), array_of(t)
    return np.may_share_memory(a, b) and np.shares_memory(a, b)


def _graph_break_at(kind, what):
    """A graph break of `kind`'s hint with its own `what`, at the user's line."""
    err = GraphBreak(what, _BREAKS[kind][1], user_frame())
    tr = current_trace()
    if isinstance(tr, Trace):
        tr.breaks.append(err)
    raise err


def _graph_break(tracer, kind):
    what, hint = _BREAKS[kind]
    err = GraphBreak(what, hint, user_frame())
    tr = tracer._trace
    if tr is not None:
        tr.breaks.append(err)   # NOTE: a user's `except Exception` must not hide it
    raise err


# -- the tracer -------------------------------------------------------------------------------
class _Values:
    """What a traced tensor's `_array` is while tracing: a static shape and dtype, and no values."""
    __slots__ = ("_t",)
    __array_ufunc__ = None   # a kernel handed this raises TypeError, never converts it

    def __init__(self, t):
        self._t = t

    shape = property(lambda self: self._t.shape)
    dtype = property(lambda self: self._t.spec.dtype)
    ndim = property(lambda self: self._t.ndim)
    spec = property(lambda self: self._t.spec)
    size = property(lambda self: int(np.prod(self._t.shape, dtype=np.int64)))

    def __array__(self, dtype=None, copy=None):
        _graph_break(self._t, "numpy")

    def _arith(self, *_):
        # NOTE: arithmetic on `.data` (e.g. BatchNorm's in-place running statistics) reads
        # values a trace does not have: a graph break naming the user's line, not a TypeError
        _graph_break(self._t, "numpy")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __pow__ = __matmul__ = __neg__ = _arith

    def __getattr__(self, name):   # .data.sum(), .data.copy(), ... need the values
        _graph_break(self._t, "numpy")

    def __getitem__(self, index):
        _graph_break(self._t, "numpy")

    def __setitem__(self, index, value):
        _graph_break(self._t, "inplace")

    def __bool__(self):
        _graph_break(self._t, "bool")

    def __float__(self):
        _graph_break(self._t, "item")

    __int__ = __index__ = __float__

    def __repr__(self):
        _graph_break(self._t, "print")


class TraceEngine:
    """The engine of tracers (level 2). While its trace runs, the trace itself is on this
    thread's trace stack and ops.bind hands it the calls; this is reached only after."""
    level = 2

    @staticmethod
    def apply(op, args, attrs):
        raise RuntimeError(
            f"{op.name}: a tensor traced inside a compiled function was used after its trace "
            f"ended (was it stored in a global, a list or an attribute?); a compiled "
            f"function's results are eager tensors, keep those instead")


def _no_complex(op):
    return ComplexError(f"{op.name}: compile() does not trace complex tensors or numbers (its "
                        f"graphs are real); call the function eagerly")


class Tracer(Tensor):
    """An eager Tensor with a static spec and no values, recording ops into a graph.

    The eager Tensor's methods work on it unchanged (they call ops.*, which bind hands to
    `TraceEngine`); what needs values (`bool()`, `.item()`, `.numpy()`, `repr`) is a graph
    break.
    """
    __slots__ = ("_g", "_trace")
    _engine = TraceEngine
    __hash__ = object.__hash__   # __eq__ is elementwise (borrowed below), hashing by identity

    shape = property(lambda self: as_size(self._g.spec.shape))
    dtype = property(lambda self: torch_dtype(self._g.spec.dtype))
    spec = property(lambda self: self._g.spec)
    ndim = property(lambda self: len(self._g.spec.shape))
    _array = property(_Values)

    def __repr__(self):
        _graph_break(self, "print")

    __str__ = __repr__

    def numpy(self):
        _graph_break(self, "numpy")

    tolist = __array__ = numpy

    def item(self):
        _graph_break(self, "item")

    __float__ = __int__ = __index__ = item

    def __bool__(self):
        _graph_break(self, "bool")

    def __setitem__(self, index, value):
        _graph_break(self, "inplace")

    def zero_(self):
        _graph_break(self, "inplace")

    fill_ = zero_

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if create_graph or inputs is not None:
            _graph_break(self, "backward")
        self._trace.log.backward(self, gradient)

    def requires_grad_(self, requires_grad=True):
        _graph_break(self, "requires_grad")

    def detach(self):
        return ops.stop_gradient(self)

    def clone(self, *, memory_format=None):
        format_order("clone", memory_format, self.ndim)
        return ops.cast(self, self.dtype)

    def is_contiguous(self, memory_format=None):
        _graph_break(self, "layout")

    def stride(self, dim=None):
        _graph_break(self, "layout")

    def contiguous(self, memory_format=None):
        """self: a traced value has no layout of its own (a compiled function's results are
        row-major); the format is checked as eager checks it."""
        format_order("contiguous", memory_format, self.ndim)
        return self

    def __reduce__(self):
        raise TypeError("a traced tensor cannot be pickled")


# NOTE: the operators are the graph tensor's (each one an ops.* call, so they bind to the
# tracer's engine); eager's own go through `_binary`, the eager kernel fast path.
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
              "__neg__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Tracer, _name, GraphTensor.__dict__[_name])
# NOTE: torch's reflected forms, as eager's: 2 * t is t.mul(2) (the scalar second, which
# torch's half kernels read in float32) and 2 / t is t.reciprocal() * 2
Tracer.__rmul__ = lambda self, o: ops.mul(self, o)
Tracer.__rtruediv__ = lambda self, o: ops.mul(ops.div(1.0, self), o) \
    if type(o) in (int, float, bool) else ops.div(o, self)
# NOTE: not the graph tensor's == and != (TF1's: identity, a Python bool); eager's, elementwise
Tracer.__eq__ = lambda self, o: ops.eq(self, o)
Tracer.__ne__ = lambda self, o: ops.ne(self, o)


def _torch_operand(name, fn):
    """The operator refusing what eager's refuses (eager.core.foreign): NotImplemented, so
    `t == None` is False and `t + "a"` a TypeError while tracing too; `o / t` is
    t.reciprocal() * o through Python's * protocol, as torch's."""
    def op(self, o):
        if foreign(o):
            return ops.div(1.0, self) * o if name == "__rtruediv__" else NotImplemented
        return fn(self, o)
    op.__name__ = name
    return op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
              "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(Tracer, _name, _torch_operand(_name, Tracer.__dict__[_name]))


def _promoted(op, args):
    """op's operands cast to the dtype PyTorch computes it in (ops.rules.torch_needs_cast, the
    rule eager applies before its kernels), as cast nodes: the graph's shape rules, kernels,
    optimiser and fused loops then see one dtype, the one eager's result has."""
    from dualgrad.eager.factories import default_float
    want = torch_needs_cast(op, [a.spec if isinstance(a, GraphTensor) else a for a in args],
                            default_float())
    if want is None:
        return args
    skip = 1 if op.promote == "where" else 0
    return [GraphEngine.apply(_CAST, [a], {"dtype": want})
            if i >= skip and isinstance(a, GraphTensor) and a.dtype != want else
            as_operand(a, want) if i >= skip else a
            for i, a in enumerate(args)]


def _number_in_opmath(op, args, attrs, wide):
    """op(a, b) with b a scalar (a Python number or a 0-d tensor) read at its own value in
    `wide`, a cast to the half result dtype and then to `wide`, the result cast back once
    (ops.rules.torch_scalar_opmath; eager does the same on arrays)."""
    narrow = torch_result_dtype(args)

    def cast(a, dt):
        return GraphEngine.apply(_CAST, [a], {"dtype": dt}) if a.dtype != dt else a
    a, b = args
    if isinstance(a, GraphTensor):
        a = cast(cast(a, narrow), wide)
    if isinstance(b, GraphTensor):
        b = cast(b, wide)
    return GraphEngine.apply(_CAST, [GraphEngine.apply(op, [a, b], attrs)], {"dtype": narrow})


def active_trace():
    """The compile() trace running in this thread, or None."""
    tr = current_trace()
    return tr if isinstance(tr, Trace) else None


def _is_live(a):
    """A value the trace must read at every call: a tracer, a parameter, or grad-requiring."""
    return isinstance(a, Tensor) and (type(a) is Tracer or a.requires_grad
                                      or isinstance(a, Parameter))


class Trace:
    """One trace in progress: the graph it records, what that graph reads from eager, the
    breaks it met; what a traced training step changes is its `log` (an `EffectsLog`).

    While fn runs it is on this thread's trace stack (`ops.core.tracing`), so ops.bind hands
    it every op call, tracers or not: `self.pos[:T]` or `w * 2` on a parameter involves no
    tracer, and would otherwise run once and be frozen into the graph with today's value.
    It is what eager's protocol `eager.effects.TraceEffects` calls: the members about the
    graph are its own, those about a training step are its log's.
    """
    level = 2   # ops.bind: outranks eager and graph arguments

    def __init__(self, name, params, effects=False):
        self.name = name
        self.params = params
        self.steps = effects      # side effects are recorded (compile) or a graph break (export)
        self.param_names = {id(p): n for n, p in reversed(params)}   # first name wins
        self.graph = graph.Graph()
        self.graph.promote_dtypes = True   # NOTE: eager code's dtypes, not TF1's
        self.captured = {}        # id(eager tensor) -> graph tensor
        # what the graph reads at every call: fed inputs, and constants checked by value
        self.args = []            # [(eager argument, placeholder)] that require grad
        self.live = []            # [(eager tensor, placeholder)] fed with .data at every call
        self.sourced = []         # [(source, placeholder)]: fed source()'s array at every call
        self.randoms = []         # [(placeholder, sample())]: random tensors, drawn per call
        self.frozen = set()       # ids of eager tensors captured as constants
        self.constants = {}       # id -> (eager tensor frozen in, its values): checked per call
        self.modules = {}         # id -> module whose forward ran: its flags are guarded
        self.buffers = set()      # ids of those modules' buffers: inputs, fed at every call
        self.averaged = []        # [(buckets of (name, parameter), find_unused)]: DDP's
        # what it read and wrote, to see what fn changes in place (changed_in_place, aliased)
        self.snapshots = []       # [(eager tensor, copy of its data, where captured)]
        self.assigned = {}        # id(eager tensor) -> (tensor, new value, source): written back
        self.breaks = []
        self.decomposing = 0      # inside an op's `decompose`: its ops are recorded once each
        self.shared = {}          # (op, ids of args, attrs) -> (args, result), see _decompose
        self.log = EffectsLog(self)

    def is_input(self, a):
        """a is read at every call (a placeholder), not frozen: a tracer, a parameter or a
        tensor that requires grad, a touched module's buffer, or a tensor too large to check
        by value at every call."""
        return _is_live(a) or isinstance(a, Tensor) and (
            id(a) in self.buffers or array_of(a).size > CONSTANT_CHECK_MAX)

    def note_constant(self, t):
        """An eager tensor frozen into the graph (or into a value computed while tracing):
        its values are checked at every call, and a call that finds them changed traces
        again (compiled.py), so a global or closure tensor changed in place is never stale."""
        if id(t) not in self.constants:
            self.constants[id(t)] = (t, np.array(array_of(t), copy=True))

    def touch(self, module):
        """module's forward runs in the trace, however fn reached it (a helper, a dict, an
        attribute of another object): its train/eval flag and plain attributes are guarded
        (compiled.py), its buffers are read at every call (load_state_dict is seen)."""
        if id(module) not in self.modules:
            self.modules[id(module)] = module
            self.buffers.update(id(b) for b in module.__dict__.get("_buffers", {}).values()
                                if b is not None)

    def wrap(self, g, requires_grad):
        t = blank(Tracer, requires_grad)
        t._g, t._trace = g, self
        return t

    def apply(self, op, args, attrs):
        if not op.stateful and not any([self.is_input(a) for a in args]):
            for a in args:   # NOTE: constants only: computed now; what it read is guarded
                if isinstance(a, Tensor):
                    self.note_constant(a)
            return bind_args(op, args, attrs)
        if op is _RAND:
            return self._random(args[0], attrs)
        if op.decompose is not None or self.decomposing:
            return self._decompose(op, args, attrs)
        if first_complex(args) is not None:
            raise _no_complex(op)
        lifted = [self.lift(a) for a in args]
        wide = torch_scalar_opmath(op, lifted)
        if wide is None and (op.promote is not None or op.name in FLOATING):
            lifted = _promoted(op, lifted)   # NOTE: FLOATING: exp(int) in the default dtype
        out = GraphEngine.apply(op, lifted, attrs) if wide is None else \
            _number_in_opmath(op, lifted, attrs, wide)
        if out.dtype.kind == "c":   # NOTE: a complex result of real inputs (x.cfloat())
            raise _no_complex(op)
        grad = inexact(out.dtype) and any(
            isinstance(a, Tensor) and a.requires_grad for a in args)
        if grad and not is_grad_enabled():   # no_grad() inside fn: no gradient flows through here
            out, grad = GraphEngine.apply(_STOP, [out], {}), False
        return self.wrap(out, grad)

    def _decompose(self, op, args, attrs):
        """An op with a composite form (`Op.decompose`) is recorded as that composite, whose
        elementwise ops the optimiser fuses. Ops inside composites are recorded once per
        inputs and attrs: two composites that share a sub-expression (lstm_cell_c's and
        lstm_cell_h's sigmoid over the same gates) share its node, so graph.gradients builds
        its gradient once, as for the composite written out by hand. Only elementwise ops:
        the graph is then the one the hand-written composite traced to."""
        if op.decompose is not None:
            self.decomposing += 1
            try:
                return op.decompose(*args, **attrs)
            finally:
                self.decomposing -= 1
        depth, self.decomposing = self.decomposing, 0
        try:
            if op.stateful or op.name not in ELEMENTWISE:   # NOTE: a weight's transpose stays
                return self.apply(op, args, attrs)        # one per use, as written out
            key = (op.name, tuple(map(id, args)), repr(sorted(attrs.items())),
                   is_grad_enabled())
            hit = self.shared.get(key)
            if hit is None:   # NOTE: args are kept with the result, so their ids stay theirs
                hit = self.shared[key] = (args, self.apply(op, args, attrs))
            return hit[1]
        finally:
            self.decomposing = depth

    def _random(self, x, attrs):
        """rand_like becomes a fed input, drawn at each call in trace order: the forward and a
        later gradient run then see the same draw (dropout's mask)."""
        like = np.broadcast_to(np.float32(0), x.shape)
        return self.draw(lambda: _RAND.kernel(like, **attrs), tuple(x.shape),
                         np.dtype(attrs.get("dtype", "float32")))

    def draw(self, sample, shape, dtype):
        """A random tensor (eager.rand, randn, randint, normal_, bernoulli, rand_like, ...):
        a fed input, `sample()` drawn at every call in program order, from the generator as
        it is at that call (eager.generator.drawn)."""
        p = graph.placeholder(dtype, shape, name="random")
        self.randoms.append((p, sample))
        return self.wrap(p, False)

    def lift(self, a):
        if type(a) is Tracer:
            if a._trace is not self:
                raise RuntimeError("a tensor traced in another call of a compiled function was "
                                   "used here (stored in a global or an attribute?)")
            return a._g
        if isinstance(a, Tensor):
            return self.capture(a)
        if isinstance(a, GraphTensor):
            raise TypeError(f"graph tensor '{a.name}' used inside a compiled eager function; "
                            f"compiled functions take eager tensors")
        return a

    def capture(self, t):
        """An eager tensor the function reached without receiving it as an argument."""
        if id(t) in self.log.stepped:
            self.break_here("after_step")
        g = self.captured.get(id(t))
        if g is not None:
            return g
        name = self.param_names.get(id(t), "captured")
        if self.is_input(t):
            g = graph.placeholder(t.dtype, t.shape, name=name)
            self.live.append((t, g))
        else:
            g = graph.constant(array_of(t), name=name)   # a copy, frozen at trace time
            self.frozen.add(id(t))
            self.note_constant(t)
        if self.assigned and any([_overlap(u, t) for u, _, _ in self.assigned.values()]):
            self.aliased()
        self.snapshots.append((t, np.array(array_of(t), copy=True), user_frame()))
        self.captured[id(t)] = g
        return g

    def average_gradients(self, buckets, find_unused=False):
        """DistributedDataParallel's forward, traced, says: these parameters' gradients are
        averaged over the ranks, so the graph does it (one all-reduce node per bucket)."""
        for bucket in buckets:
            for _, p in bucket:
                self.capture(p)     # NOTE: a placeholder even if unused here: it may get one
        self.averaged.append((buckets, find_unused))

    # NOTE: what a training step changes (a .grad, a tensor written in place) is read through
    # the graph: `read` gives a tensor's value at every call, `write` its new value from here
    # on, `gradients` what backward() adds to the leaves' .grad. The log (EffectsLog) records
    # the changes themselves, to be made by every call.
    def read(self, t, source=None):
        """A tracer of eager tensor t's value, read at every call: t itself, or source()."""
        if type(t) is Tracer:
            return t
        if id(t) in self.log.stepped:
            self.break_here("after_step")
        if id(t) in self.frozen:
            _graph_break_at("inplace", "an eager tensor read as a constant and then changed "
                            "in place by the function (a buffer updated under no_grad?), which")
        g = self.captured.get(id(t))
        if g is None:
            g = graph.placeholder(t.dtype, t.shape, name=self.param_names.get(id(t), "state"))
            if source is None:
                self.live.append((t, g))
            else:
                self.sourced.append((source, g))
            self.snapshots.append((t, np.array(array_of(t), copy=True), user_frame()))
            self.captured[id(t)] = g
        return self.wrap(g, False)

    def write(self, t, value, source=None):
        """t's value from here on is `value` (a tracer of its shape, or an array: a fill): its
        graph tensor, which t (source() at a call) is to be written with."""
        g = self.lift(value) if isinstance(value, Tensor) else \
            graph.constant(np.array(value, dtype=t.dtype))
        if tuple(g.spec.shape) != t.shape:
            raise RuntimeError(f"in-place write: output with shape {list(t.shape)} doesn't "
                               f"match the broadcast shape {list(g.spec.shape)} (at "
                               f"{where_str(user_frame())})")
        if g.dtype != t.dtype:
            g = GraphEngine.apply(ops.REGISTRY["cast"], [g], {"dtype": np.dtype(t.dtype)})
        self.read(t, source)   # NOTE: t is fed and written back: live from here on
        for u, _, _ in self.snapshots:
            if u is not t and _overlap(u, t):
                self.aliased()
        self.captured[id(t)] = g
        self.assigned[id(t)] = (t, g, source)
        return g

    def gradients(self, y, gradient=None):
        """[(leaf, graph tensor or None)]: what `y.backward(gradient)` inside fn adds to each
        leaf's .grad (eager's errors, or a graph break where eager's walk would differ)."""
        if not self.steps:
            _graph_break(y, "backward")
        if not y.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have "
                               "a grad_fn")
        if gradient is None and int(np.prod(y.shape)) != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; this "
                               f"output has shape {y.shape}")
        if any(not t.is_leaf for t, _ in self.args):
            _graph_break(y, "backward")   # NOTE: eager's walk goes on past such an argument
        leaves = self.args + [(t, g) for t, g in self.live
                              if t.requires_grad and t.is_leaf]
        if any([_hooked(t, self.averaged) for t, _ in leaves]):
            _graph_break(y, "backward")   # NOTE: hooks see each gradient: eager's walk
        gy = None if gradient is None else [self.lift(gradient)]
        xs = [g for _, g in leaves]
        with tracing(GraphEngine):   # NOTE: graph nodes, built as graph code builds them
            dxs = list(graph.gradients([y._g], xs, grad_ys=gy))
            if self.averaged:   # NOTE: DistributedDataParallel's buckets, averaged in the graph
                at = {id(t): k for k, (t, _) in enumerate(leaves)}
                for buckets, find_unused in self.averaged:
                    for bucket in buckets:
                        average_bucket(dxs, [(n, at[id(p)]) for n, p in bucket], find_unused,
                                       xs)
        return [(t, d) for (t, _), d in zip(leaves, dxs)]

    def break_here(self, kind):
        """A graph break of `kind` (see _BREAKS) at the user's line."""
        _graph_break_at(kind, _BREAKS[kind][0] + ", which")

    @staticmethod
    def aliased():
        _graph_break_at("inplace", "an eager tensor written in place while another that "
                        "shares its memory (a view, .data, its base) is read, which")

    def changed_in_place(self):
        """A GraphBreak if fn changed a captured tensor in place (a replay would not)."""
        for t, before, loc in self.snapshots:
            if array_of(t).shape != before.shape or not np.array_equal(array_of(t), before,
                                                                  equal_nan=True):
                return GraphBreak("an eager tensor used here was changed in place by the "
                                  "function (.data[...] =, zero_(), an optimizer step), which",
                                  "change it outside the compiled function", loc)
        return None

    def undo_changes(self):
        """Put captured tensors back as they were, so the eager run starts where eager would."""
        for t, before, _ in self.snapshots:
            if array_of(t).shape == before.shape and not np.array_equal(array_of(t), before,
                                                                   equal_nan=True):
                array_of(t)[...] = before

    # -- TraceEffects members about a training step: the log's -------------------------------
    def assign(self, t, value, source=None):
        self.log.assign(t, value, source)

    def grad_value(self, leaf):
        return self.log.grad_value(leaf)

    def set_grad_value(self, leaf, value):
        self.log.set_grad_value(leaf, value)

    def zero_grad(self, leaf):
        self.log.zero_grad(leaf)

    def note_grad(self, leaf, how):
        self.log.note_grad(leaf, how)

    def defer_step(self, opt):
        self.log.defer_step(opt)


class EffectsLog:
    """What a traced training step changes besides its results, which every call of the
    compiled function must do again, in program order, with the plan's values.

    `opt.zero_grad(); loss.backward(); opt.step()` inside fn is traced as a training step:
    backward() becomes graph.gradients in the same plan, and what eager would change is
    recorded: a leaf's .grad (its graph value, or None), a tensor written in place (its new
    graph value), an optimizer step (run eagerly after the plan, on the .grad values it
    saw). When fn returns, `effects()` lists them, to be done in that order by every call
    with the plan's results, and `restore()` puts the .grad attributes back as they were.
    What the trace decided by (whether a .grad it read was None) is guarded: a call where
    it differs traces again. A .grad is a new tensor from step to step: it is read through
    its `source` (a function giving the tensor) at every call, not as the object traced.
    The values themselves are the trace's graph tensors (`Trace.read`, `write`, `gradients`).
    """

    def __init__(self, trace):
        self.trace = trace
        self.grads = {}           # id(leaf) -> [leaf, its .grad before the trace, read or set]
        self.guards = []          # [(leaf, whether its .grad was None)]
        self.done = []            # the writes and optimizer steps, in program order: effects()
        self.stepped = set()      # ids of parameters an optimizer step has changed
        self.did_backward = False

    def assign(self, t, value, source=None):
        """t (an eager tensor; source() at a call) is written in place with `value` (a
        tracer of its shape, or an array: a fill)."""
        g = self.trace.write(t, value, source)
        self.done.append(("write", t, None, g) if source is None else
                         ("write", source, "source", g))

    def grad_value(self, leaf):
        """leaf.grad (not None) as a tracer: a .grad from outside fn is read at every call."""
        self.note_grad(leaf, "read")
        return self.trace.read(leaf.grad, lambda: leaf.grad)

    def set_grad_value(self, leaf, value):
        """leaf.grad changed in place to `value` (gradient clipping)."""
        if type(leaf.grad) is Tracer:   # NOTE: a .grad this trace made: a new value
            leaf.grad = value
        else:
            self.assign(leaf.grad, value, lambda: leaf.grad)

    def zero_grad(self, leaf):
        """leaf.grad filled with zeros in place (zero_grad(set_to_none=False))."""
        if type(leaf.grad) is Tracer:   # NOTE: a .grad this trace made: a new value
            leaf.grad = ops.zeros_like(leaf.grad)
        else:
            self.assign(leaf.grad, np.zeros(leaf.grad.shape, leaf.grad.dtype),
                        lambda: leaf.grad)

    def note_grad(self, leaf, how):
        """Remember leaf.grad as it was before the trace. how: "snap" (only that), "read" (the
        trace depends on whether it is None: guarded, unless the trace set it) or "write"."""
        if id(leaf) not in self.grads:
            self.grads[id(leaf)] = [leaf, leaf.grad, False]
        seen = self.grads[id(leaf)]
        if how == "write":
            seen[2] = True
        elif how == "read" and not seen[2]:
            seen[2] = True   # NOTE: guarded once; what the trace sets later is its own
            self.guards.append((leaf, seen[1] is None))

    def defer_step(self, opt):
        """opt.step() inside fn: it runs eagerly, after the plan, at every call (eager's own
        update, in place, with its state), on the .grad values the trace has now. fn must
        not read opt's parameters after it (the plan reads them before the step)."""
        now = []
        for group in opt.param_groups:
            for p in group["params"]:
                self.note_grad(p, "read")
                g = p.grad
                now.append((p, None if g is None else g._g if type(g) is Tracer else KEEP))
                self.stepped.add(id(p))
        self.done.append(("step", opt, now, None))

    def backward(self, y, gradient=None):
        """`y.backward(gradient)` inside fn: the leaves' gradients, accumulated into .grad."""
        tr = self.trace
        for t, d in tr.gradients(y, gradient):
            if d is not None:
                self.note_grad(t, "read")
                d = tr.wrap(d, False)
                cur = t.grad
                t.grad = d if cur is None else tr.read(cur, lambda t=t: t.grad) + d
        self.did_backward = True

    def effects(self):
        """[(kind, target, key, graph tensor)]: what every call does after the plan ran, in
        this order. "write": copy into the tensor's array (key "source": into target()'s);
        "step": set each parameter's .grad as it was at the step (key; KEEP: as the call
        finds it), then run target.step(); "grad": set leaf.grad to its last value (None: to
        None)."""
        out = list(self.done)
        at_step = {}
        for kind, _, now, _ in self.done:
            if kind == "step":
                at_step.update({id(p): g for p, g in now})
        for leaf, before, _ in self.grads.values():
            now = leaf.grad
            if now is not None and type(now) is not Tracer:
                if now is not before:
                    raise GraphBreak("a .grad set to a tensor made outside the function, which",
                                     "set it outside the compiled function", None)
                continue
            g = None if now is None else now._g
            last = at_step.get(id(leaf), KEEP)
            if g is not last and not (g is None and last is KEEP and before is None):
                out.append(("grad", leaf, None, g))
        return out

    def restore(self):
        """Put the .grad attributes the function set back as they were."""
        for leaf, before, _ in self.grads.values():
            leaf.grad = before


# -- a traced function's result: its structure and its tensors -------------------------------
def flatten_out(x, tr, leaves):
    """The result's structure with tensors replaced by ("out", i); leaves get graph tensors."""
    if isinstance(x, Tensor):
        leaves.append((tr.lift(x), x.requires_grad))
        return ("out", len(leaves) - 1)
    if isinstance(x, tuple):
        return ("tuple", type(x), [flatten_out(v, tr, leaves) for v in x])
    if isinstance(x, list):
        return ("list", list, [flatten_out(v, tr, leaves) for v in x])
    if isinstance(x, dict):
        return ("dict", type(x), [(k, flatten_out(v, tr, leaves)) for k, v in x.items()])
    return ("const", x)


def rebuild_out(tree, outs):
    kind = tree[0]
    if kind == "out":
        return outs[tree[1]]
    if kind == "const":
        return tree[1]
    if kind == "dict":
        return tree[1]((k, rebuild_out(v, outs)) for k, v in tree[2])
    items = [rebuild_out(v, outs) for v in tree[2]]
    if kind == "tuple" and hasattr(tree[1], "_fields"):
        return tree[1](*items)
    return tree[1](items)

