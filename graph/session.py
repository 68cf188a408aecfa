"""`Session`: runs the part of a graph that fetches need, with fed placeholder values.

>>> import numpy as np
>>> from dualgrad import graph
>>> x = graph.placeholder(graph.float32, (None,), name="x")
>>> y = x * 2.0
>>> with graph.Session() as s:
...     s.run({"double": y}, feed_dict={x: [1.0, 2.0]})
{'double': array([2., 4.], dtype=float32)}

Feeds are checked before anything runs (a placeholder's dtype and known dims); a missing
feed names the placeholder. Variables keep their values across `run` calls of a session.
With `optimize=True` (the default) the plan comes from `compiler.optimize` when the
compiler is installed, else the graph runs as built. Plans are cached per (fetches, fed
placeholders[, feed shapes when optimised]).
"""
from __future__ import annotations

import threading
from collections import namedtuple
import time

import numpy as np

from dualgrad.ops.core import Spec, fmt_shape

from .config import ConfigProto, RunMetadata, RunOptions, check
from .core import Graph, Node, Tensor, default_sessions, get_default_graph, get_default_session
from .errors import InvalidArgumentError, describe
from .plan import build_plan

__all__ = ["Session", "InteractiveSession", "get_default_session", "run_deadline"]

class _Defaults(threading.local):
    def __init__(self):
        self.deadline = None        # time.monotonic() by which this run's waits must end


_TLS = _Defaults()


def run_deadline():
    """When the run on this thread must stop waiting (`RunOptions(timeout_in_ms=)`, else
    `ConfigProto(operation_timeout_in_ms=)`), as time.monotonic(); None: no limit. Ops that
    wait (queues) raise errors.DeadlineExceededError past it, as TF1's."""
    return _TLS.deadline


class _Deadline:
    def __init__(self, options, config):
        ms = (options.timeout_in_ms if options is not None else 0) or \
            (config.operation_timeout_in_ms if config is not None else 0)
        self.at = time.monotonic() + ms / 1000.0 if ms and ms > 0 else None

    def __enter__(self):
        self.before, _TLS.deadline = _TLS.deadline, self.at

    def __exit__(self, *exc):
        _TLS.deadline = self.before


class RunState:
    """What stateful kernels see: the session's variable values (by node name) and RNGs.

    `run` may be called from several threads at once (a queue runner's threads and the
    training loop): a kernel that reads and then writes this state (`count_up_to`, making a
    queue's store) holds `lock`. A resource with a `session_closed()` method (a queue) hears
    of `Session.close`, so ops waiting on it end."""

    def __init__(self, session, graph):
        self.session = session
        self.variables = {k: np.array(v, copy=True) for k, v in graph.saved_values.items()}
        self.rngs = {}
        self.resources = {}   # per-session state of graph objects (tf.data iterators, queues)
        self.lock = threading.RLock()

    def close(self):
        with self.lock:
            resources = list(self.resources.values())
        for r in resources:
            hook = getattr(r, "session_closed", None)
            if hook is not None:
                hook()


def _optimizer():
    """The optimiser entry point, or None when compiler/ is not there (one late import)."""
    try:
        from dualgrad.compiler import optimize
    except ImportError:
        return None
    return optimize if callable(optimize) else None   # NOTE: not the submodule of that name


class DeviceAttributes(namedtuple("DeviceAttributes",
                                  "name device_type memory_limit_bytes incarnation")):
    """One entry of Session.list_devices() (TF's _DeviceAttributes)."""

    def __repr__(self):
        return (f"_DeviceAttributes({self.name}, {self.device_type}, "
                f"{self.memory_limit_bytes}, {self.incarnation})")


class BaseSession:
    """`Session(graph=None, optimize=True, config=None, target="", *, memory_budget=None)`:
    a context manager with
    `run(fetches, feed_dict, options=None, run_metadata=None)`. `config` (a ConfigProto),
    `options` (RunOptions) and `run_metadata` (RunMetadata) are accepted as TF1 programs pass
    them and change nothing (graph/config.py says why), except `RunOptions.timeout_in_ms` and
    `ConfigProto.operation_timeout_in_ms`: how long an op may wait (a queue's dequeue).

    fetches: a Tensor, a Variable, a Node (an op: its result is None), a name ("x:0" or
    "train"), or a nested list / tuple / dict of them; the result has the same structure.

    memory_budget (not in TF1): bytes (an int) or a fraction of the unbudgeted peak (a float
    in (0, 1]); each plan then recomputes activations in the backward pass to keep its
    planned peak within it (`plan_memory` reports it), with the same results bit for bit.
    """

    def __init__(self, graph=None, optimize=True, config=None, target="", *,
                 memory_budget=None):
        if isinstance(graph, str):          # NOTE: TF1's Session(target, graph, config)
            graph, target = (optimize, graph) if isinstance(optimize, Graph) else (None, graph)
            optimize = True
        if target:
            raise NotImplementedError(f"Session(target={target!r}): dualgrad runs in this "
                                      f"process only (distributed TF1 targets are not supported)")
        self.config = check(config, ConfigProto, "Session(config=...)")   # accepted, ignored
        self.graph = graph if graph is not None else get_default_graph()
        if not isinstance(self.graph, Graph):
            raise TypeError(f"Session(graph=...) needs a graph.Graph, got {self.graph!r}")
        self.optimize = bool(optimize)
        if memory_budget is not None and not self.optimize:
            raise ValueError("Session(memory_budget=...) needs optimize=True: the optimiser "
                             "plans memory (compiler/passes/remat.py)")
        if memory_budget is not None:
            from dualgrad.compiler.optimize import check_budget
            check_budget(memory_budget)
        self.memory_budget = memory_budget
        self._state = RunState(self, self.graph)
        self._plans = {}
        self._plan_lock = threading.Lock()
        self._closed = False
        self.last_report = None   # the optimiser's report for the last plan it built

    def __reduce__(self):
        raise TypeError("sessions cannot be pickled")

    # -- lifetime --------------------------------------------------------------------------------
    def __enter__(self):
        default_sessions().append(self)
        return self

    def __exit__(self, *exc):
        stack = default_sessions()
        if stack and stack[-1] is self:
            stack.pop()
        self.close()

    def as_default(self):
        return _AsDefault(self)

    def list_devices(self):
        """The devices this Session runs on: the CPU, named as TF names it."""
        return [DeviceAttributes("/job:localhost/replica:0/task:0/device:CPU:0", "CPU",
                                 268435456, id(self) & 0x7FFFFFFFFFFFFFFF)]

    def close(self):
        self._closed = True
        self._state.close()
        self._plans.clear()
        self._state.variables.clear()

    @property
    def closed(self):
        return self._closed

    @property
    def graph_def(self):
        """TF's `sess.graph_def`: the session graph's `as_graph_def()`."""
        return self.graph.as_graph_def()

    # -- variable values (graph.save / restore, Variable.load) ----------------------------------
    def variable_values(self) -> dict:
        """{variable node name: value} of the variables initialised in this session. The arrays
        are the session's own: copy one before changing it."""
        return dict(self._state.variables)

    def load_variable_values(self, values):
        """Set variables' values by node name (each stored as a copy)."""
        for name, value in values.items():
            self._state.variables[name] = np.array(value, copy=True)

    # -- running -------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        check(options, RunOptions, "run(options=...)")            # accepted, ignored
        check(run_metadata, RunMetadata, "run(run_metadata=...)")  # stays empty
        flat, rebuild = _flatten(fetches, self._element)
        feeds = self._check_feeds(feed_dict or {})
        with _Deadline(options, self.config):
            values = self._plan(flat, feeds).run(self._state, feeds)
        return rebuild(_results(values, self._state, feeds))

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """TF1's `Session.make_callable`: a function running one step over and over.

        `step = sess.make_callable(fetches, feed_list)`, then `step(*values)` is
        `sess.run(fetches, dict(zip(feed_list, values)))`, with the same checks and the same
        result structure, but the fetches and feed keys are resolved once, here, and the
        step's plan is kept while the fed values keep their shapes and dtypes. With
        `accept_options=True` the function also takes `options=` and `run_metadata=`
        keywords (accepted and ignored, as in `run`).

        >>> import numpy as np
        >>> from dualgrad import graph
        >>> x = graph.placeholder(graph.float32, (None,), name="x")
        >>> with graph.Session() as s:
        ...     double = s.make_callable([x * 2.0], feed_list=[x])
        ...     double(np.array([1.0, 2.0], np.float32))
        [array([2., 4.], dtype=float32)]
        """
        if feed_list is not None and not isinstance(feed_list, (list, tuple)):
            raise TypeError(f"make_callable: `feed_list` must be a list or tuple, got "
                            f"{type(feed_list).__name__}")
        return _Callable(self, fetches, list(feed_list or ()), accept_options)

    def _plan(self, flat, feeds):
        key = (tuple(id(f) for f in flat), tuple(sorted(id(t) for t in feeds)))
        if self.optimize:
            key += (tuple(sorted((id(t), a.shape, a.dtype.str) for t, a in feeds.items())),)
        plan = self._plans.get(key)
        if plan is None:
            with self._plan_lock:   # NOTE: one thread builds a plan others then share
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._plans[key] = self._new_plan(flat, feeds)
        return plan

    def _new_plan(self, flat, feeds):
        optimize = _optimizer() if self.optimize else None
        if optimize is None:
            return build_plan(flat, feeds)
        specs = {t: Spec(a.shape, a.dtype) for t, a in feeds.items()}
        if self.memory_budget is None:
            plan, self.last_report = optimize(self.graph, flat, specs)
        else:
            plan, self.last_report = optimize(self.graph, flat, specs,
                                              memory_budget=self.memory_budget)
        return plan

    def plan_memory(self, fetches, feed_dict=None):
        """The memory of the plan `run(fetches, feed_dict)` executes, without running it: a
        `MemoryReport` (compiler/plan_memory.py) with `peak` in bytes, the fused kernels'
        preallocated `buffers`, the `transient` high-water mark of the arrays a run
        allocates and the step (`at`) where it is reached; with a memory_budget, also
        `budget`, `unbudgeted` and `recomputed`. Only optimised plans are measured: with
        optimize=False (or without compiler/) this raises ValueError.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        flat, _ = _flatten(fetches, self._element)
        plan = self._plan(flat, self._check_feeds(feed_dict or {}))
        if plan.memory is None:
            raise ValueError("plan_memory: only an optimised plan has a memory report "
                             "(Session(optimize=True), with dualgrad.compiler installed)")
        return plan.memory

    # -- fetches and feeds ------------------------------------------------------------------------
    def _element(self, f, what="fetch"):
        """A fetch or feed key as a Tensor or Node of this session's graph."""
        if isinstance(f, str):
            g = self.graph
            return g.get_tensor_by_name(f) if ":" in f else g.get_operation_by_name(f)
        if not isinstance(f, (Tensor, Node)):
            raise TypeError(f"{what} argument {f!r} has invalid type {type(f).__name__}: "
                            f"expected a graph Tensor, Variable, node or name")
        g = f.graph
        if g is not self.graph:
            where = ("is inside a cond/while_loop body (return it from the body instead)"
                     if g.is_enclosed_by(self.graph) else "belongs to another graph")
            name = f.name
            raise ValueError(f"{what} argument '{name}' {where}: it is not an element of "
                             f"this session's graph")
        return f

    def _check_feeds(self, feed_dict):
        return {(t := self._feedable(key)): _check_feed(t, value)
                for key, value in feed_dict.items()}

    def _feedable(self, key):
        """A feed key as the tensor it names: a placeholder, or, as in TF1, any other tensor
        (a Variable, an intermediate result), whose value then replaces what it computes."""
        t = self._element(key, "feed")
        if isinstance(t, Node):
            raise InvalidArgumentError(
                f"cannot feed {t.name!r}: it names an operation, not a tensor (feed "
                f"'{t.name}:0')", node=t)
        return t


def _check_feed(t, value):
    arr = np.asarray(value)
    want = t.spec.dtype
    if arr.dtype != want and not np.can_cast(arr.dtype, want, "same_kind"):
        raise InvalidArgumentError(
            f"cannot feed a {arr.dtype.name} value to {_fed(t)}: it expects "
            f"{want}", node=t.node)
    shape = t.spec.shape
    if shape is not None and (arr.ndim != len(shape) or any(  # None: any rank (TF1's no shape)
            d is not None and d != a for d, a in zip(shape, arr.shape))):
        raise InvalidArgumentError(
            f"cannot feed a value of shape {fmt_shape(arr.shape)} to {_fed(t)}: it expects "
            f"shape {fmt_shape(shape)}", node=t.node)
    if arr.dtype == want:
        return arr
    with np.errstate(over="ignore", invalid="ignore"):
        out = arr.astype(want)
    if not _representable(arr, out, want):
        raise InvalidArgumentError(
            f"cannot feed this {arr.dtype.name} value to {_fed(t)}: some "
            f"elements are not representable in {want} (e.g. {_first_bad(arr, out, want)})",
            node=t.node)
    return out


def _fed(t):
    if t.node.type == "placeholder":
        return f"placeholder {describe(t.node)}"
    return f"tensor '{t.name}' of {describe(t.node)}"


def _representable(arr, out, want):
    """The cast kept every value: integers in range, finite floats finite."""
    if arr.size == 0:
        return True
    if want.kind in "iu" and arr.dtype.kind in "iu":
        info = np.iinfo(want)
        return bool(arr.min() >= info.min and arr.max() <= info.max)
    if want.kind == "f" and arr.dtype.kind in "fiu":
        return not bool(np.any(np.isfinite(arr) & ~np.isfinite(out)))
    return True


def _first_bad(arr, out, want):
    if want.kind in "iu":
        info = np.iinfo(want)
        bad = arr[(arr < info.min) | (arr > info.max)]
    else:
        bad = arr[np.isfinite(arr) & ~np.isfinite(out)]
    return bad.flat[0] if bad.size else "?"


def _results(values, state, feeds):
    """The fetched values as `run` hands them back: arrays of the caller's own, 0-d ones as
    NumPy scalars. An array made by this run is handed over as it is (a view of one too);
    a copy is made of a variable's buffer, a fed array, a constant (read-only), a view of
    one of those, and of a second fetch sharing memory with an earlier one."""
    # NOTE: a list first: another thread's run may add a variable meanwhile
    taken = {id(_owner(a)) for a in list(state.variables.values())}
    taken.update([id(_owner(a)) for a in feeds.values()])
    return [_result(v, taken) for v in values]


def _owner(a):
    # NOTE: numpy collapses a view of a view to the array owning the memory
    return a if a.flags.owndata else a.base


def _result(v, taken):
    if v is None:
        return None
    if v.ndim == 0:
        return v[()]
    owner = _owner(v)
    if type(owner) is not np.ndarray or not owner.flags.owndata or id(owner) in taken or \
            not v.flags.writeable:
        return v.copy()
    taken.add(id(owner))
    return v


def _flatten(fetches, element):
    """Flatten nested fetches to a list; return it and a function that rebuilds the shape."""
    flat = []

    def walk(f):
        if isinstance(f, dict):
            keys = list(f)
            subs = [walk(f[k]) for k in keys]
            return lambda vals: type(f)(zip(keys, (s(vals) for s in subs))) \
                if type(f) is not dict else {k: s(vals) for k, s in zip(keys, subs)}
        if isinstance(f, (list, tuple)):
            subs = [walk(x) for x in f]
            if hasattr(f, "_fields"):   # namedtuple
                return lambda vals: type(f)(*(s(vals) for s in subs))
            return lambda vals: type(f)(s(vals) for s in subs)
        if f is None:
            raise TypeError("Fetch argument None has invalid type NoneType")
        i = len(flat)
        flat.append(element(f))
        return lambda vals: vals[i]

    return flat, walk(fetches)


class _Callable:
    """What `Session.make_callable` returns (see there)."""

    def __init__(self, session, fetches, feed_list, accept_options):
        if session.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        self.session, self.accept_options = session, bool(accept_options)
        self.flat, self.rebuild = _flatten(fetches, session._element)
        if type(fetches) is list and not any([isinstance(f, (list, tuple, dict))
                                              for f in fetches]):
            self.rebuild = list   # NOTE: a flat list of fetches needs no rebuilding
        self.feed_list = [session._feedable(k) for k in feed_list]
        self._last = None        # (shapes, dtypes, plan) of the last call fed exact arrays

    def __call__(self, *values, **kwargs):
        s = self.session
        if kwargs:
            self._check_options(kwargs)
        if s.closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if len(values) != len(self.feed_list):
            raise TypeError(f"this callable takes {len(self.feed_list)} feed value(s), one "
                            f"per element of its feed_list, but {len(values)} were given")
        feeds, plan = self._feeds(values)
        with _Deadline(kwargs.get("options"), s.config):
            out = plan.run(s._state, feeds)
        return self.rebuild(_results(out, s._state, feeds))

    def _feeds(self, values):
        """({placeholder: array}, the plan to run them with)."""
        last = self._last
        if last is not None and all([type(v) is np.ndarray for v in values]) and \
                [v.shape for v in values] == last[0] and [v.dtype for v in values] == last[1]:
            return dict(zip(self.feed_list, values)), last[2]   # NOTE: checked before
        shapes = [getattr(v, "shape", None) for v in values]
        dtypes = [getattr(v, "dtype", None) for v in values]
        feeds = {t: _check_feed(t, v) for t, v in zip(self.feed_list, values)}
        plan = self.session._plan(self.flat, feeds)
        exact = all([type(v) is np.ndarray and v.dtype == t.dtype
                     for t, v in zip(self.feed_list, values)])
        self._last = (shapes, dtypes, plan) if exact else None
        return feeds, plan

    def _check_options(self, kwargs):
        if not self.accept_options or not set(kwargs) <= {"options", "run_metadata"}:
            raise TypeError(f"this callable takes no keyword argument {sorted(kwargs)}" +
                            ("" if self.accept_options else "; make_callable("
                             "accept_options=True) makes one that takes options= and "
                             "run_metadata="))
        check(kwargs.get("options"), RunOptions, "options=")
        check(kwargs.get("run_metadata"), RunMetadata, "run_metadata=")


class _AsDefault:
    def __init__(self, s):
        self.s = s

    def __enter__(self):
        default_sessions().append(self.s)
        return self.s

    def __exit__(self, *exc):
        default_sessions().remove(self.s)


class Session(BaseSession):
    """The session of `with tf.Session() as sess:` (BaseSession has everything; Session and
    InteractiveSession are siblings over it, as in TF)."""


class InteractiveSession(BaseSession):
    """A session that installs itself as the default session on creation (for notebooks)."""

    def __init__(self, graph=None, optimize=True, config=None, target="", *,
                 memory_budget=None):
        super().__init__(graph, optimize, config, target, memory_budget=memory_budget)
        default_sessions().append(self)

    def close(self):
        stack = default_sessions()
        if self in stack:
            stack.remove(self)
        super().close()
