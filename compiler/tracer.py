"""The compile() tracer: eager tensors with a static shape and no values, recording ops.

A `Trace` is an interpreter on this thread's trace stack (`ops.core.tracing`): while the
traced function runs, `ops.bind` hands it every op call, and it records the op into its
`graph.Graph` through `GraphEngine`. The function's tensors are `Tracer`s, eager Tensors
whose methods work unchanged; what needs a value in Python (`bool(t)`, `.item()`,
`.numpy()`, `print(t)`) raises `GraphBreak`, naming the user's line. `compile()`
(compiled.py) and `export()` (export.py) run functions under a `Trace`.

>>> from dualgrad import eager, graph, ops
>>> tr = Trace("f", params=[])
>>> with tr.graph.as_default(), ops.core.tracing(tr):
...     x = tr.wrap(graph.placeholder("float32", (2, 3)), requires_grad=False)
...     y = (x * 2).sum(1)
>>> type(y).__name__, y.shape, [n.op.name for n in tr.graph.get_operations()][-2:]
('Tracer', (2,), ['mul', 'sum'])
"""
from __future__ import annotations

import numpy as np

from dualgrad import graph
from dualgrad import ops
from dualgrad.eager import is_grad_enabled
from dualgrad.eager.nn import Parameter
from dualgrad.eager.core import Tensor
from dualgrad.graph.core import GraphEngine, Tensor as GraphTensor
from dualgrad.ops.core import ELEMENTWISE, bind_args, current_trace, user_frame, where_str

__all__ = ["Trace", "Tracer", "TraceEngine", "GraphBreak", "active_trace", "flatten_out",
           "rebuild_out"]

_STOP = ops.REGISTRY["stop_gradient"]
_RAND = ops.REGISTRY["rand_like"]
_new = object.__new__


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
    "backward": ("backward() called inside the compiled function",
                 "return the loss and call .backward() on the result"),
    "requires_grad": ("requires_grad_() on a traced tensor",
                      "pass the tensor in with requires_grad=True"),
}


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
    dtype = property(lambda self: self._t.dtype)
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


class Tracer(Tensor):
    """An eager Tensor with a static spec and no values, recording ops into a graph.

    The eager Tensor's methods work on it unchanged (they call ops.*, which bind hands to
    `TraceEngine`); what needs values (`bool()`, `.item()`, `.numpy()`, `repr`) is a graph
    break.
    """
    __slots__ = ("_g", "_trace")
    _engine = TraceEngine
    __hash__ = object.__hash__   # __eq__ is elementwise (borrowed below), hashing by identity

    shape = property(lambda self: tuple(self._g.spec.shape))
    dtype = property(lambda self: self._g.spec.dtype)
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

    def backward(self, *args, **kwargs):
        _graph_break(self, "backward")

    def requires_grad_(self, requires_grad=True):
        _graph_break(self, "requires_grad")

    def detach(self):
        return ops.stop_gradient(self)

    def clone(self):
        return ops.cast(self, self.dtype)

    def any(self):
        return ops.gt(ops.sum(ops.cast(ops.ne(self, 0), "int64")), 0)

    def all(self):
        return ops.eq(ops.sum(ops.cast(ops.eq(self, 0), "int64")), 0)

    def __reduce__(self):
        raise TypeError("a traced tensor cannot be pickled")


# NOTE: the operators are the graph tensor's (each one an ops.* call, so they bind to the
# tracer's engine); eager's own go through `_binary`, the eager kernel fast path.
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__",
              "__neg__", "__abs__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Tracer, _name, GraphTensor.__dict__[_name])


def active_trace():
    """The compile() trace running in this thread, or None."""
    tr = current_trace()
    return tr if isinstance(tr, Trace) else None


def _is_live(a):
    """A value the trace must read at every call: a tracer, a parameter, or grad-requiring."""
    return isinstance(a, Tensor) and (type(a) is Tracer or a.requires_grad
                                      or isinstance(a, Parameter))


class Trace:
    """One trace in progress: its graph, what it captured, the breaks it met.

    While fn runs it is on this thread's trace stack (`ops.core.tracing`), so ops.bind hands
    it every op call, tracers or not: `self.pos[:T]` or `w * 2` on a parameter involves no
    tracer, and would otherwise run once and be frozen into the graph with today's value.
    """
    level = 2   # ops.bind: outranks eager and graph arguments

    def __init__(self, name, params):
        self.name = name
        self.param_names = {id(p): n for n, p in reversed(params)}   # first name wins
        self.graph = graph.Graph()
        self.graph.promote_dtypes = True   # NOTE: eager code's dtypes, not TF1's
        self.captured = {}        # id(eager tensor) -> graph tensor
        self.live = []            # [(eager tensor, placeholder)] fed with .data at every call
        self.snapshots = []       # [(eager tensor, copy of its data, where captured)]
        self.randoms = []         # [(placeholder, shape, attrs)]: rand_like, drawn per call
        self.breaks = []
        self.averaged = []        # [(buckets of (name, parameter), find_unused)]: see below
        self.decomposing = 0      # inside an op's `decompose`: its ops are recorded once each
        self.shared = {}          # (op, ids of args, attrs) -> (args, result), see _decompose

    def wrap(self, g, requires_grad):
        t = _new(Tracer)
        t._g, t._trace, t.requires_grad, t.grad, t._node = g, self, requires_grad, None, None
        return t

    def apply(self, op, args, attrs):
        if not op.stateful and not any([_is_live(a) for a in args]):
            return bind_args(op, args, attrs)   # constants only: frozen, like its inputs
        if op is _RAND:
            return self._random(args[0], attrs)
        if op.decompose is not None or self.decomposing:
            return self._decompose(op, args, attrs)
        out = GraphEngine.apply(op, [self.lift(a) for a in args], attrs)
        grad = out.dtype.kind in "fc" and any(
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
        p = graph.placeholder(attrs.get("dtype", "float32"), x.shape, name="random")
        self.randoms.append((p, np.broadcast_to(np.float32(0), x.shape), attrs))
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
        g = self.captured.get(id(t))
        if g is not None:
            return g
        name = self.param_names.get(id(t), "captured")
        if _is_live(t):
            g = graph.placeholder(t.dtype, t.shape, name=name)
            self.live.append((t, g))
        else:
            g = graph.constant(t._array, name=name)   # a copy, frozen at trace time
        self.snapshots.append((t, np.array(t._array, copy=True), user_frame()))
        self.captured[id(t)] = g
        return g

    def average_gradients(self, buckets, find_unused=False):
        """DistributedDataParallel's forward, traced, says: these parameters' gradients are
        averaged over the ranks, so the graph does it (one all-reduce node per bucket)."""
        for bucket in buckets:
            for _, p in bucket:
                self.capture(p)     # NOTE: a placeholder even if unused here: it may get one
        self.averaged.append((buckets, find_unused))

    def changed_in_place(self):
        """A GraphBreak if fn changed a captured tensor in place (a replay would not)."""
        for t, before, loc in self.snapshots:
            if t._array.shape != before.shape or not np.array_equal(t._array, before,
                                                                  equal_nan=True):
                return GraphBreak("an eager tensor used here was changed in place by the "
                                  "function (.data[...] =, zero_(), an optimizer step), which",
                                  "change it outside the compiled function", loc)
        return None

    def undo_changes(self):
        """Put captured tensors back as they were, so the eager run starts where eager would."""
        for t, before, _ in self.snapshots:
            if t._array.shape == before.shape and not np.array_equal(t._array, before,
                                                                   equal_nan=True):
                t._array[...] = before



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

