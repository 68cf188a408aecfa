"""Variables: state that lives in a Session and survives across `run` calls.

A `Variable` is a tensor (reading it gives its current value) whose node is of kind
`variable`. Its value is set by running an assign node: `v.initializer` (built from
`initial_value`), `v.assign(x)`, `v.assign_add(x)`. Within one `run`, every read of a
variable sees the value it had when the run started (a read node runs once per run, before
any assign built after it).

>>> import numpy as np
>>> from dualgrad import graph
>>> v = graph.Variable(np.zeros(2, np.float32), name="v")
>>> step = v.assign_add(np.ones(2, np.float32))
>>> with graph.Session() as s:
...     s.run(graph.global_variables_initializer())
...     _ = s.run(step); _ = s.run(step)
...     s.run(v)
array([2., 2.], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, Spec, fmt_shape, located, where_str

from .core import (NON_GLOBAL, GraphKeys, Tensor, _graph_of, _lift, _session_or_default,
                   check_tf1_types, get_default_graph, graph_op, constant, _at_user_line)
from .array_ops import identity
from .checks import Assert
from .control_flow import group
from .dtypes import as_dtype
from .errors import FailedPreconditionError, InvalidArgumentError, OutOfRangeError, describe
from .math_ops import reduce_all
from .naming import named

__all__ = ["Variable", "global_variables_initializer", "variables_initializer",
           "global_variables", "trainable_variables", "assign", "assign_add", "assign_sub",
           "local_variables", "local_variables_initializer", "count_up_to",
           "is_variable_initialized", "report_uninitialized_variables",
           "assert_variables_initialized"]


# -- node kinds ------------------------------------------------------------------------------
def _variable_kernel(node):
    name = node.name

    def read(state):
        try:
            return state.variables[name]
        except KeyError:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized value '{name}' (Variable defined at "
                f"{where_str(node.loc)}); run graph.global_variables_initializer() (local "
                f"variables: local_variables_initializer(); or '{name}.initializer') in this "
                f"session first", node=node) from None
    read.reads_variable = name   # NOTE: generated plans (graph/planfn.py) inline the read
    return read, True


def _check_assign(node, value):
    spec = node.outputs[0].spec
    if np.shape(value) != spec.shape:
        raise InvalidArgumentError(
            f"assign: cannot assign a value of shape {fmt_shape(np.shape(value))} to variable "
            f"'{node.attrs['var']}' of shape {fmt_shape(spec.shape)}", node=node)
    return np.array(value, dtype=spec.dtype, copy=True)


def _assign_kernel(node):
    name = node.attrs["var"]

    def run(state, value):
        state.variables[name] = _check_assign(node, value)
        return value
    return run, True


def adopting_assign_kernel(node):
    """The kernel of assign `node` for a plan that hands it a fresh array of the variable's
    exact shape and dtype, which nothing writes into afterwards (an optimiser's fused update
    output): stored as is, without the defensive copy. Variable values are never changed in
    place, and Session.run copies a fetched value that is a variable's array."""
    name = node.attrs["var"]

    def run(state, value):
        state.variables[name] = value
        return value
    run.stores_variable = name   # NOTE: generated plans (graph/planfn.py) inline the store
    return run


def _update_kernel(opname):
    kernel = ops.REGISTRY[opname].kernel   # the op library's own add/sub

    def make_kernel(node):
        name = node.attrs["var"]

        def run(state, delta):
            try:
                cur = state.variables[name]
            except KeyError:
                raise FailedPreconditionError(
                    f"Attempting to use uninitialized value '{name}' in {node.type} "
                    f"'{node.name}'; run graph.global_variables_initializer() (local variables: "
                    f"local_variables_initializer()) first",
                    node=node) from None
            new = _check_assign(node, kernel(cur, delta))
            state.variables[name] = new
            return new
        return run, True
    return make_kernel


def _count_up_to_kernel(node):
    name, limit = node.attrs["var"], node.attrs["limit"]

    def run(state):
        with state.lock:   # NOTE: queue runners' threads count at once
            try:
                cur = state.variables[name]
            except KeyError:
                raise FailedPreconditionError(
                    f"Attempting to use uninitialized value '{name}' in count_up_to "
                    f"'{node.name}' (defined at {where_str(node.loc)}); run "
                    f"graph.global_variables_initializer() (local variables, such as "
                    f"num_epochs' counters: local_variables_initializer()) first",
                    node=node) from None
            if cur >= limit:
                raise OutOfRangeError(f"Reached limit of {limit}\n  in node {describe(node)}",
                                      node=node)
            state.variables[name] = np.array(cur + 1, dtype=cur.dtype)
            return cur
    return run, True


VARIABLE = graph_op("variable", _variable_kernel)
COUNT_UP_TO = graph_op("count_up_to", _count_up_to_kernel)
ASSIGN = graph_op("assign", _assign_kernel)
ASSIGN_ADD = graph_op("assign_add", _update_kernel("add"))
ASSIGN_SUB = graph_op("assign_sub", _update_kernel("sub"))


# -- Variable ----------------------------------------------------------------------------------
class Variable(Tensor):
    """`Variable(initial_value, trainable=True, name=None, dtype=None)`, as `tf.Variable`.

    `initial_value` may be an array, a Python value, a tensor (e.g. `random_normal(...)`) or
    a callable returning one (called under the variable's name scope). Python floats become
    float32. The shape must be fully known.
    """
    __slots__ = ("trainable", "initializer", "initial_value")
    is_variable_class = True    # NOTE: not a tf.Tensor to users (core.PublicTensor)

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, collections=None):
        g = get_default_graph()
        if g.outer is not None:
            raise ValueError("create Variables outside cond/while_loop bodies (TF1 cannot "
                             "either); pass them in as ordinary tensors")
        vname = g.unique_name(name or "Variable")
        # NOTE: initialisers ignore enclosing control_dependencies (TF1's init_scope), so an
        # optimiser's slots built under control_dependencies(UPDATE_OPS) need no feeds
        with g.control_dependencies(None), g.name_scope(vname + "/"):
            init = initial_value() if callable(initial_value) else initial_value
            init = init if isinstance(init, Tensor) else constant(init, dtype=dtype,
                                                                  name="initial_value")
            if dtype is not None and init.dtype != as_dtype(dtype):
                init = ops.cast(init, as_dtype(dtype))
        if init.graph is not g:
            raise ValueError(f"the initial value '{init.name}' of Variable '{vname}' belongs "
                             f"to another graph")
        if None in init.shape:
            raise ShapeError(f"Variable '{vname}': the initial value has shape "
                             f"{fmt_shape(init.spec)}; a Variable needs a fully known shape")
        spec = Spec(tuple(init.shape), init.dtype)
        node = g.create_node(VARIABLE, (), {"trainable": bool(trainable)}, [spec], vname,
                             exact_name=True)
        Tensor.__init__(self, node, 0, spec)
        node.outputs = (self,)
        self.trainable = bool(trainable)
        self.initial_value = init
        with g.control_dependencies(None), g.name_scope(vname + "/"):
            self.initializer = assign(self, init, name="Assign").node
        g.variables.append(self)
        _add_to_collections(g, self, collections)

    def __repr__(self):   # NOTE: TF 2's resource variable's form, for str() too
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    __str__ = __repr__

    # -- TF's Variable methods -----------------------------------------------------------------
    def value(self):
        """The variable's value where this node runs: a Tensor (not the Variable), a new read
        node each call, as TF's ReadVariableOp."""
        return identity(self, name="ReadVariableOp")

    def read_value(self):
        return identity(self)   # TF 2: Read/ReadVariableOp, then Identity

    def assign(self, value, name=None):
        return assign(self, value, name)

    def assign_add(self, delta, name=None):
        return assign_add(self, delta, name)

    def assign_sub(self, delta, name=None):
        return assign_sub(self, delta, name)

    def count_up_to(self, limit):
        return count_up_to(self, limit)

    def load(self, value, session=None):
        """Set the value in `session` directly (TF's `Variable.load`)."""
        s = _session_or_default(session)
        s.load_variable_values({self.node.name: _check_assign(self.initializer,
                                                              np.asarray(value))})


def _add_to_collections(g, v, collections):
    """TF1's `collections=`: default [GLOBAL_VARIABLES]; leaving that key out makes a
    variable that global_variables() and its initializer skip (LOCAL_VARIABLES: metrics)."""
    if collections is None:
        return
    for key in collections:
        if key not in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES):
            g.add_to_collection(key, v)
    if GraphKeys.GLOBAL_VARIABLES not in collections:
        g.add_to_collection(NON_GLOBAL, v)


def _assign_node(kind, var, value, name):
    if not isinstance(var, Variable):
        raise TypeError(f"{kind.name}: the target must be a graph.Variable, got {var!r}")
    g = _graph_of([var, value] if isinstance(value, Tensor) else [var])
    if not isinstance(value, Tensor):
        arr = np.asarray(value)
        if not np.can_cast(arr.dtype, var.dtype, "same_kind"):
            raise TypeError(f"{kind.name}: cannot assign a {arr.dtype.name} value to Variable "
                            f"'{var.node.name}' of dtype {var.dtype.name}")
        value = arr.astype(var.dtype)
    t = _lift(g, value, [var])
    if t.dtype != var.dtype:
        raise TypeError(f"{kind.name}: value '{t.name}' has dtype {t.dtype.name}, but Variable "
                        f"'{var.node.name}' has dtype {var.dtype.name}; cast it first")
    try:
        ok = len(t.shape) == len(var.shape) and all(
            a is None or a == b for a, b in zip(t.shape, var.shape))
        if not ok:
            raise ShapeError(f"{kind.name}: cannot assign a value of shape "
                             f"{fmt_shape(t.spec)} to Variable '{var.node.name}' of shape "
                             f"{fmt_shape(var.spec)}")
    except ShapeError as e:
        raise _at_user_line(e, g, kind.name) from None
    node = g.create_node(kind, (t,), {"var": var.node.name}, [var.spec], name or kind.name)
    return node.outputs[0]


def assign(ref, value, name=None):
    """Set Variable `ref` to `value` when run; the result is the new value."""
    return _assign_node(ASSIGN, ref, value, name)


def assign_add(ref, delta, name=None):
    check_tf1_types("assign_add", ref)
    return _assign_node(ASSIGN_ADD, ref, delta, name)


def assign_sub(ref, delta, name=None):
    check_tf1_types("assign_add", ref)
    return _assign_node(ASSIGN_SUB, ref, delta, name)


def count_up_to(ref, limit, name=None):
    """Increment integer Variable `ref` when run, returning its value before; once it has
    reached `limit`, running raises `errors.OutOfRangeError` (TF1's `count_up_to`, which
    `train.limit_epochs` counts epochs with)."""
    if not isinstance(ref, Variable):
        raise TypeError(f"count_up_to: the target must be a graph.Variable, got {ref!r}")
    if ref.dtype.kind not in "iu" or ref.shape != ():
        raise TypeError(f"count_up_to: Variable '{ref.node.name}' must be an integer scalar, "
                        f"got dtype {ref.dtype.name} shape {fmt_shape(ref.spec)}")
    g = ref.graph
    return g.create_node(COUNT_UP_TO, (), {"var": ref.node.name, "limit": int(limit)},
                         [ref.spec], name or "CountUpTo").outputs[0]


def global_variables(graph=None, scope=None):
    return (graph or get_default_graph()).get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(graph=None, scope=None):
    return (graph or get_default_graph()).get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(graph=None):
    return (graph or get_default_graph()).trainable_variables()


def variables_initializer(var_list, name="init"):
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    """One op that initialises every global Variable of the default graph."""
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    """One op that initialises the default graph's LOCAL_VARIABLES (e.g. metrics' counts)."""
    return variables_initializer(local_variables(), name="init_local")


# -- global step (train.get_global_step / get_or_create_global_step) ----------------------------
def get_global_step(graph=None):
    """The graph's (default: the default graph's) `global_step` variable, or None."""
    g = graph or get_default_graph()
    return next((v for v in g.variables if v.node.name == "global_step"), None)


def get_or_create_global_step(graph=None):
    """The graph's `global_step` variable (int64, not trainable), made when missing."""
    g = graph or get_default_graph()
    step = get_global_step(g)
    if step is None:
        with g.as_default(), g.name_scope(None):
            step = Variable(np.array(0, np.int64), name="global_step", trainable=False)
    return step


# -- is it initialised? (TF's variables.py has these queries too) --------------------------------
def _initialized_kernel(node):
    names = node.attrs["vars"]

    def run(state):
        return np.array([n in state.variables for n in names], np.bool_)
    return run, True


INITIALIZED = graph_op("is_variable_initialized", _initialized_kernel)


def _flags(var_list, name):
    for v in var_list:
        if not isinstance(v, Variable):
            raise TypeError(f"expected graph.Variables, got {v!r}")
    g = var_list[0].graph if var_list else get_default_graph()
    return g.create_node(INITIALIZED, (), {"vars": [v.node.name for v in var_list]},
                         [Spec((len(var_list),), np.dtype(np.bool_))], name).outputs[0]


@named
def is_variable_initialized(variable):
    """A bool scalar: whether `variable` has a value in the session that runs it."""
    return ops.reshape(_flags([variable], "IsVariableInitialized"), ())


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """The names (a 1-d array of strings) of the variables in var_list (default: global and
    local ones) that have no value in the session that runs it."""
    vs = list(global_variables() + local_variables()) if var_list is None else list(var_list)
    g = vs[0].graph if vs else get_default_graph()
    with g.as_default(), g.name_scope(name):
        flags = _flags(vs, "IsVariableInitialized")
    names = np.array([v.node.name for v in vs], dtype=object)
    return g.create_node(_REPORT, (flags,), {"names": list(names)},
                         [Spec((None,), np.dtype(object))], name).outputs[0]


def _report_kernel(node):
    names = np.array(node.attrs["names"], dtype=object)
    return (lambda flags: names[~np.asarray(flags, np.bool_)] if names.size else
            np.zeros((0,), object)), False


_REPORT = graph_op("report_uninitialized", _report_kernel)


def assert_variables_initialized(var_list=None):
    """An Assert node that fails when a variable of var_list (default: all) has no value."""
    vs = list(global_variables() + local_variables()) if var_list is None else list(var_list)
    if not vs:
        raise located("assert_variables_initialized: no variables")
    flags = _flags(vs, "IsVariableInitialized")
    return Assert(reduce_all(flags), ["Variables are not all initialized:",
                                      report_uninitialized_variables(vs)])
