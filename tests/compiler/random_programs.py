"""Random programs over every dtype, and their interpreters: eager, compile(), torch, graph.

A program is a list of steps over a growing list of values (the inputs first). It is written
once and run by each interpreter:

- `run_eager(prog, arrays)`: dualgrad.eager (PyTorch's front end);
- `run_torch(prog, arrays)`: torch itself, the oracle for eager's dtypes and values;
- `graph_program(prog, dtypes)`: the same program in TF1's strict graph front end, with the
  explicit casts TF1 asks for (every operand cast to the dtype eager computes the step in,
  a bool or narrow integer sum cast to int64 first), so it is valid under TF1's rules and
  computes what eager does; run unoptimised and optimised.

`generate(seed)` builds a program step by step, keeping a step only when torch and eager both
run it (so every program is valid PyTorch code; where eager accepts what torch refuses, e.g.
`abs` of a bool tensor, the step is drawn again) and its values stay small and finite (float-to-integer
casts of huge or non-finite values are undefined in C, PyTorch and NumPy alike).
"""
from __future__ import annotations

import numpy as np

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SHAPES = [(3, 4), (4,), (1, 4), (3, 1), ()]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"]
SCALARS = [0, 1, 2, -1, 0.5, 2.5, 1.0, True]
SCALAR_OPS = ["add", "sub", "mul", "div", "floordiv", "mod", "eq", "lt", "gt"]
UNARY = ["neg", "abs"]
REDUCE = ["sum", "prod", "amax", "mean", "any", "all"]
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
_ARITH = {"add", "sub", "mul", "div", "maximum", "minimum", "floordiv", "mod"}


def random_array(rng, dtype, shape):
    """Small values on a grid (quarter steps for floats): sums and products stay exact."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "u":
        return rng.integers(0, 4, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-3, 4, shape).astype(dt)
    return (rng.integers(-8, 9, shape) / 4).astype(dt)


def generate(seed, n_inputs=None, n_steps=None):
    """(program, input arrays, which inputs are graph constants) for one seed."""
    rng = np.random.default_rng(seed)
    n_inputs = n_inputs or int(rng.integers(2, 4))
    arrays = [random_array(rng, DTYPES[rng.integers(len(DTYPES))],
                           SHAPES[rng.integers(len(SHAPES))]) for _ in range(n_inputs)]
    const = [bool(rng.random() < 0.3) for _ in arrays]
    prog, vals, tvals = [], run_eager([], arrays), run_torch([], arrays)
    want = n_steps or int(rng.integers(3, 8))
    tries = 0
    while len(prog) < want and tries < 60:
        tries += 1
        step = _random_step(rng, vals)
        if step[0] == "scalar" and step[3] < 0 and vals[step[2]].dtype == np.uint8:
            continue   # NOTE: NumPy 2 refuses uint8 op -1 (out of range), torch wraps -1
        try:
            tout = run_step(TORCH, step, tvals)
            out = run_step(EAGER, step, vals)
        except Exception:  # noqa: BLE001 - not a valid PyTorch step: draw another
            continue
        a = out.numpy()
        if a.dtype.kind == "f" and (not np.all(np.isfinite(a)) or np.abs(a).max(initial=0) > 64):
            continue
        if a.dtype.kind in "iu" and np.abs(a.astype(np.int64)).max(initial=0) > 2 ** 20:
            continue
        prog.append(step)
        vals.append(out)
        tvals.append(tout)
    return prog, arrays, const


def _random_step(rng, vals):
    n = len(vals)
    pick = lambda: int(rng.integers(n))   # noqa: E731
    r = rng.random()
    if r < 0.3:
        return ("binary", BINARY[rng.integers(len(BINARY))], pick(), pick())
    if r < 0.5:
        return ("scalar", SCALAR_OPS[rng.integers(len(SCALAR_OPS))], pick(),
                SCALARS[rng.integers(len(SCALARS))])
    if r < 0.6:
        return ("unary", UNARY[rng.integers(len(UNARY))], pick())
    if r < 0.72:
        return ("cast", DTYPES[rng.integers(len(DTYPES))], pick())
    if r < 0.8:
        return ("where", pick(), pick(), pick())
    axis = [None, -1, 0][rng.integers(3)]
    x = pick()
    if vals[x].ndim == 0:
        axis = None   # NOTE: PyTorch takes dim 0 and -1 of a 0-d tensor, TF1 does not
    return ("reduce", REDUCE[rng.integers(len(REDUCE))], x, axis,
            axis is not None and bool(rng.random() < 0.3))


# -- interpreters ---------------------------------------------------------------------------
class _Eager:
    """dualgrad.eager, and (with `lib=torch`) torch: the same calls, PyTorch's names."""

    def __init__(self, lib):
        self.lib = lib

    def dtype(self, name):
        return getattr(self.lib, name)

    def binary(self, op, x, y):
        lib = self.lib
        fn = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
              "div": lambda: x / y, "floordiv": lambda: x // y, "mod": lambda: x % y,
              "maximum": lambda: lib.maximum(x, y), "minimum": lambda: lib.minimum(x, y),
              "eq": lambda: x == y, "ne": lambda: x != y, "lt": lambda: x < y,
              "le": lambda: x <= y, "gt": lambda: x > y, "ge": lambda: x >= y}[op]
        if op in ("maximum", "minimum") and not hasattr(y, "shape"):
            y = lib.tensor(y)
        return fn()

    def unary(self, op, x):
        return -x if op == "neg" else x.abs()

    def cast(self, dtype, x):
        return x.to(self.dtype(dtype))

    def where(self, c, x, y):
        return self.lib.where(c if c.dtype == self.lib.bool else c > 0, x, y)

    def reduce(self, op, x, axis, keep):
        if op in ("any", "all"):
            return getattr(x, op)()
        if axis is None:
            return getattr(x, op)()
        if op == "amax":
            return x.amax(axis, keep)
        return getattr(x, op)(axis, keepdim=keep)


def _torch():
    import torch
    return torch


class _Lazy:
    def __init__(self, make):
        self._make, self._it = make, None

    def __getattr__(self, name):
        if self._it is None:
            self._it = self._make()
        return getattr(self._it, name)


def _eager_lib():
    from dualgrad import eager
    return eager


EAGER = _Eager(_Lazy(_eager_lib))
TORCH = _Eager(_Lazy(_torch))


def run_step(interp, step, vals):
    kind = step[0]
    if kind == "binary":
        return interp.binary(step[1], vals[step[2]], vals[step[3]])
    if kind == "scalar":
        return interp.binary(step[1], vals[step[2]], step[3])
    if kind == "unary":
        return interp.unary(step[1], vals[step[2]])
    if kind == "cast":
        return interp.cast(step[1], vals[step[2]])
    if kind == "where":
        return interp.where(vals[step[1]], vals[step[2]], vals[step[3]])
    return interp.reduce(step[1], vals[step[2]], step[3], step[4])


def run_program(interp, prog, inputs):
    vals = list(inputs)
    for step in prog:
        vals.append(run_step(interp, step, vals))
    return vals


def run_eager(prog, arrays):
    from dualgrad import eager
    return run_program(EAGER, prog, [eager.tensor(a.copy()) for a in arrays])


def run_torch(prog, arrays):
    torch = _torch()
    return run_program(TORCH, prog, [torch.tensor(a.copy()) for a in arrays])


# -- TF1's graph front end -------------------------------------------------------------------
def graph_program(prog, arrays, const, dtypes, shapes):
    """The program built with the graph API (TF1's strict dtypes), every operand cast to the
    dtype eager computes the step in (`dtypes[k]`: eager's dtype of each value; the compute
    dtype of a comparison is torch's result_type of its operands). Returns (graph, fetches,
    feeds)."""
    from dualgrad import graph
    torch = _torch()
    g = graph.Graph()
    with g.as_default():
        feeds, vals = {}, []
        for a, c in zip(arrays, const):
            if c:
                vals.append(graph.constant(a))
            else:
                p = graph.placeholder(a.dtype, a.shape)
                feeds[p] = a
                vals.append(p)
        for k, step in enumerate(prog):
            out = dtypes[len(arrays) + k], shapes[len(arrays) + k]
            vals.append(_graph_step(graph, torch, step, vals, dtypes, out))
    return g, vals, feeds


def _tdt(torch, dt):
    return torch.empty(0, dtype=getattr(torch, np.dtype(dt).name)).dtype


def _compute_dtype(torch, step, dtypes, out_dt):
    """The dtype a comparison's operands are compared in (torch.result_type)."""
    kind, op = step[0], step[1]
    if kind == "binary":
        a = torch.empty((1,) * (len(SHAPES[0])), dtype=_tdt(torch, dtypes[step[2]]))
        b = torch.empty((1,) * (len(SHAPES[0])), dtype=_tdt(torch, dtypes[step[3]]))
        return np.dtype(str(torch.result_type(a, b)).replace("torch.", ""))
    a = torch.empty((1,), dtype=_tdt(torch, dtypes[step[2]]))
    return np.dtype(str(torch.result_type(a, step[3])).replace("torch.", ""))


def _graph_step(graph, torch, step, vals, dtypes, out):
    kind, (out_dt, out_shape) = step[0], out
    cast = lambda x, dt: x if x.dtype == np.dtype(dt) else graph.cast(x, np.dtype(dt))  # noqa
    if kind in ("binary", "scalar"):
        op = step[1]
        dt = _compute_dtype(torch, step, dtypes, out_dt) if op in _COMPARE else out_dt
        # NOTE: TF1 compares and does arithmetic on bools only with equal/not_equal: as int8
        dt = np.int8 if np.dtype(dt) == np.bool_ and op not in ("eq", "ne") else dt
        x = cast(vals[step[2]], dt)
        y = cast(vals[step[3]], dt) if kind == "binary" else \
            graph.constant(np.asarray(step[3], dt))
        fn = {"add": graph.add, "sub": graph.subtract, "mul": graph.multiply,
              "div": graph.divide, "floordiv": graph.floordiv, "mod": graph.floormod,
              "maximum": graph.maximum, "minimum": graph.minimum, "eq": graph.equal,
              "ne": graph.not_equal, "lt": graph.less, "le": graph.less_equal,
              "gt": graph.greater, "ge": graph.greater_equal}[op]
        return cast(fn(x, y), out_dt)
    if kind == "unary":
        x = vals[step[2]]
        if x.dtype == np.uint8:     # NOTE: TF1's neg and abs are for signed types: wrap as torch
            return graph.subtract(graph.zeros_like(x), x) if step[1] == "neg" else x
        return graph.negative(x) if step[1] == "neg" else graph.abs(x)
    if kind == "cast":
        return cast(vals[step[2]], step[1])
    if kind == "where":
        c = vals[step[1]]
        c = c if c.dtype == np.bool_ else graph.greater(c, graph.constant(np.asarray(0, c.dtype)))
        # NOTE: TF1's where with a vector condition picks rows: broadcast as PyTorch's does
        full = [graph.broadcast_to(v, out_shape) for v in (c, cast(vals[step[2]], out_dt),
                                                          cast(vals[step[3]], out_dt))]
        return graph.where(*full)
    op, x, axis, keep = step[1], vals[step[2]], step[3], step[4]
    if op in ("any", "all"):
        b = x if x.dtype == np.bool_ else \
            graph.not_equal(x, graph.constant(np.asarray(0, x.dtype)))
        return cast((graph.reduce_any if op == "any" else graph.reduce_all)(b), out_dt)
    if op == "amax" and x.dtype == np.bool_:
        m = graph.reduce_max(graph.cast(x, np.int32), axis=axis, keepdims=keep)
        return graph.cast(m, np.bool_)
    fn = {"sum": graph.reduce_sum, "prod": graph.reduce_prod, "amax": graph.reduce_max,
          "mean": graph.reduce_mean}[op]
    return fn(cast(x, out_dt), axis=axis, keepdims=keep)
