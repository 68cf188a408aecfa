"""`compile(fn)`: eager code captured into an optimised graph (torch.compile, tf.function).

On the first call for an input signature, `fn` runs once with *tracers*: eager tensors that
hold a static shape and dtype instead of values and record every op into a `graph.Graph`.
The graph (with the gradient nodes `graph.gradients` builds from the same op rules) goes to
a `graph.Session(optimize=True)`, which optimises it once; this and later calls with that
signature replay the plan. Results come back as eager tensors whose tape entry hands the
graph's gradients to `backward()`.

>>> from dualgrad import eager, compiler
>>> @compiler.compile
... def loss(w, x):
...     return ((x @ w) ** 2).sum()
>>> w = eager.ones(3, 2, requires_grad=True)
>>> y = loss(w, eager.ones(4, 3))
>>> y.backward()
>>> float(y), w.grad.shape, loss.traces
(72.0, torch.Size([3, 2]), 1)

What cannot be traced (a tensor's value read by Python: `if t.sum() > 0`, `.item()`,
`.numpy()`, `print(t)`) is a *graph break*: that call runs eagerly, with a warning naming the
line, and its signature stays eager. See docs/compile.md.
"""
from __future__ import annotations

import threading
import time
import traceback
import types
import warnings
from collections import OrderedDict

import numpy as np
from dualgrad.ops.rules import floating, inexact

from dualgrad import graph
from dualgrad import ops
from dualgrad.ops import distributed as _mpi
from dualgrad.eager import is_grad_enabled
from dualgrad.eager.amp import state as autocast_state
from dualgrad.eager.nn import Module
from dualgrad.eager.core import Tensor, array_of, keep_view_base, owned_array, recorded
from dualgrad.ops.core import FRAMEWORK_DIRS, ComplexError, first_complex, tracing, where_str

from .ddp_sync import average_bucket
from .optimize import check_budget
from .signatures import Inline, ModuleState, describe, leaf_names, modules_reached, \
    python_reads, read_values, signature_key, tree_map
from .tracer import KEEP, GraphBreak, Trace, Tracer, active_trace, flatten_out, rebuild_out

__all__ = ["compile", "Compiled", "Tracer", "GraphBreak", "MAX_TRACES", "CACHE_SIZE_LIMIT"]

MAX_TRACES = 8      # more traces of one function than this give a warning (tf.function's)
# The traces one compiled function keeps (torch's cache_size_limit): past it, the least
# recently used is dropped, with a warning. compile(fn, cache_size_limit=N) sets one function's.
CACHE_SIZE_LIMIT = 64
_GRADS_LOCK = threading.Lock()   # building an entry's gradient nodes on first backward


# -- one traced signature ---------------------------------------------------------------------
class _Entry:
    """A traced signature: its graph, session, and how to feed it and read its results."""

    def __init__(self, tr, arg_phs, arg_rg, out_tree, fetches, rg_outs, grad_mode, effects,
                 memory_budget=None):
        self.graph, self.arg_phs = tr.graph, arg_phs
        self.live, self.randoms = tr.live, tr.randoms
        self.live_rg = tuple([t.requires_grad for t, _ in tr.live])
        self.out_tree, self.n_out = out_tree, len(fetches)
        self.session = graph.Session(tr.graph, optimize=True, memory_budget=memory_budget)
        # the tape: which eager tensors get gradients, and the placeholders they were fed to
        self.grad_in = [("arg", i) for i, rg in enumerate(arg_rg) if rg] + \
            [("live", j) for j, (t, _) in enumerate(tr.live) if t.requires_grad]
        self.xs = [arg_phs[i] if k == "arg" else tr.live[i][1] for k, i in self.grad_in]
        at = {id(tr.live[i][0]): k for k, (kind, i) in enumerate(self.grad_in) if kind == "live"}
        self.sync = [([(n, at[id(p)]) for n, p in bucket], find_unused)
                     for buckets, find_unused in tr.averaged for bucket in buckets]
        self.synced = sorted({k for pairs, _ in self.sync for _, k in pairs})
        self.rg_outs = rg_outs if grad_mode and self.xs else []
        self.ys = fetches
        self.fetches = list(fetches)
        self.stored = None           # scalar loss: where its gradients sit among the fetches
        self.by_output = {}          # output index -> (grad placeholder, gradient tensors)
        if len(self.rg_outs) == 1 and fetches[self.rg_outs[0]].shape == ():
            with tr.graph.as_default():
                dxs = self._gradients(fetches[self.rg_outs[0]])
            self.stored = []
            for d in dxs:
                self.stored.append(None if d is None else len(self.fetches))
                if d is not None:
                    self.fetches.append(d)
        self.op = ops.Op(f"compiled:{tr.name}", None, None, _tape_vjp)
        # a traced training step: what each call does after the plan (EffectsLog.effects)
        at = {}

        def fetch(g):
            if g is None or g is KEEP:   # NOTE: None: no gradient; KEEP: the .grad as it is
                return g
            if id(g) not in at:
                at[id(g)] = len(self.fetches)
                self.fetches.append(g)
            return at[id(g)]
        self.effects = [(kind, target, [(p, fetch(d)) for p, d in key], None)
                        if kind == "step" else (kind, target, key, fetch(g))
                        for kind, target, key, g in effects]
        self.guards = tr.log.guards
        self.constants = list(tr.constants.values())
        # NOTE: fetches and feeds resolved once (TF1's make_callable): a call passes arrays
        self.sources = [source for source, _ in tr.sourced]
        self.feed_list = list(arg_phs) + [p for _, p in tr.live] + \
            [p for p, _ in tr.randoms] + [g for _, g in tr.sourced]
        self.live_tensors = [t for t, _ in tr.live]
        self.step = self.session.make_callable(self.fetches, self.feed_list)
        sources = list(arg_phs) + [p for _, p in tr.live]
        self.views = [view_chain(y, sources) for y in fetches]

    def run(self, tensors):
        arrays = [array_of(t) for t in tensors]
        arrays += [array_of(t) for t in self.live_tensors]
        for _, sample in self.randoms:
            arrays.append(sample())
        for source in self.sources:
            arrays.append(array_of(source()))
        vals = self.step(*arrays)
        outs = [np.asarray(v) for v in vals[:self.n_out]]
        if self.effects:
            self._effects(vals, arrays)
        if self.rg_outs:
            live = self.live_tensors
            inputs = tuple([tensors[i] if k == "arg" else live[i] for k, i in self.grad_in])
            stored = self.stored
            call = _Call(self, arrays, None if stored is None else
                         [None if s is None else vals[s] for s in stored])
            for i in self.rg_outs:
                outs[i] = recorded(outs[i], self.op, inputs, {"call": call, "index": i})
        outs = [o if type(o) is not np.ndarray else Tensor(o) for o in outs]
        for i, chain in enumerate(self.views):
            if chain is not None:
                outs[i] = self._view(tensors, *chain)
        return rebuild_out(self.out_tree, outs)

    def _view(self, tensors, k, chain):
        """An output that is a view of an input in eager (transpose, slice, diagonal, ...):
        the same view ops run eagerly on this call's input, so writes through it reach the
        input exactly as eager's (and torch's) do, and backward goes through their rules."""
        out = tensors[k] if k < len(tensors) else self.live_tensors[k - len(tensors)]
        for op, attrs, shaped in chain:   # NOTE: shape-only inputs: any array of their shape
            out = ops.bind(op, out, *[np.broadcast_to(np.zeros((), dt), sh) for sh, dt in shaped],
                           **attrs)
        return out

    def _effects(self, vals, arrays):
        """What the traced step changes, done with this call's values (EffectsLog.effects)."""
        taken = {id(a) for a in arrays}   # NOTE: a .grad keeps an array of its own
        for kind, target, key, i in self.effects:
            if kind == "write":   # NOTE: key "source": target() is the tensor at this call
                np.copyto(array_of(target() if key else target), vals[i], casting="same_kind")
            elif kind == "step":
                for p, k in key:
                    if k is None:
                        p.grad = None
                    elif k is not KEEP:
                        p.grad = Tensor(owned_array(vals[k], taken))
                target.step()
            else:
                target.grad = None if i is None else Tensor(owned_array(vals[i], taken))

    def holds(self):
        """The trace's guards hold: each .grad it read is None, or not, as it was then, and
        each eager tensor it froze in has the values it had then."""
        for leaf, none in self.guards:
            if (leaf.grad is None) is not none:
                return False
        for t, then in self.constants:
            now = array_of(t)
            if now.shape != then.shape or not np.array_equal(now, then, equal_nan=True):
                return False
        return True

    def gradients(self, index, arrays, g):
        """d(output index)/d(inputs) for the incoming gradient g, from the graph."""
        hit = self.by_output.get(index)
        if hit is None:
            with _GRADS_LOCK:   # NOTE: built once, even when two threads call backward at once
                hit = self.by_output.get(index)
                if hit is None:
                    y = self.ys[index]
                    with self.graph.as_default():
                        gp = graph.placeholder(y.dtype, y.shape, name="grad_output")
                        hit = self.by_output[index] = (gp, self._gradients(y, gp))
        gp, dxs = hit
        wanted = [d for d in dxs if d is not None]
        feeds = dict(zip(self.feed_list, arrays))
        feeds[gp] = g
        vals = iter(self.session.run(wanted, feeds) if wanted else ())
        return [None if d is None else next(vals) for d in dxs]


    def _gradients(self, y, gy=None):
        """d(y)/d(xs) as graph tensors, averaged over the ranks where a DDP model asked."""
        dxs = list(graph.gradients([y], self.xs, grad_ys=None if gy is None else [gy]))
        for pairs, find_unused in self.sync:
            average_bucket(dxs, pairs, find_unused, self.xs)
        return dxs


class _Call:
    """What one call's tape entry keeps for backward: its fed arrays, or its stored gradients."""
    __slots__ = ("entry", "arrays", "stored", "handed")

    def __init__(self, entry, arrays, stored):
        self.entry, self.arrays, self.stored, self.handed = entry, arrays, stored, False

    def vjp(self, g, index, needs):
        if self.stored is None:
            grads = self.entry.gradients(index, self.arrays, array_of(g))
            return [Tensor(np.asarray(d)) if d is not None and need else None
                    for d, need in zip(grads, needs)]
        # NOTE: the stored gradients are for an incoming 1; the rule is linear in g
        ga = array_of(g)
        one = not self.handed and ga.shape == () and floating(ga.dtype) and float(ga) == 1.0
        self.handed = True   # a second backward (retain_graph) must not share the arrays
        if one:
            return [None if s is None or not need else Tensor(s)
                    for s, need in zip(self.stored, needs)]
        # NOTE: in each input's dtype: a float64 g must not widen a float32 weight's gradient
        return [None if s is None or not need else Tensor((ga * s).astype(s.dtype, copy=False))
                for s, need in zip(self.stored, needs)]


def _tape_vjp(g, *inputs, out, needs, call, index):
    if is_grad_enabled():   # NOTE: backward(create_graph=True) through this call
        raise RuntimeError(
            "compile(): double backward through a compiled call is not supported: its "
            "gradient would be a constant, so a gradient of it (a gradient penalty, a "
            "Hessian-vector product) would be wrong. Differentiate the uncompiled module "
            "with create_graph=True (torch.compile does not support double backward either)")
    grads = call.vjp(g, index, needs)
    if call.entry.synced:   # NOTE: DDP's hooks must not average these a second time
        _mpi.mark_averaged([inputs[k] for k in call.entry.synced if grads[k] is not None])
    return grads



# -- the compiled function --------------------------------------------------------------------
class Compiled:
    """What `compile(fn)` returns: call it like fn. See the module docstring."""

    def __init__(self, fn, cache_size_limit=None, memory_budget=None):
        self.fn = fn
        self.cache_size_limit = cache_size_limit
        self.memory_budget = check_budget(memory_budget)
        self.evictions = 0       # traces dropped by the LRU cap
        self.module = fn if isinstance(fn, Module) else None
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self.traces = 0
        self.signatures = []     # one readable line per trace, in order
        self.graph = None        # the last traced graph
        self.trace_seconds = None   # how long the last trace took (fn with tracers + gradients)
        self._entries, self._eager = OrderedDict(), set()
        self._lock = threading.RLock()   # one trace at a time per function
        self._last = None
        self._mods = None        # modules whose flags and attributes are in the signature
        self._reads = ()         # (namespace, name) of the Python values fn reads
        self._roots = ()

    # -- inspection ---------------------------------------------------------------------------
    @property
    def report(self):
        """The optimiser's report for the last traced signature's plan (None before a run)."""
        return None if self._last is None else self._last.session.last_report

    def dot(self):
        """The last traced graph (forward and gradient nodes) as Graphviz DOT."""
        if self.graph is None:
            raise RuntimeError(f"compile({self.__name__}) has not been traced yet: call it once")
        return graph.to_dot(self.graph, name=self.__name__)

    def reset(self):
        """Forget every trace (after changing a Python value fn reads, e.g. a module's `p`)."""
        self._entries.clear()
        self._eager.clear()
        self._mods, self._last, self.graph = None, None, None

    def __repr__(self):
        return f"<compiled {self.__qualname__}: {self.traces} trace(s)>"

    def __get__(self, obj, objtype=None):   # @compile on a method
        return self if obj is None else types.MethodType(self, obj)

    def __getattr__(self, name):   # compile(module).parameters(), .train(), .eval(), ...
        module = self.__dict__.get("module")
        if module is None:
            raise AttributeError(f"'Compiled' object has no attribute {name!r}")
        return getattr(module, name)

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if active_trace() is not None:    # inside another trace: trace through fn
            return self.fn(*args, **kwargs)
        if self._mods is None:
            self._roots, mods = modules_reached(self.fn)
            self._mods = ModuleState(mods)
            self._reads = python_reads(self.fn)
        tensors, keep = [], []
        try:
            key = (is_grad_enabled(), self._state(),
                   tuple([signature_key(a, tensors, keep) for a in args]),
                   tuple([(k, signature_key(v, tensors, keep)) for k, v in kwargs.items()]),
                   self.memory_budget)
        except Inline:
            return self.fn(*args, **kwargs)
        entry = self._hit(key)
        if entry is not None:
            return entry.run(tensors)
        if key in self._eager:
            return self.fn(*args, **kwargs)
        with self._lock:   # NOTE: another thread may have traced this signature meanwhile
            entry = self._hit(key)
            if entry is not None:
                return entry.run(tensors)
            return self._trace(key, args, kwargs, tensors, keep)

    def _state(self):
        """The guarded Python state: every reached module's flags, plain attributes and tensor
        objects (module_state), and the plain globals and closure values fn and its helpers
        read (read_values), and CPU autocast's state (the casts a trace records depend on it)."""
        return (self._mods.now(), read_values(self._reads), autocast_state())

    def _hit(self, key):
        entry = self._entries.get(key)
        if entry is None or entry.live_rg != tuple([t.requires_grad
                                                    for t in entry.live_tensors]) or \
                (entry.guards or entry.constants) and not entry.holds():
            return None
        try:
            self._entries.move_to_end(key)
        except KeyError:   # NOTE: evicted by another thread just now; the entry still runs
            pass
        return entry

    def _store(self, key, entry):
        limit = self.cache_size_limit if self.cache_size_limit is not None else \
            CACHE_SIZE_LIMIT
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > max(1, limit):
            old_key, old = self._entries.popitem(last=False)
            self.evictions += 1
            if self.evictions == 1:
                warnings.warn(f"compile({self.__qualname__}): more than {limit} traced "
                              f"signatures; the least recently used are dropped (a call with "
                              f"one traces again). Raise compile(fn, cache_size_limit=N) or "
                              f"compiler.compiled.CACHE_SIZE_LIMIT if they are all in use",
                              UserWarning, stacklevel=4)

    def _trace(self, key, args, kwargs, tensors, keep):
        self.traces += 1
        self.signatures.append(describe(args, kwargs, key[0], self._mods.training(key[1][0])))
        if self.traces == MAX_TRACES + 1:
            warnings.warn(f"compile({self.__qualname__}) has been traced {self.traces} times: "
                          f"each new signature (tensor shapes, dtypes, requires_grad, "
                          f"non-tensor argument values, grad mode, train/eval) traces again, "
                          f"which is slow; see .signatures. Keep shapes fixed (pad the last "
                          f"batch) and pass changing numbers as tensors", UserWarning,
                          stacklevel=3)
        rng = ops.generator()
        rng_state = rng.bit_generator.state
        tr = Trace(self.__qualname__, self._params(), effects=True)
        t0 = time.perf_counter()
        failed = None
        try:
            entry = self._record(tr, args, kwargs, tensors)
        except _Failed as f:
            failed = f.err
        except BaseException:   # NOTE: KeyboardInterrupt, or an error of the tracer itself:
            tr.undo_changes()   # eager state is as before the call (.grad, tensors, stream)
            tr.log.restore()
            rng.bit_generator.state = rng_state
            raise
        if failed is not None:
            # NOTE: out of the except block, so that an error of the eager run (the user's
            # ShapeError) is not shown below an internal _Failed ("During handling of ...")
            tr.undo_changes()
            tr.log.restore()
            rng.bit_generator.state = rng_state   # the eager run draws what eager would
            self._eager.add(key)
            try:
                result = self.fn(*args, **kwargs)
            except BaseException as e:
                self._eager.discard(key)   # NOTE: the user's error pins nothing to eager
                if self.traces > 1 and isinstance(e, Exception):
                    e.add_note(f"compile({self.__qualname__}): this call has a new input "
                               f"signature and was traced again (trace {self.traces}):\n"
                               f"  now:     {self.signatures[-1]}\n"
                               f"  earlier: {self.signatures[-2]}")
                raise
            _warn_fallback(self.__qualname__, failed)
            return result
        if ops.generator() is not rng or rng.bit_generator.state != rng_state:
            warnings.warn(f"compile({self.__qualname__}): random numbers were drawn from "
                          f"eager's generator while tracing by something other than eager's "
                          f"random functions (which draw anew at every call): they are "
                          f"frozen into the graph, and every call sees the same ones. Draw "
                          f"them with eager.rand/randn/..., or pass them in as arguments",
                          UserWarning, stacklevel=3)
        self.trace_seconds = time.perf_counter() - t0
        entry.keep = keep
        known = {id(m) for m in self._mods.modules}
        # NOTE: modules reached through a helper, a dict, another object are guarded; the key
        # is the state as fn left it (a counter fn increments is a side effect done once per
        # trace, not a reason to trace again at the next call)
        self._mods.add([m for i, m in tr.modules.items() if i not in known])
        key = (key[0], self._state()) + key[2:]
        self._store(key, entry)
        self.graph, self._last = tr.graph, entry
        return entry.run(tensors)

    def _record(self, tr, args, kwargs, tensors):
        """Run fn with tracers; the entry, or _Failed with why it could not be traced."""
        names = leaf_names(self.fn, args, kwargs)
        for _, p in tr.params:
            tr.log.note_grad(p, "snap")   # NOTE: fn may set a .grad (p.grad = None) directly
        if first_complex(tensors) is not None:
            raise ComplexError("compile() does not trace complex tensors (its graphs are "
                               "real); call the function eagerly")
        with tr.graph.as_default(), tracing(tr):
            phs = [graph.placeholder(t.dtype, t.shape, name=n) for t, n in zip(tensors, names)]
            arg_rg = [t.requires_grad and inexact(t.dtype) for t in tensors]
            tr.args = [(t, p) for t, p, rg in zip(tensors, phs, arg_rg) if rg]
            made = [tr.wrap(p, rg) for p, rg in zip(phs, arg_rg)]
            for t, m in zip(tensors, made):
                keep_view_base(m, t)     # NOTE: as_strided of it reads storage: a graph break
            tracers = iter(made)
            try:
                t_args = tree_map(args, lambda t: next(tracers))
                t_kwargs = tree_map(kwargs, lambda t: next(tracers))
                result = self.fn(*t_args, **t_kwargs)
                err = tr.breaks[0] if tr.breaks else tr.changed_in_place()
                leaves = []
                tree = flatten_out(result, tr, leaves)
                effects = tr.log.effects()
            except GraphBreak as e:
                raise _Failed(e) from None
            except Exception as e:  # noqa: BLE001 - eager runs it, and says what is wrong
                raise _Failed(tr.breaks[0] if tr.breaks else e) from None
            if err is not None:
                raise _Failed(err)
        tr.log.restore()
        fetches = [g for g, _ in leaves]
        # NOTE: after a backward() inside fn, the results hand no gradients back (a second
        # backward through them would be through a freed graph in torch)
        rg_outs = [] if tr.log.did_backward else \
            [i for i, (g, rg) in enumerate(leaves) if rg and inexact(g.dtype)]
        return _Entry(tr, phs, arg_rg, tree, fetches, rg_outs, is_grad_enabled(), effects,
                      self.memory_budget)

    def _params(self):
        """(name, parameter) of the modules fn reaches: placeholders get their names."""
        return [np for r in self._roots for np in r.named_parameters()]


def view_chain(y, sources):
    """(index of the source placeholder, [(op, attrs, shaped), ...]) when graph tensor y is
    that placeholder seen through view ops only (`Op.view`, whose other inputs, if any, give
    only their shape: `shaped` is their (shape, dtype)s, as expand_as's), else None."""
    chain = []
    while True:
        for k, s in enumerate(sources):
            if y is s or y.node is s.node and y.index == s.index:
                return k, chain[::-1]
        node = y.node
        op = getattr(node, "op", None)
        if not getattr(op, "view", False) or y.index != 0 or not node.inputs or (
                len(node.inputs) > 1 and op.shape_only_from != 1):
            return None
        shaped = [(tuple(x.shape), x.dtype) for x in node.inputs[1:]]
        if any(d is None for sh, _ in shaped for d in sh):
            return None
        chain.append((op, dict(node.attrs), shaped))
        y = node.inputs[0]


class _Failed(Exception):
    def __init__(self, err):
        self.err = err


def _warn_fallback(name, err):
    """The graph-break warning, filed at the user's line that broke the trace."""
    if isinstance(err, GraphBreak):
        loc, why, hint = err.loc, err.what, err.hint
    else:
        loc = _user_line(err)
        why = f"what raised {type(err).__name__} ({err}) while tracing"
        hint = ("see the graph breaks in docs/compile.md; the eager run of the same call "
                "worked, so if none applies, report it")
    msg = (f"compile({name}): graph break at {where_str(loc)}: {why} cannot be traced; this "
           f"call ran eagerly, and so will every call with the same signature. To compile it: "
           f"{hint}")
    if loc is None:
        warnings.warn(msg, UserWarning, stacklevel=4)
    else:
        warnings.warn_explicit(msg, UserWarning, loc[0], loc[1])


def _user_line(err):
    """The innermost frame of err's traceback in the user's code."""
    loc = None
    for fs in traceback.extract_tb(err.__traceback__):
        if not fs.filename.startswith(FRAMEWORK_DIRS):
            loc = (fs.filename, fs.lineno)
    return loc


def compile(fn=None, *, cache_size_limit=None, memory_budget=None):  # noqa: A001 - torch's name
    """Trace `fn` (a function, a bound method or an eager.nn.Module) into an optimised graph.

    Usable as `compile(fn)`, `@compile` or `@compile()`. See the module docstring.
    cache_size_limit: traced signatures kept (least recently used dropped, with a warning);
    default CACHE_SIZE_LIMIT.
    memory_budget: each traced plan's peak memory, in bytes (an int) or as a fraction of its
    peak without a budget (a float in (0, 1]); activations are recomputed in the backward
    pass to stay within it (compiler/passes/remat.py), with the same results bit for bit.
    Not in torch.compile (there, torch.utils.checkpoint marks what to recompute by hand).
    """
    if cache_size_limit is not None and (not isinstance(cache_size_limit, int)
                                         or cache_size_limit < 1):
        raise ValueError(f"compile(): cache_size_limit must be a positive int, got "
                         f"{cache_size_limit!r}")
    check_budget(memory_budget)
    if fn is None:
        return lambda f: compile(f, cache_size_limit=cache_size_limit,
                                 memory_budget=memory_budget)
    if isinstance(fn, Compiled):
        if memory_budget is None or memory_budget == fn.memory_budget:
            return fn
        return Compiled(fn.fn, cache_size_limit or fn.cache_size_limit, memory_budget)
    if not callable(fn):
        raise TypeError(f"compile() needs a function or an eager.nn.Module, got {fn!r}")
    return Compiled(fn, cache_size_limit, memory_budget)
