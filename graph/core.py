"""Graphs, nodes and symbolic tensors; `GraphEngine`, the engine `ops.bind` hands calls to.

A `Node` is one operation in a `Graph` (TF's `Operation`): its `op` is an `ops.Op` (a
registry primitive, or one of the graph-only ops in `GRAPH_OPS`: placeholder, const,
variable, assign, cond, …), its `inputs` are `Tensor`s, its `attrs` the op's attributes.
A `Tensor` is one output of a node: static `spec` (shape with None dims, dtype), nothing
else. Building an op runs its shape rule at once, so a mismatch with known dims raises
`ShapeError` at the user's line, before any data exists.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None, 3), name="x")
>>> y = graph.matmul(x, np.ones((3, 2), np.float32))
>>> y.shape, y.dtype, y.op.type
(TensorShape([None, 2]), tf.float32, 'matmul')
"""
from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, Spec, fmt_shape, tracing, user_frame, where_str
from dualgrad.ops.rules import DtypeMismatch, strict_dtypes
from dualgrad.ops.composite import current_composite
from dualgrad.ops.dtypes import DTypeBase

from .dtypes import as_dtype, dtype_of, tf1_refused, tf1_types_message
from .shapes import TensorShape, _UNKNOWN_RANK, _UnknownRankShape
from .tf_names import OPERATOR_NAMES

__all__ = ["Graph", "Node", "Tensor", "TensorShape", "GraphEngine", "get_default_graph",
           "reset_default_graph", "name_scope", "control_dependencies", "placeholder",
           "constant", "convert_to_tensor", "GRAPH_OPS", "GraphOp", "graph_op"]


# -- graph-only ops ----------------------------------------------------------------------------
@dataclass(frozen=True)
class GraphOp:
    """A graph-only op (placeholder, variable, cond, ...). `op` carries its name and (for some)
    its gradient rule; `make_kernel(node)` returns `(kernel, stateful)` for the executor (see
    graph/plan.py)."""
    op: ops.Op
    make_kernel: object


GRAPH_OPS: dict[str, GraphOp] = {}


def graph_op(name, make_kernel, vjp=None, **fields) -> ops.Op:
    """Declare a graph-only op (not an arithmetic op: those live in ops/); `fields` are `Op`'s."""
    if name in ops.REGISTRY or name in GRAPH_OPS:
        raise ValueError(f"graph op {name!r} clashes with an existing op")
    op = ops.Op(name, None, None, vjp, **fields)
    GRAPH_OPS[name] = GraphOp(op, make_kernel)
    return op


def op_by_name(name):
    if name in GRAPH_OPS:
        return GRAPH_OPS[name].op
    return ops.REGISTRY.get(name)


# -- nodes and tensors -------------------------------------------------------------------------
class Node:
    """One operation of a graph (TF's `Operation`)."""
    __slots__ = ("graph", "name", "op", "inputs", "attrs", "outputs", "control_inputs", "loc",
                 "built_by", "grad_of", "id", "__weakref__")

    @property
    def type(self):
        return self.op.name

    def run(self, feed_dict=None, session=None):
        """Run this node in `session` (default: the default session), like TF's `op.run()`."""
        _session_or_default(session).run(self, feed_dict)

    def __repr__(self):
        return f"<graph.Node '{self.name}' type={self.type}>"

    def __reduce__(self):
        raise TypeError("graph nodes cannot be pickled; save the graph with graph.save()")


class Tensor:
    """A symbolic value: the output `index` of `node`. Nothing is computed until Session.run."""
    __slots__ = ("node", "index", "spec", "__weakref__")
    __array_priority__ = 1000
    __array_ufunc__ = None   # ndarray + Tensor -> Tensor.__radd__

    def __init__(self, node, index, spec):
        if isinstance(spec.dtype, DTypeBase):   # NOTE: a Spec holds the NumPy dtype (graph/dtypes.py)
            spec = Spec(spec.shape, spec.dtype.dtype, spec.weak)
        self.node, self.index, self.spec = node, index, spec

    # -- what it is --------------------------------------------------------------------------
    @property
    def op(self):
        return self.node

    @property
    def graph(self):
        return self.node.graph

    @property
    def name(self):
        return f"{self.node.name}:{self.index}"

    @property
    def shape(self):
        s = self.spec.shape
        return _UNKNOWN_RANK if s is None else TensorShape(s)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """TF1's `set_shape`: merge `shape` into the static shape (ValueError when they are
        incompatible). A placeholder takes the merged shape, and feeds are checked against
        it; any other tensor's shape comes from its op's rule, so a refinement of it raises
        (NotImplementedError) instead of trusting a claim nothing checks."""
        merged = self.shape.merge_with(shape)
        new = None if merged.ndims is None else tuple(merged)
        if new == self.spec.shape:
            return
        if self.node.type != "placeholder":
            raise NotImplementedError(
                f"set_shape{fmt_shape(new)} on '{self.name}' (op {self.node.type}, shape "
                f"{fmt_shape(self.spec)}): dualgrad refines only placeholders' shapes; "
                f"reshape the tensor to a known shape instead")
        self.spec = Spec(new, self.spec.dtype)
        self.node.attrs["shape"] = new

    @property
    def dtype(self):
        return dtype_of(self.spec.dtype)

    @property
    def ndim(self):
        return self.spec.ndim   # None when the rank is unknown

    def __repr__(self):   # TF's forms: the shape as TF prints it, (None, 3) or <unknown>
        return f"<tf.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    def __str__(self):
        shape = "" if self.spec.shape is None else f", shape={self.shape}"
        return f'Tensor("{self.name}"{shape}, dtype={self.dtype.name})'

    def eval(self, feed_dict=None, session=None):
        """The value in `session` (default: the default session), like TF's `Tensor.eval()`."""
        return _session_or_default(session).run(self, feed_dict)

    # -- no Python truth, length or array for a value that does not exist yet -------------------
    def __bool__(self):
        hint = ""
        if self.node.type in ("eq", "ne"):
            hint = " (graph.equal / graph.not_equal compare elementwise)"
        raise TypeError(
            f"Using a symbolic graph.Tensor ('{self.name}') as a Python bool is not allowed: "
            f"its value exists only inside Session.run. For a data-dependent branch use "
            f"graph.cond(pred, true_fn, false_fn); for an elementwise choice use "
            f"graph.where(cond, x, y){hint}.")

    def __len__(self):
        raise TypeError(f"len() of a symbolic graph.Tensor ('{self.name}', shape "
                        f"{fmt_shape(self.spec)}) is not defined; use t.shape[0]")

    def __iter__(self):
        raise TypeError(f"a symbolic graph.Tensor ('{self.name}') is not iterable; index it "
                        f"(t[i]) or use graph.while_loop")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"cannot convert the symbolic graph.Tensor '{self.name}' to a NumPy "
                        f"array: fetch its value with Session.run")

    def __reduce__(self):
        raise TypeError("graph tensors cannot be pickled; save the graph with graph.save()")

    __hash__ = object.__hash__

    # -- operators ----------------------------------------------------------------------------
    def __add__(self, o):
        return _operator("__add__", ops.add, self, o)

    def __radd__(self, o):
        return _operator("__radd__", ops.add, o, self)

    def __sub__(self, o):
        return _operator("__sub__", ops.sub, self, o)

    def __rsub__(self, o):
        return _operator("__rsub__", ops.sub, o, self)

    def __mul__(self, o):
        return _operator("__mul__", _mul_operator, self, o)

    def __rmul__(self, o):
        return _operator("__rmul__", _mul_operator, o, self)

    def __truediv__(self, o):
        return _operator("__truediv__", truediv, self, o)

    def __rtruediv__(self, o):
        return _operator("__rtruediv__", truediv, o, self)

    def __floordiv__(self, o):   # TF's FloorDiv and FloorMod, as Python's // and %
        return _operator("__floordiv__", ops.floordiv, self, o)

    def __rfloordiv__(self, o):
        return _operator("__rfloordiv__", ops.floordiv, o, self)

    def __mod__(self, o):
        return _operator("__mod__", ops.floormod, self, o)

    def __rmod__(self, o):
        return _operator("__rmod__", ops.floormod, o, self)

    def __pow__(self, o):
        return _operator("__pow__", ops.pow, self, o)

    def __rpow__(self, o):
        return _operator("__rpow__", ops.pow, o, self)

    def __matmul__(self, o):
        return _operator("__matmul__", ops.matmul, self, o)

    def __rmatmul__(self, o):
        return _operator("__rmatmul__", ops.matmul, o, self)

    def __neg__(self):
        return _operator("__neg__", ops.neg, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _operator("__abs__", ops.abs, self)

    # NOTE: TF1's graph mode compares tensors as objects (`x == y` is `x is y`, a Python bool),
    # so `v in tf.trainable_variables()` and tensors as dict keys work; graph.equal and
    # graph.not_equal are the elementwise ops
    def __eq__(self, o):
        return self is o

    def __ne__(self, o):
        return self is not o

    def __lt__(self, o):
        return _operator("__lt__", ops.lt, self, o)

    def __le__(self, o):
        return _operator("__le__", ops.le, self, o)

    def __gt__(self, o):
        return _operator("__gt__", ops.gt, self, o)

    def __ge__(self, o):
        return _operator("__ge__", ops.ge, self, o)

    # NOTE: graph.logical_not / _and / _or are these ops under `named`: the same calls, in the
    # graph's trace
    def __invert__(self):
        with tracing(GraphEngine):
            return _operator("__invert__", ops.logical_not, self)

    def __and__(self, o):
        with tracing(GraphEngine):
            return _operator("__and__", ops.logical_and, self, o)

    def __or__(self, o):
        with tracing(GraphEngine):
            return _operator("__or__", ops.logical_or, self, o)

    def __getitem__(self, index):
        return _operator("__getitem__", ops.getitem, self, index)

    @property
    def T(self):
        return ops.transpose(self, axes=tuple(reversed(range(self.ndim))))


class _TensorsNotVariables(type):
    """What `isinstance(x, tf.Tensor)` asks in TF1: an op's output, not a Variable (TF's
    Variable is no Tensor; dualgrad's Variable builds on Tensor inside the engine, whose own
    checks use `core.Tensor`, so this class answers for the name users see)."""

    def __instancecheck__(cls, obj):
        return cls.__subclasscheck__(type(obj))

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, Tensor) and \
            not getattr(sub, "is_variable_class", False)


class PublicTensor(Tensor, metaclass=_TensorsNotVariables):
    """`graph.Tensor` (tf.Tensor) as users test for it: every symbolic value but a Variable
    (`tf.is_tensor` is True for both, as in TF)."""
    __slots__ = ()


PublicTensor.__name__ = PublicTensor.__qualname__ = "Tensor"


def is_tensor(x) -> bool:
    """tf.is_tensor: whether x is a symbolic value, a Variable included (as TF's)."""
    return isinstance(x, Tensor)


def _numpy_dtypes(attrs):
    """`attrs` with each dtype object (alone or in a list) replaced by its NumPy dtype: what
    kernels, saved graphs and the compiler read (a user's `graph.float32` is a DType, and
    compile() traces eager code whose `torch.float32` is eager's; ops/dtypes.py)."""
    for k, v in attrs.items():
        if isinstance(v, DTypeBase):
            attrs[k] = v.dtype
        elif type(v) in (list, tuple) and any(isinstance(x, DTypeBase) for x in v):
            attrs[k] = type(v)(x.dtype if isinstance(x, DTypeBase) else x for x in v)
    return attrs


# -- graphs ------------------------------------------------------------------------------------
class Graph:
    """A dataflow graph (TF's `tf.Graph`): nodes in creation order, names unique.

    >>> g = Graph()
    >>> with g.as_default():
    ...     c = constant(1.0)
    >>> c.graph is g
    True
    """

    def __init__(self):
        self._nodes: list[Node] = []
        self._by_name: dict[str, Node] = {}
        self._names_in_use: dict[str, int] = {}   # lower-cased name -> next suffix, as TF
        self._tls = threading.local()        # this thread's name scope and control deps
        self._base_scope = ""                # a cond/while body's label scope
        self.variables: list = []            # every Variable, in creation order
        self.version = 0                     # bumped by every new node
        self.outer = None                    # the enclosing graph of a cond/while body
        self.saved_values: dict = {}         # variable values a loaded graph starts with
        self.collections: dict = {}          # name -> list, as tf.add_to_collection
        # NOTE: False: TF1's dtypes (an op on tensors of different dtypes raises TypeError);
        # the compile() tracer's graphs promote as the eager code they record does
        self.promote_dtypes = False

    def __reduce__(self):
        raise TypeError("graphs cannot be pickled; save them with graph.save()")

    def __repr__(self):
        return f"<graph.Graph with {len(self._nodes)} nodes>"

    # -- per-thread building state (as TF1: name scopes and control dependencies) -------------
    @property
    def _scope(self) -> str:
        return getattr(self._tls, "scope", self._base_scope)

    @_scope.setter
    def _scope(self, value):
        self._tls.scope = value

    @property
    def _control(self) -> list:
        c = getattr(self._tls, "control", None)
        if c is None:
            c = self._tls.control = []
        return c

    @_control.setter
    def _control(self, value):
        self._tls.control = value

    # -- default graph -------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Make this the default graph of the current thread inside the block (as TF1, the
        default-graph stack is per thread; a new thread starts at the global default)."""
        stack = _TLS.stack
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    # -- names ---------------------------------------------------------------------------------
    def unique_name(self, name, mark_as_used=True) -> str:
        """`name` under the current scope, suffixed `_1`, `_2`, ... when taken, as TF's
        Graph.unique_name: names are compared without case ('MatMul' after 'matmul' is
        'MatMul_1'), nodes and name scopes share them, each remembers its next suffix."""
        full = self._scope + name
        key = full.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while key in self._names_in_use:   # NOTE: someone may have taken 'name_1'
                key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            full = f"{full}_{i - 1}"
        return full

    def reserve_outside(self, name):
        """Take `name` in the scope around the current one, as TF's functions that build a
        node before entering their own scope (a reduction's 'Const' of all axes)."""
        inner = self._scope
        self._scope = inner[:inner.rstrip("/").rfind("/") + 1]
        try:
            self.unique_name(name)
        finally:
            self._scope = inner

    def name_in_use(self, name) -> bool:
        """True if `name` (any case) is a node's or a name scope's, or was reserved."""
        return name.lower() in self._names_in_use

    def mark_name_used(self, name):
        """Reserve `name` as taken (an imported node's name)."""
        key = name.lower()
        self._names_in_use[key] = max(self._names_in_use.get(key, 0), 1)

    @contextlib.contextmanager
    def name_scope(self, name):
        """Prefix node names with `name/`; a scope re-entered gets a fresh name (`dense_1/`).
        A name ending in '/' is used as is (absolute); None or '' resets to the top level."""
        old = self._scope
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name
        else:
            new = self.unique_name(name) + "/"
        self._scope = new
        try:
            yield new
        finally:
            self._scope = old

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Nodes built inside run only after `control_inputs` (nodes or tensors) ran."""
        if control_inputs is None:
            saved, self._control = self._control, []
            try:
                yield
            finally:
                self._control = saved
            return
        nodes = [c.node if isinstance(c, Tensor) else c for c in control_inputs]
        self._control.append(nodes)
        try:
            yield
        finally:
            self._control.pop()

    # -- nodes ---------------------------------------------------------------------------------
    def create_node(self, op, inputs, attrs, specs, name=None, *, exact_name=False, loc=None,
                    grad_of=None, control_inputs=()) -> Node:
        node = Node()
        node.graph, node.op, node.inputs = self, op, tuple(inputs)
        node.attrs = _numpy_dtypes(attrs) if attrs else attrs
        if exact_name:  # a name reserved by unique_name / name_scope, or read from a file
            if name in self._by_name:
                raise ValueError(f"duplicate node name {name!r}")
            self.mark_name_used(name)
        else:
            name = self.unique_name(name or op.tf_name)
        node.name = name
        node.loc = loc if loc is not None else user_frame()
        if grad_of is None and _TLS.grad_of:
            grad_of = _TLS.grad_of[-1]
        node.grad_of = grad_of
        node.built_by = current_composite()   # e.g. 'cross_entropy' for its inner mul
        deps = list(control_inputs) + [n for group in self._control for n in group]
        node.control_inputs = tuple(deps)
        node.id = len(self._nodes)
        node.outputs = tuple(Tensor(node, i, s) for i, s in enumerate(specs))
        self._nodes.append(node)
        self._by_name[name] = node
        self.version += 1
        return node

    def rename(self, node, new_name):
        """Give `node` a reserved name (used by the `name=` argument of op functions); its old
        name stays taken, as TF never gives a name twice."""
        del self._by_name[node.name]
        node.name = new_name
        self.mark_name_used(new_name)
        self._by_name[new_name] = node

    def get_operations(self) -> list[Node]:
        return list(self._nodes)

    def get_operation_by_name(self, name) -> Node:
        from .errors import NotFoundError
        try:
            return self._by_name[name]
        except KeyError:
            raise NotFoundError(f"the graph has no node named {name!r}") from None

    def get_tensor_by_name(self, name) -> Tensor:
        from .errors import NotFoundError
        m = re.fullmatch(r"(.+):(\d+)", name)
        if m is None:
            raise ValueError(f"a tensor name looks like 'node:0', got {name!r} (that would "
                             f"name a node: use get_operation_by_name)")
        node = self.get_operation_by_name(m.group(1))
        i = int(m.group(2))
        if i >= len(node.outputs):
            raise NotFoundError(f"node {node.name!r} has {len(node.outputs)} outputs, no :{i}")
        return node.outputs[i]

    def as_graph_def(self, from_version=None, add_shapes=False):
        """This graph as TF's GraphDef (graph/graph_def_export.py says how each node is
        written); `GraphDef.SerializeToString()` gives the bytes of a `.pb` file."""
        from .graph_def_export import graph_def_of
        if from_version is not None or add_shapes:
            raise NotImplementedError("Graph.as_graph_def: from_version and add_shapes are "
                                      "not supported")
        return graph_def_of(self._nodes)

    def is_enclosed_by(self, other) -> bool:
        """True if this graph is a cond/while body nested (at any depth) inside `other`."""
        g = self.outer
        while g is not None:
            if g is other:
                return True
            g = g.outer
        return False

    # -- collections (TF1's tf.add_to_collection / tf.get_collection) ---------------------
    def add_to_collection(self, name, value):
        self.collections.setdefault(name, []).append(value)

    def get_collection(self, name, scope=None):
        """A copy of the list stored under `name` (empty if none); with `scope`, only the
        items whose name matches it from the start (re.match), as TF1. The variable keys
        are kept by the variables themselves: GLOBAL_VARIABLES, TRAINABLE_VARIABLES."""
        if name == GraphKeys.GLOBAL_VARIABLES:
            items = self.global_variables()
        elif name == GraphKeys.TRAINABLE_VARIABLES:
            items = self.trainable_variables()
        else:
            items = list(self.collections.get(name, ()))
        if scope is None:
            return items
        return [x for x in items if re.match(scope, getattr(x, "name", "") or "")]

    def global_variables(self):
        """Every Variable but those created outside GLOBAL_VARIABLES (metrics' locals)."""
        skip = {id(v) for v in self.collections.get(NON_GLOBAL, ())}
        return [v for v in self.variables if id(v) not in skip]

    def capture(self, t):  # a plain graph captures nothing; bodies override (control_flow.py)
        raise ValueError(f"tensor '{t.name}' belongs to another graph")

    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]


class _ThreadState(threading.local):
    def __init__(self):
        self.stack: list[Graph] = []      # `with g.as_default()` blocks of this thread
        self.grad_of: list[Node] = []     # the forward node whose gradient rule is being built
        self.sessions: list = []          # `with Session() as s:` blocks (graph/session.py)
        self.calls: list[str] = []        # name scopes of the graph functions being built


_TLS = _ThreadState()
NON_GLOBAL = "_non_global_variables"   # Variables whose `collections` left out the global one
_GLOBAL = [Graph()]


def get_default_graph() -> Graph:
    stack = _TLS.stack
    return stack[-1] if stack else _GLOBAL[0]


# NOTE: the default-session stack lives here, beside the default graph's (as TF's ops.py keeps
# it), so that Tensor.eval, Operation.run and Variable.load reach a session without importing
# graph/session.py, which imports this module
def default_sessions() -> list:
    """This thread's stack of default sessions (as TF1, per thread); Session pushes on it."""
    return _TLS.sessions


def get_default_session():
    stack = _TLS.sessions
    return stack[-1] if stack else None


def _session_or_default(session):
    s = session or get_default_session()
    if s is None:
        raise ValueError("no session given and no default session: use `with graph.Session()"
                         " as sess:` or pass session=")
    return s


class GraphKeys:
    """Standard collection names, as tf.GraphKeys."""
    GLOBAL_VARIABLES = VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    METRIC_VARIABLES = "metric_variables"
    UPDATE_OPS = "update_ops"   # layers.batch_normalization's moving-average assigns
    SUMMARIES = "summaries"     # summary.scalar / summary.histogram ops, for merge_all
    LOSSES = "losses"           # every graph.losses loss, for losses.get_total_loss
    REGULARIZATION_LOSSES = "regularization_losses"
    WEIGHTS = "weights"
    QUEUE_RUNNERS = "queue_runners"   # train.QueueRunner objects, for start_queue_runners
    TABLE_INITIALIZERS = "table_initializer"   # lookup tables' initializers (tables_initializer)


def add_to_collection(name, value):
    """Add `value` to the default graph's collection `name`."""
    get_default_graph().add_to_collection(name, value)


def get_collection(key, scope=None):
    """The default graph's collection `key`, e.g. graph.GraphKeys.UPDATE_OPS (with `scope`,
    the items whose name re.match-es it)."""
    return get_default_graph().get_collection(key, scope)


def reset_default_graph():
    """Start a fresh global default graph (not allowed inside `with g.as_default()`)."""
    if _TLS.stack:
        raise AssertionError("reset_default_graph() was called inside a `with g.as_default()` "
                             "block or a cond/while_loop body; leave the block first")
    _GLOBAL[0] = Graph()


def name_scope(name, default_name=None, values=None):
    """`with graph.name_scope("dense"):` prefixes names of the nodes built inside; as in
    TF1, `values` (tensors) pick their graph, and `default_name` is used when name is None."""
    tensors = [v for v in (values or ()) if isinstance(v, Tensor)]
    g = _graph_of(tensors) if tensors else get_default_graph()
    return g.name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


@contextlib.contextmanager
def gradient_of(node):
    """Tag nodes built inside as gradient nodes of `node` (backprop's vjp_context)."""
    grad_of = _TLS.grad_of
    grad_of.append(node)
    try:
        yield
    finally:
        grad_of.pop()


# -- the engine ------------------------------------------------------------------------------
def _is_weak(a) -> bool:
    return isinstance(a, (bool, int, float)) and not isinstance(a, np.generic)


def _refuse_foreign(a):
    """Another engine's tensor (eager, a compile() tracer) is refused, never frozen into the
    graph as a constant of today's value."""
    if getattr(a, "_engine", None) not in (None, GraphEngine):
        raise TypeError(f"a {type(a).__module__}.{type(a).__name__} cannot be an input of "
                        f"a graph op (graph ops take graph tensors, arrays and numbers); "
                        f"convert it with np.asarray or graph.constant")


def _graph_of(args) -> Graph:
    """The graph an op on `args` is built in: the default graph when every input lives in it
    or in a graph enclosing it (a cond/while body captures those), else the inputs' graph."""
    graphs = []
    for a in args:
        if isinstance(a, Tensor):
            if all(a.graph is not g for g in graphs):
                graphs.append(a.graph)
        else:
            _refuse_foreign(a)
    dflt = get_default_graph()
    if all(g is dflt or dflt.is_enclosed_by(g) for g in graphs):
        return dflt
    if len(graphs) == 1:
        return graphs[0]
    names = [next(a.name for a in args if isinstance(a, Tensor) and a.graph is g)
             for g in graphs]
    raise ValueError(f"tensors {', '.join(repr(n) for n in names)} belong to different graphs "
                     f"and cannot be used in one op")


def python_array(value):
    """Python data (a number, nested lists or tuples of numbers) as TF1's convert_to_tensor
    makes it when no dtype is asked: floats float32, ints int32 (int64 when a value does not
    fit in int32), bools bool. NumPy data keeps its dtype, as in TF."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype == np.int64 and (arr.size == 0 or
                                  (arr.min() >= -2 ** 31 and arr.max() < 2 ** 31)):
        return arr.astype(np.int32)
    return arr


def _is_python_data(a) -> bool:
    """A list or tuple of numbers (nested): what TF converts as Python data."""
    return isinstance(a, (list, tuple)) and not any(isinstance(v, Tensor) for v in _flat(a))


def _flat(a):
    for v in a:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _lift(g, a, args) -> Tensor:
    """An op argument as a tensor of graph g: captured, or a constant node."""
    if isinstance(a, Tensor):
        return a if a.graph is g else g.capture(a)
    if _is_weak(a):
        others = [t.dtype for t in args if isinstance(t, Tensor)]
        if not others:      # NOTE: no tensor to adapt to: TF's dtype, and no longer weak
            return _const_node(g, python_array(a))
        return _const_node(g, np.asarray(a, dtype=np.result_type(*others, a)), weak=a)
    if _is_python_data(a):
        return _const_node(g, python_array(a))
    return _const_node(g, np.array(a))   # NOTE: a copy: the graph owns its constants


def scoped_call(g, name, fn, *args, leaf=None, **kw):
    """fn(*args, **kw) with its nodes under the name scope `name/` and its result, when built
    there, named `name` itself: TF's way of naming what a Python function builds
    (`tf.nn.l2_normalize` is 'l2_normalize', its parts 'l2_normalize/Square', ...). With
    `leaf`, the result is `name/leaf`, as TF's functions that return their scope's last op
    (`tf.nn.dropout`: 'dropout/SelectV2')."""
    with g.name_scope(name) as scope:
        _TLS.calls.append(scope)
        try:
            out = fn(*args, **kw)
        finally:
            _TLS.calls.pop()
        if isinstance(out, Tensor) and out.graph is g and out.node.name.startswith(scope):
            if not leaf:
                g.rename(out.node, scope[:-1])
            elif out.node.name != scope + leaf:
                g.rename(out.node, g.unique_name(leaf))
    return out


def _building(g, what):
    """The name of the node being built, for errors: the graph function's own name when it is
    being built ('dense/MatMul'), else the name the op would take."""
    if _TLS.calls and _TLS.calls[-1] == g._scope:
        return g._scope[:-1]
    op = ops.REGISTRY.get(what)
    return g._scope + (what if op is None else op.tf_name)


def _operator(method, fn, *args):
    """A Tensor operator as TF builds it: its nodes named as TF's (tf_names.OPERATOR_NAMES)."""
    if any(getattr(a, "_engine", None) not in (None, GraphEngine) for a in args):
        return fn(*args)   # NOTE: another engine's tensor (compile()'s tracer) takes the call
    return scoped_call(_graph_of(args), OPERATOR_NAMES[method], fn, *args)


def _build(g, op, inputs, attrs, name=None):
    strict = not _root(g).promote_dtypes
    if strict:
        _check_tf1_types(g, op.name, inputs, op.name in ops.core.FLOATING)
    try:
        with strict_dtypes(strict):
            spec = ops.infer_spec(op, [t.spec for t in inputs], attrs)
    except ShapeError as e:
        raise _at_user_line(e, g, op.name, inputs) from None
    except DtypeMismatch as e:
        raise _dtype_error(e, g, op.name, inputs) from None
    return g.create_node(op, inputs, attrs, [spec], name).outputs[0]


def _mul_operator(x, y):
    """x * y; of two bool tensors, their logical and, as TF's `*` (tf.multiply refuses bools)."""
    if all(isinstance(t, Tensor) and t.dtype.kind == "b" for t in (x, y)):
        return ops.logical_and(x, y)
    return ops.mul(x, y)


def truediv(x, y):
    """x / y as TF1's truediv: integer tensors are divided as float32 when 8 or 16 bits wide,
    as float64 when 32 or 64 (NumPy would give float64 for every width)."""
    ints = [t for t in (x, y) if isinstance(t, Tensor) and t.dtype.kind in "iu"]
    if ints and ints[0].dtype.itemsize <= 2:
        x, y = (ops.cast(t, np.float32) if isinstance(t, Tensor) else t for t in (x, y))
    return ops.div(x, y)


def _check_tf1_types(g, name, inputs, floating=False):
    """TF1's build-time TypeError for a dtype the op is not defined for (graph/dtypes.py)."""
    bad = tf1_refused(name, [t.dtype for t in inputs], floating)
    if bad is not None:
        loc = user_frame()
        err = TypeError(f"{tf1_types_message(name, *bad)} "
                        f"(at {where_str(loc)}, building node '{_building(g, name)}')"
                        f"{_declared(inputs, loc)}")
        err.location = loc
        raise err


def check_tf1_types(name, *tensors):
    """For graph functions TF1 defines for some dtypes only (`nn.softmax`, `nn.dropout`):
    TF1's TypeError at the user's line when an input's dtype is not one of them."""
    ts = [t for t in tensors if isinstance(t, Tensor)]
    if ts and not _root(ts[0].graph).promote_dtypes:
        _check_tf1_types(ts[0].graph, name, ts)


def _root(g):
    while g.outer is not None:
        g = g.outer
    return g


def _dtype_error(e, g, what, inputs):
    """TF1's build-time TypeError for inputs of different dtypes, naming them and the line."""
    named = [f"'{t.name}' ({t.dtype.name})" for t in inputs
             if t.spec.weak is None and any(t.spec is s for s in e.specs)]
    loc = user_frame()
    err = TypeError(f"{what}: {e}{': inputs ' + ' and '.join(named) if len(named) > 1 else ''}"
                    f" (at {where_str(loc)}, building node '{_building(g, what)}'). TF1 graphs do "
                    f"not convert between tensor dtypes: cast one input with graph.cast(x, "
                    f"dtype){_declared(inputs, loc)}")
    err.location = loc
    return err


def _adapt_arrays(op, args, attrs):
    """NumPy arrays and scalars among `args` take the dtype of the tensors they are combined
    with, as TF1 converts a non-tensor operand to the other operand's dtype: only where NumPy
    casts within a kind (float64 -> float32, int -> float), never float -> int."""
    specs = [a.spec if isinstance(a, Tensor) else ops.core.spec_of(a) for a in args]
    is_array = [isinstance(a, (np.ndarray, np.generic)) for a in args]
    for _ in range(sum(is_array)):
        try:
            with strict_dtypes(), ops.core.quiet_broadcast():   # NOTE: _build warns
                ops.infer_spec(op, specs, attrs)
            return args
        except DtypeMismatch as e:
            if not _retype(e, args, specs, is_array):
                return args
        except ShapeError:
            return args
    return args


def _retype(e, args, specs, is_array):
    at = {id(s): k for k, s in enumerate(specs)}
    ks = [at.get(id(s)) for s in e.specs]
    fixed = {s.dtype for s, k in zip(e.specs, ks)
             if s.weak is None and (k is None or not is_array[k])}
    if len(fixed) != 1:
        return False
    want, changed = fixed.pop(), False
    for s, k in zip(e.specs, ks):
        if k is None or not is_array[k] or s.dtype == want:
            continue
        cast = cast_within(np.asarray(args[k]), want)
        if cast is not None:
            args[k], specs[k], changed = cast, Spec(cast.shape, want), True
    return changed


def cast_within(arr, want):
    """arr as dtype `want` where TF1 converts a non-tensor operand so: within a kind or int to
    float (NumPy's same_kind), never out of an integer's range (that is left to raise, never
    wrapped around); None where it does not."""
    if not np.can_cast(arr.dtype, want, "same_kind"):
        return None
    cast = arr.astype(want)
    return None if want.kind in "iu" and not np.array_equal(cast, arr) else cast


def _at_user_line(e, g, what, inputs=()):
    loc = user_frame()
    extra = f" (at {where_str(loc)}, building node '{_building(g, what)}'"
    if _TLS.grad_of:
        fwd = _TLS.grad_of[-1]
        extra += (f", the gradient of '{fwd.name}' (op {fwd.type}) defined at "
                  f"{where_str(fwd.loc)}")
    err = ShapeError(f"{e}{extra}){_declared(inputs, loc)}")
    err.location = loc
    return err


def _declared(inputs, loc) -> str:
    """Where the Variables and placeholders among `inputs` were declared, when elsewhere:
    a wrong shape is usually written there (`Variable(random_normal((64, 10)))`)."""
    out = ""
    for t in inputs:
        n = t.node
        if n.type in ("variable", "placeholder") and n.loc != loc and n.loc is not None:
            out += (f"\n  input '{n.name}' ({n.type} {fmt_shape(t.spec)}) defined at "
                    f"{where_str(n.loc)}")
    return out


class GraphEngine:
    """What `ops.bind` calls for graph tensors: shape rule now, a new node, no arithmetic."""
    level = 1   # ops.bind: wins over eager (0); the compiler's tracer (2) wins over it

    @staticmethod
    def apply(op, args, attrs):
        g = _graph_of(args)
        if args and not any(isinstance(a, Tensor) for a in args):
            # NOTE: as TF's op builder: with no tensor among the inputs, the first is
            # converted with TF's dtype for Python data, and the others adapt to it
            args = [_lift(g, args[0], ()), *args[1:]]
        if any(_is_python_data(a) for a in args):   # NOTE: as TF, a list is converted first
            args = [python_array(a) if _is_python_data(a) else a for a in args]
        if not _root(g).promote_dtypes and any(isinstance(a, (np.ndarray, np.generic))
                                               for a in args):
            args = _adapt_arrays(op, list(args), attrs)
        inputs = [_lift(g, a, args) for a in args]
        return _build(g, op, inputs, attrs)


Tensor._engine = GraphEngine


# -- placeholders and constants ---------------------------------------------------------------
def _const_kernel(node):
    value = node.attrs["value"]
    return (lambda: value), False


def _placeholder_kernel(node):
    if "default" in node.attrs:   # placeholder_with_default: the value when not fed
        default = node.attrs["default"]
        return (lambda: default), False

    def unfed():
        from .errors import InvalidArgumentError, describe
        raise InvalidArgumentError(f"You must feed a value for placeholder {describe(node)}",
                                   node=node)
    return unfed, False


CONST = graph_op("const", _const_kernel)
PLACEHOLDER = graph_op("placeholder", _placeholder_kernel)


def _const_node(g, value, weak=None, name=None):
    value.flags.writeable = False   # NOTE: kernels and users get it, nobody may change it
    spec = Spec(value.shape, value.dtype, weak=weak)
    return g.create_node(CONST, (), {"value": value}, [spec], name or "Const").outputs[0]


def _norm_shape(shape):
    if shape is None or isinstance(shape, _UnknownRankShape):
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return tuple(None if d is None or d == -1 else int(d) for d in shape)


def placeholder(dtype, shape=None, name=None) -> Tensor:
    """A value fed at run time: `placeholder(graph.float32, (None, 784), name="x")`; with no
    shape, any rank may be fed (the shape rules then infer what they can)."""
    dt, shape = as_dtype(dtype), _norm_shape(shape)
    g = get_default_graph()
    node = g.create_node(PLACEHOLDER, (), {"dtype": dt.name, "shape": shape}, [Spec(shape, dt)],
                         name or "Placeholder")
    return node.outputs[0]


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    """A constant: `constant([1, 2], graph.float32)`; a scalar with `shape` fills it.
    Python data takes TF's dtypes (`python_array`: floats float32, ints int32 or int64 when
    too large for it); NumPy arrays keep theirs."""
    if isinstance(value, Tensor):
        raise TypeError(f"constant() needs a value, got the symbolic tensor '{value.name}'")
    if dtype is None and not isinstance(value, (np.ndarray, np.generic)):
        arr = python_array(value)
    else:
        arr = np.asarray(value, dtype=None if dtype is None else as_dtype(dtype))
    if arr.dtype.kind in "US":   # NOTE: TF's strings are bytes: "abc" is b"abc", as in TF
        arr = np.array([v.encode() if isinstance(v, str) else bytes(v) for v in arr.ravel()],
                       dtype=object).reshape(arr.shape)
    as_dtype(arr.dtype)
    if shape is not None:
        shape = tuple(int(d) for d in _norm_shape(shape))
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif arr.shape != shape:
            arr = arr.reshape(shape)
    return _const_node(get_default_graph(), np.array(arr), name=name or "Const")


def convert_n_to_tensor(values) -> list:
    """A list input (concat's, stack's) as tensors of one dtype, as TF converts it: Python
    data and arrays take the first tensor's dtype, or, with no tensor among them, the first
    one's (python_array)."""
    want = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    out = []
    for v in values:
        if not isinstance(v, Tensor):
            v = as_input(v, want)
            want = v.dtype if want is None else want
        out.append(v)
    return out


def as_input(value, want=None) -> Tensor:
    """Python data or an array as a constant input: TF's dtype for it (python_array), cast to
    `want` (the dtype of the tensors it is combined with) where TF converts it so: within a
    kind or int to float, never from bool, never out of an integer's range."""
    _refuse_foreign(value)
    arr = python_array(value)
    if want is not None and arr.dtype != want and arr.dtype.kind != "b":
        cast = cast_within(arr, want)
        arr = arr if cast is None else cast
    return constant(arr)


def convert_to_tensor(value, dtype=None, name=None) -> Tensor:
    """A tensor as is (checking dtype), anything else as a constant."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != as_dtype(dtype):
            raise TypeError(f"tensor '{value.name}' has dtype {value.dtype.name}, expected "
                            f"{as_dtype(dtype)}")
        return value
    _refuse_foreign(value)
    return constant(value, dtype=dtype, name=name)

