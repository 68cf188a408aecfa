"""Real `tf.compat.v1` as the oracle of the graph engine: run one case in TF and in dualgrad.

A case is one row of `tf_oracle_table.py` (a graph name and how to call it) in one dtype.
The same random inputs are fed as placeholders to a TF1 graph run by `tf1.Session` and to a
dualgrad graph run by `graph.Session(optimize=False)` and `optimize=True`. The results must
agree: values (tolerance per dtype), dtypes, static and run-time shapes, and for floating
inputs the gradients of `sum(out * w)` (`tf.gradients` against `graph.gradients`). Where TF
refuses (a TypeError / ValueError while building, an OpError while running: TF1's strict
dtype rules, no kernel for a dtype), dualgrad must refuse too with a clear error, at build
time where TF refuses at build time.

`load_tf()` imports TensorFlow once per process with one thread per pool (a test process
only: the library never touches threads).
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

import numpy as np

from dualgrad import graph as dg

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
# (rtol, atol) per floating dtype; integers and bools compare exactly
TOL = {"float16": (2e-2, 2e-2), "float32": (2e-5, 1e-5), "float64": (1e-9, 1e-10)}
GRAD_TOL = {"float16": (5e-2, 5e-2), "float32": (1e-4, 1e-5), "float64": (1e-8, 1e-10)}


@functools.lru_cache(maxsize=None)
def load_tf():
    """tensorflow, thread pools of one (unless TF already ran), logs quiet; every case builds
    its own `tf.Graph()`, so `compat.v1` graph code runs without disabling eager mode."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # tf1.layers, nn.rnn_cell: tf_keras
    import tensorflow as tf
    try:
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
    except RuntimeError:   # NOTE: another test ran TF first: its pools stay as they are
        pass
    return tf   # NOTE: eager stays on (other tests use TF eagerly): cases build in tf.Graph()


@dataclass
class Row:
    """One graph name under test. `ins`: per input, a domain of the dtype under test
    ("any", "pos", "nz", "unit", "small",
    "dist", "prob" in (0, 1), "ties": whole numbers in [-2, 2], so max / min tie) or a function rng -> array (a fixed input such as
    indices); `call(fn, *xs)` builds the result (default `fn(*xs, **kw)`); `tf` is the
    `tf.compat.v1` path when it is not `name`; `dtypes` limits the dtypes tried (default: all,
    and TF decides which it accepts)."""
    name: str
    ins: tuple = ("any",)
    shapes: tuple = ((2, 3),)
    kw: dict = field(default_factory=dict)
    tf: str | None = None
    call: object = None
    grad: bool = True
    dtypes: tuple = DTYPES
    variables: bool = False     # ins are Variables (scatter ops), initialised before the run

    @property
    def tf_name(self):
        return self.tf or self.name


def resolve(module, path):
    for part in path.split("."):
        module = getattr(module, part)
    return module


def _draw(rng, dom, shape, dtype):
    dt = np.dtype(dtype)
    if dt == bool:
        return rng.random(shape) < (0.9 if dom == "pos" else 0.5)
    lo = 0 if dt.kind == "u" else -4
    if dom == "dist":   # rows that are distributions (cross-entropy labels)
        if dt.kind != "f":
            return _draw(rng, "pos", shape, dtype)
        v = rng.uniform(0.1, 1, shape)
        return np.asarray(v / v.sum(-1, keepdims=True), dt)
    if dom == "ties":
        return np.asarray(rng.integers(0 if dt.kind == "u" else -2, 3, shape), dt)
    if dt.kind in "iu":
        v = {"any": lambda: rng.integers(lo, 5, shape), "pos": lambda: rng.integers(1, 5, shape),
             "nz": lambda: rng.integers(1, 5, shape) * (1 if dt.kind == "u" else
                                                        rng.choice([-1, 1], shape)),
             "unit": lambda: rng.integers(0 if dt.kind == "u" else -1, 2, shape),
             "small": lambda: rng.integers(0, 3, shape),
             "prob": lambda: rng.integers(0, 2, shape)}[dom]()
        return np.asarray(v, dt)
    v = {"any": lambda: rng.standard_normal(shape) * 2,
         "pos": lambda: rng.uniform(0.5, 3, shape),
         "nz": lambda: rng.uniform(0.5, 2, shape) * rng.choice([-1, 1], shape),
         "unit": lambda: rng.uniform(-0.9, 0.9, shape),
         "small": lambda: rng.uniform(-2, 2, shape),
         "prob": lambda: rng.uniform(0.05, 0.95, shape)}[dom]()
    return np.asarray(v, dt)


def arrays(row, dtype, seed=0):
    rng = np.random.default_rng(seed)
    shapes = row.shapes + (row.shapes[-1],) * (len(row.ins) - len(row.shapes))
    return [d(rng) if callable(d) else _draw(rng, d, s, dtype) for d, s in zip(row.ins, shapes)]


@dataclass
class Outcome:
    stage: str                  # "ok", "build" (refused while building) or "run"
    error: BaseException | None = None
    values: list = field(default_factory=list)
    static: list = field(default_factory=list)
    grads: list | None = None   # None: no gradient compared (non-float, or TF has none)


def _flat(out):
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _float_inputs(row, xs, vals, dtype):
    return [k for k, (d, v) in enumerate(zip(row.ins, vals))
            if not callable(d) and np.dtype(dtype).kind == "f" and row.grad]


def _build(module, row, vals, dtype, fn):
    if row.variables:
        xs = [module.Variable(v) if not callable(d) else module.constant(v)
              for d, v in zip(row.ins, vals)]
    else:
        xs = [module.placeholder(v.dtype, v.shape) for v in vals]
    out = row.call(fn, *xs) if row.call else fn(*xs, **row.kw)
    return xs, _flat(out)


def _grad_nodes(module, row, xs, outs, vals, dtype):
    """d sum(out * w) / d x for the floating inputs, w fixed random weights per output."""
    ks = [] if row.variables else _float_inputs(row, xs, vals, dtype)
    outs = [o for o in outs if np.dtype(_np_dtype(o)).kind == "f"]
    if not ks or not outs:
        return None, []
    rng = np.random.default_rng(7)
    loss = None
    for o in outs:
        shape = _static(o)
        known = shape is not None and None not in shape
        term = module.reduce_sum(o * rng.uniform(0.5, 1.5, shape).astype(_np_dtype(o))
                                 if known else o)
        loss = term if loss is None else loss + term
    return module.gradients(loss, [xs[k] for k in ks]), ks


def _np_dtype(t):
    d = t.dtype
    return getattr(d, "as_numpy_dtype", d)


def _static(t):
    s = t.shape
    return None if getattr(s, "dims", ()) is None else list(s.as_list()) if hasattr(s, "as_list") \
        else list(s)


def _spec(t):
    """A tensor's static shape and dtype, as built."""
    return _static(t), np.dtype(_np_dtype(t)).name


def run_tf(row, dtype, vals):
    tf = load_tf()
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        try:
            xs, outs = _build(tf1, row, vals, dtype, resolve(tf1, row.tf_name))
        except (TypeError, ValueError, NotImplementedError, AssertionError) as e:  # tf.range: assert
            return Outcome("build", e)
        try:
            grads, ks = _grad_nodes(tf1, row, xs, outs, vals, dtype)
        except LookupError:     # NOTE: TF registers no gradient for this op
            grads, ks = None, []
        except TypeError:       # NOTE: its gradient uses an op TF lacks for this dtype
            grads, ks = None, []    # (digamma's polygamma in float16): values compared only
        init = tf1.global_variables_initializer() if row.variables else None
        with tf1.Session(graph=g) as s:
            feed = {} if row.variables else dict(zip(xs, vals))
            try:
                if init is not None:
                    s.run(init)
                values = s.run(outs, feed)
                gvals = None if grads is None else s.run(
                    [tf.convert_to_tensor(gr) if gr is not None else tf1.zeros_like(xs[k])
                     for gr, k in zip(grads, ks)],
                    feed)
            except tf.errors.OpError as e:
                return Outcome("run", e)
    return Outcome("ok", values=values, static=[_spec(o) for o in outs], grads=gvals)


def run_dg(row, dtype, vals):
    """(unoptimised, optimised) outcomes of one dualgrad graph."""
    g = dg.Graph()
    with g.as_default():
        try:
            xs, outs = _build(dg, row, vals, dtype, resolve(dg, row.name))
            grads, ks = _grad_nodes(dg, row, xs, outs, vals, dtype)
        except Exception as e:  # noqa: BLE001 - classified by the comparison
            return Outcome("build", e), Outcome("build", e)
        init = dg.global_variables_initializer() if row.variables else None
        fetch = [gr if gr is not None else dg.zeros_like(xs[k]) for gr, k in zip(grads, ks)] \
            if grads is not None else []
        res = []
        for opt in (False, True):
            with dg.Session(graph=g, optimize=opt) as s:
                feed = {} if row.variables else dict(zip(xs, vals))
                try:
                    if init is not None:
                        s.run(init)
                    got = s.run(outs + fetch, feed)
                except Exception as e:  # noqa: BLE001
                    res.append(Outcome("run", e))
                    continue
            res.append(Outcome("ok", values=got[:len(outs)], static=[_spec(o) for o in outs],
                               grads=got[len(outs):] if grads is not None else None))
    return tuple(res)


CLEAR = (TypeError, ValueError, NotImplementedError, dg.errors.OpError)


def compare(tfo, dgo, dtype, build_stage=True):
    """None when dualgrad's outcome matches TF's, else what differs."""
    if tfo.stage != "ok":
        if dgo.stage == "ok":
            return f"TF refuses at {tfo.stage} ({_msg(tfo.error)}), dualgrad accepts"
        if not isinstance(dgo.error, CLEAR):
            return f"dualgrad refuses with an unclear {type(dgo.error).__name__}: {_msg(dgo.error)}"
        if tfo.stage == "build" and dgo.stage != "build" and build_stage:
            return f"TF refuses at build ({_msg(tfo.error)}), dualgrad only at run"
        return None
    if dgo.stage != "ok":
        return f"TF accepts, dualgrad refuses at {dgo.stage}: {type(dgo.error).__name__}: " \
               f"{_msg(dgo.error)}"
    if len(tfo.values) != len(dgo.values):
        return f"{len(tfo.values)} outputs in TF, {len(dgo.values)} in dualgrad"
    for k, (a, b, sa, sb) in enumerate(zip(tfo.values, dgo.values, tfo.static, dgo.static)):
        why = _differs(np.asarray(a), np.asarray(b), TOL) or \
            (f"static (shape, dtype) {sa} in TF, {sb} in dualgrad" if sa != sb else None)
        if why:
            return f"output {k}: {why}"
    if tfo.grads is not None:
        if dgo.grads is None:
            return "TF has a gradient, dualgrad none"
        for k, (a, b) in enumerate(zip(tfo.grads, dgo.grads)):
            why = _differs(np.asarray(a), np.asarray(b), GRAD_TOL)
            if why:
                return f"gradient {k}: {why}"
    return None


def _differs(a, b, tol):
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} in TF, {b.dtype} in dualgrad"
    if a.shape != b.shape:
        return f"shape {a.shape} in TF, {b.shape} in dualgrad"
    if a.dtype.kind == "f":
        rtol, atol = tol[a.dtype.name]
        ok = np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                         equal_nan=True)
    else:
        ok = np.array_equal(a, b)
    if not ok:
        return f"values differ: TF {_short(a)}, dualgrad {_short(b)}"
    return None


def _short(a):
    return np.array2string(a.reshape(-1)[:6], precision=4, threshold=6)


def _msg(e):
    return str(e).split("\n")[0][:160]


@dataclass
class Result:
    """One case: TF's outcome and what differs in dualgrad unoptimised / optimised."""
    tf_stage: str
    unopt: str | None
    opt: str | None


def run_case(row, dtype, seed=0):
    vals = arrays(row, dtype, seed)
    tfo = run_tf(row, dtype, vals)
    un, op = run_dg(row, dtype, vals)
    try:
        return Result(tfo.stage, compare(tfo, un, dtype), compare(tfo, op, dtype))
    except Exception as e:  # noqa: BLE001 - outputs that cannot be compared are a difference
        return Result(tfo.stage, f"cannot compare: {e!r}", f"cannot compare: {e!r}")
