"""`export(fn, args)`: eager code captured once into a self-contained inference program.

torch.export's job: the function runs with tracers (the compile() tracer, see tracer.py) in
eval mode, its parameters are frozen into the graph as constants, and what comes out is an
`ExportedProgram`, a `graph.Graph` with its input placeholders and output tensors. It runs
on NumPy arrays or eager tensors, saves as JSON + safetensors, and loads and runs in a
process that never imports the code that built it.

The first dim of every input is dynamic (`dynamic_batch=True`): the function is traced at
the example's batch size and at one more, and what differs between the two traces is what
depends on the batch (a reshape's batch entry becomes -1, a placeholder's first dim None).
What cannot follow the batch (a Python number or a constant computed from `x.shape[0]`, a
branch on it) is an `ExportError` naming the line; `dynamic_batch=False` fixes the batch.

>>> import numpy as np
>>> from dualgrad import eager, compiler
>>> from dualgrad.eager import nn
>>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
>>> ep = compiler.export(model, (np.ones((2, 4), np.float32),))
>>> [p.shape for p in ep.inputs], ep(np.ones((5, 4), np.float32)).shape
([TensorShape([None, 4])], (5, 3))
"""
from __future__ import annotations

import os

import numpy as np

from dualgrad.ops.core import quiet_broadcast
from dualgrad import graph, ops
from dualgrad.eager.core import Tensor, array_of
from dualgrad.graph.core import op_by_name
from dualgrad.graph.errors import GraphFileError
from dualgrad.ops.core import ShapeError, Spec, fmt_shape, tracing, where_str

from .signatures import leaf_names, modules_reached
from .tracer import GraphBreak, Trace, flatten_out

__all__ = ["export", "load_exported", "ExportedProgram", "ExportError"]

_CONST, _PLACEHOLDER = op_by_name("const"), op_by_name("placeholder")


class ExportError(ValueError):
    """What cannot be exported, naming the user's line."""


# -- the program ------------------------------------------------------------------------------
class ExportedProgram:
    """A graph with its inputs (placeholders) and outputs (tensors), callable like the function.

    `ep(x)` takes NumPy arrays (returns arrays) or eager tensors (returns eager tensors), with
    any batch size when the batch is dynamic; results have the structure fn returned (a tensor,
    a tuple, a list or a dict of them).
    """

    def __init__(self, g, inputs, outputs, tree, name="program"):
        self.graph, self.inputs, self.outputs = g, list(inputs), list(outputs)
        self.tree, self.name = tree, name
        self._session = None

    def __repr__(self):
        ins = ", ".join(f"{p.node.name}: {fmt_shape(p.spec)} {p.dtype.name}" for p in self.inputs)
        outs = ", ".join(f"{fmt_shape(t.spec)} {t.dtype.name}" for t in self.outputs)
        return f"<ExportedProgram {self.name}({ins}) -> ({outs})>"

    @property
    def session(self):
        """The graph.Session (optimize=True) that runs the program."""
        if self._session is None:
            self._session = graph.Session(self.graph, optimize=True)
        return self._session

    @classmethod
    def from_graph(cls, inputs, outputs, session=None, name="graph"):
        """A TF1 graph's inference part as a program: what `outputs` need from `inputs`
        (placeholders), variables frozen with their values in `session`."""
        from dualgrad.graph.freeze import freeze
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        g, ins, outs = freeze(list(inputs), outputs, session)
        tree = {"list": [{"out": i} for i in range(len(outs))]} if len(outs) > 1 else {"out": 0}
        return cls(g, ins, outs, tree, name)

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise TypeError(f"{self.name}: takes {len(self.inputs)} input(s) "
                            f"({', '.join(p.node.name for p in self.inputs)}), got {len(args)}")
        as_eager = any(isinstance(a, Tensor) for a in args)
        feeds = {p: array_of(a) if isinstance(a, Tensor) else a
                 for p, a in zip(self.inputs, args)}
        vals = self.session.run(self.outputs, feeds)
        outs = [Tensor(np.asarray(v)) if as_eager else np.asarray(v) for v in vals]
        return _rebuild(self.tree, outs)

    def save(self, path):
        """Write `path.json` (the graph and the program's signature) and `path.safetensors`
        (every constant, i.e. the weights). Returns the JSON file's path."""
        exported = {"name": self.name, "inputs": [p.name for p in self.inputs],
                    "outputs": [t.name for t in self.outputs], "tree": self.tree}
        return graph.save(path, graph=self.graph, extra={"exported": exported})

    def to_onnx(self, path, opset=17):
        """Write the program as an ONNX model (inputs named as the function's arguments,
        outputs `output_0`, ...), checked with onnx.checker. Needs the `onnx` extra."""
        from dualgrad.graph import onnx as gonnx
        names = [f"output_{i}" for i in range(len(self.outputs))]
        return gonnx.export(path, inputs=self.inputs, outputs=self.outputs, opset=opset,
                            output_names=names)


def load_exported(path) -> ExportedProgram:
    """An ExportedProgram saved with `ep.save(path)`; no code of the model is needed."""
    g = graph.load(path)
    jpath = os.fspath(path)
    jpath = jpath if jpath.endswith(".json") else \
        jpath.removesuffix(".safetensors") + ".json"
    ex = g.saved_extra.get("exported")
    if not isinstance(ex, dict):
        raise GraphFileError(f"{jpath} is a graph, not an exported program (no 'exported' "
                             f"field): load it with graph.load")
    try:
        inputs = [g.get_tensor_by_name(n) for n in ex["inputs"]]
        outputs = [g.get_tensor_by_name(n) for n in ex["outputs"]]
        _check_tree(ex["tree"], len(outputs))
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as e:
        raise GraphFileError(f"{jpath}: malformed 'exported' field: {e}") from None
    if any(p.node.type != "placeholder" for p in inputs):
        raise GraphFileError(f"{jpath}: an input of the exported program is not a placeholder")
    return ExportedProgram(g, inputs, outputs, ex["tree"], str(ex.get("name", "program")))


# -- output structure (JSON-friendly, so a saved program rebuilds it) ---------------------------
def _to_tree(t):
    kind = t[0]
    if kind == "out":
        return {"out": t[1]}
    if kind == "const":
        if t[1] is None or isinstance(t[1], (bool, int, float, str)):
            return {"const": t[1]}
        raise ExportError(f"export: the function returns {t[1]!r}, which is neither a tensor "
                          f"nor a plain Python value")
    if kind == "dict":
        return {"dict": [[k, _to_tree(v)] for k, v in t[2]]}
    return {kind: [_to_tree(v) for v in t[2]]}


def _rebuild(tree, outs):
    if "out" in tree:
        return outs[tree["out"]]
    if "const" in tree:
        return tree["const"]
    if "dict" in tree:
        return {k: _rebuild(v, outs) for k, v in tree["dict"]}
    kind = "tuple" if "tuple" in tree else "list"
    items = [_rebuild(v, outs) for v in tree[kind]]
    return tuple(items) if kind == "tuple" else items


def _check_tree(tree, n, depth=0):
    """A loaded output structure is one _to_tree writes: else ValueError (load names the file)."""
    if depth > 100:
        raise ValueError("output structure nested more than 100 levels deep")
    if not isinstance(tree, dict) or len(tree) != 1:
        raise ValueError(f"bad output structure {str(tree)[:80]}")
    (kind, v), = tree.items()
    if kind == "out" and not (type(v) is int and 0 <= v < n):
        raise ValueError(f"output index {str(v)[:80]} out of range")
    if kind == "const" and not (v is None or isinstance(v, (bool, int, float, str))):
        raise ValueError(f"a constant output is a {type(v).__name__}")
    if kind not in ("out", "const", "tuple", "list", "dict") or \
            kind != "out" and kind != "const" and not isinstance(v, list):
        raise ValueError(f"bad output structure {str(tree)[:80]}")
    for x in v if kind in ("tuple", "list") else ():
        _check_tree(x, n, depth + 1)
    for pair in v if kind == "dict" else ():
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) in (str, int)):
            raise ValueError(f"bad dict item in the output structure: {str(pair)[:80]}")
        _check_tree(pair[1], n, depth + 1)


# -- tracing ----------------------------------------------------------------------------------
class _Traced:
    """One trace of fn at one batch size."""

    def __init__(self, tr, phs, fetches, tree, batch):
        self.tr, self.phs, self.fetches, self.tree, self.batch = tr, phs, fetches, tree, batch


def _trace(fn, tensors, names, roots, name, batch):
    params = [p for r in roots for p in r.named_parameters()]
    tr = Trace(name, params)
    with tr.graph.as_default(), tracing(tr):
        phs = [graph.placeholder(t.dtype, t.shape, name=n) for t, n in zip(tensors, names)]
        err = None
        try:
            result = fn(*[tr.wrap(p, False) for p in phs])
            err = tr.breaks[0] if tr.breaks else tr.changed_in_place()
            leaves = []
            tree = flatten_out(result, tr, leaves)
        except GraphBreak as e:
            err = tr.breaks[0] if tr.breaks else e
        except Exception:
            if not tr.breaks:
                raise                 # the user's own error (a ShapeError at their line)
            err = tr.breaks[0]
    if err is not None:
        raise ExportError(f"export({name}): graph break at {where_str(err.loc)}: {err.what} "
                          f"cannot be exported (export has no eager fallback). To export "
                          f"it: {err.hint}") from None
    if tr.randoms:
        raise ExportError(f"export({name}): random numbers are drawn in the function "
                          f"(F.dropout(training=True)?); export is inference: use modules' "
                          f"eval mode or pass training=self.training")
    return _Traced(tr, phs, [g for g, _ in leaves], _to_tree(tree), batch)


def _as_tensor(a, i):
    if isinstance(a, Tensor):
        return Tensor(np.asarray(array_of(a)))
    if isinstance(a, np.ndarray):
        return Tensor(a)
    raise TypeError(f"export: example input {i} is {type(a).__name__}; pass eager tensors or "
                    f"NumPy arrays (bind other arguments with a lambda or functools.partial)")


def _resized(t, batch):
    if t.ndim == 0:
        raise ExportError("export: a 0-d example input has no batch dim; pass "
                          "dynamic_batch=False, or give it one")
    return Tensor(np.zeros((batch,) + t.shape[1:], t.dtype))


def export(fn, args, *, dynamic_batch=True) -> ExportedProgram:
    """Trace fn (a function or an eager.nn.Module) on `args` into an ExportedProgram.

    Modules fn reaches run in eval mode (dropout off, batch norm's running statistics);
    their training flags are restored afterwards. See the module docstring.
    """
    if not callable(fn):
        raise TypeError(f"export() needs a function or an eager.nn.Module, got {fn!r}")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    tensors = [_as_tensor(a, i) for i, a in enumerate(args)]
    name = getattr(fn, "__qualname__", type(fn).__name__)
    roots, mods = modules_reached(fn)
    names = leaf_names(fn, tensors, {})
    flags = [m.training for m in mods]
    for m in mods:
        object.__setattr__(m, "training", False)
    try:
        first = _trace(fn, tensors, names, roots, name, tensors[0].shape[0] if tensors and
                       tensors[0].ndim else None)
        second = None
        if dynamic_batch and tensors:
            b2 = first.batch + 1
            second = _trace(fn, [_resized(t, b2) for t in tensors], names, roots, name, b2)
    finally:
        for m, f in zip(mods, flags):
            object.__setattr__(m, "training", f)
    if dynamic_batch:
        for t, n in zip(tensors, names):
            if t.shape[0] != first.batch:
                raise ExportError(f"export: inputs disagree on the batch size ({names[0]} has "
                                  f"{first.batch}, {n} has {t.shape[0]}); pass "
                                  f"dynamic_batch=False to export fixed shapes")
    g, inputs, outputs = _Freezer(first, second, name).run()
    return ExportedProgram(g, inputs, outputs, first.tree, name)


# -- freezing: the trace(s) become one inference graph ------------------------------------------
class _Freezer:
    """Rebuild the first trace into a new graph: parameters as constants, pass-through ops
    dropped, and (given a second trace at another batch size) the batch dim made dynamic."""

    def __init__(self, first, second, name):
        self.a, self.b, self.name = first, second, name
        self.g = graph.Graph()
        self.g.promote_dtypes = True       # NOTE: eager code's dtypes, not TF1's
        self.map = {}      # id(tensor of the first trace) -> tensor of the new graph
        self.args = {id(p.node): i for i, p in enumerate(first.phs)}
        self.live = {id(p.node): t for t, p in first.tr.live}
        self.inputs = [None] * len(first.phs)

    def run(self):
        na = self.a.tr.graph.get_operations()
        nb = None if self.b is None else self.b.tr.graph.get_operations()
        if nb is not None and len(na) != len(nb):
            raise ExportError(self._differs(na[min(len(na), len(nb)) - 1]))
        with self.g.as_default():
            for i, n in enumerate(na):
                m = None if nb is None else nb[i]
                if m is not None and (n.type != m.type or _wiring(n) != _wiring(m)):
                    raise ExportError(self._differs(n))
                self._copy_node(n, m)
        outputs = [self._out(t) for t in self.a.fetches]
        return self.g, self.inputs, outputs

    def _out(self, t):
        return self.map[id(t)]

    def _differs(self, n):
        return (f"export({self.name}): the function builds a different graph at batch size "
                f"{self.a.batch} than at {self.b.batch} (first at {n.type} built at "
                f"{where_str(n.loc)}): Python code depends on the batch size (a loop or a "
                f"branch on x.shape[0]?). Pass dynamic_batch=False to fix the batch size")

    def _copy_node(self, n, m):
        if n.type == "placeholder":
            return self._placeholder(n)
        if n.type == "const":
            return self._const(n, m)
        ins = [self.map[id(t)] for t in n.inputs]
        if n.op.inference_identity:
            self.map[id(n.outputs[0])] = ins[0]
            return
        if n.op.kernel is None:
            raise ExportError(f"export({self.name}): {n.type} (built at {where_str(n.loc)}) "
                              f"cannot be exported")
        attrs = n.attrs if m is None else self._attrs(n, m)
        try:
            with quiet_broadcast():   # NOTE: warned when the function was traced
                spec = n.op.infer(*[t.spec for t in ins], **attrs)
        except ShapeError as e:
            raise ExportError(f"export({self.name}): {n.type} built at {where_str(n.loc)} "
                              f"does not hold for a dynamic batch: {e}") from None
        node = self.g.create_node(n.op, ins, attrs, [spec], n.name, loc=n.loc)
        node.built_by = n.built_by
        self.map[id(n.outputs[0])] = node.outputs[0]

    def _placeholder(self, n):
        i = self.args.get(id(n))
        if i is not None:
            shape = n.outputs[0].shape
            if self.b is not None:
                shape = (None,) + tuple(shape[1:])
            p = graph.placeholder(n.outputs[0].dtype, shape, name=n.name)
            self.inputs[i] = p
        elif id(n) in self.live:
            t = self.live[id(n)]
            p = self._constant(np.array(array_of(t), copy=True), n)
        else:
            raise ExportError(f"export({self.name}): input {n.name} (built at "
                              f"{where_str(n.loc)}) is neither an argument nor a parameter")
        self.map[id(n.outputs[0])] = p

    def _constant(self, value, n, weak=None):
        value.flags.writeable = False
        spec = Spec(value.shape, value.dtype, weak=weak)
        node = self.g.create_node(_CONST, (), {"value": value}, [spec], n.name, loc=n.loc)
        return node.outputs[0]

    def _const(self, n, m):
        v = n.attrs["value"]
        weak = n.outputs[0].spec.weak
        w = None if m is None else m.attrs["value"]
        if w is None or (v.shape == w.shape and np.array_equal(v, w, equal_nan=True)):
            self.map[id(n.outputs[0])] = self._constant(np.array(v, copy=True), n, weak)
            return
        if v.ndim and v.shape[1:] == w.shape[1:] and (v.shape[0], w.shape[0]) == (
                self.a.batch, self.b.batch) and (v == v[:1]).all() and (w == v[:1]).all():
            self.map[id(n.outputs[0])] = self._batch_rows(np.array(v[:1]), n, weak)
            return
        raise ExportError(f"export({self.name}): a value built at {where_str(n.loc)} depends "
                          f"on the batch size ({fmt_shape(v.shape)} at batch {self.a.batch}, "
                          f"{fmt_shape(w.shape)} at {self.b.batch}) and is not one row repeated: "
                          f"compute it from the inputs with ops, or pass dynamic_batch=False")

    def _batch_rows(self, row, n, weak):
        """A constant whose rows are all `row` and whose first dim is the batch (a zero
        initial state): row broadcast over a dynamic batch taken from the first input."""
        x = self.inputs[0]
        col = ops.slice_(x, index=(slice(None),) + (0,) * (x.ndim - 1))
        zeros = ops.reshape(ops.zeros_like(col, dtype=row.dtype), (-1,) + (1,) * (row.ndim - 1))
        return ops.add(zeros, self._constant(row, n, weak))

    def _attrs(self, n, m):
        out = {}
        for k, v in n.attrs.items():
            w = m.attrs.get(k)
            if _same(v, w):
                out[k] = v
            elif n.type == "reshape" and k == "shape":
                out[k] = self._reshape(n, m)
            else:
                raise ExportError(f"export({self.name}): {n.type} built at {where_str(n.loc)} "
                                  f"has {k}={v!r} at batch size {self.a.batch} but {w!r} at "
                                  f"{self.b.batch}: it depends on the batch size in a way a "
                                  f"dynamic batch cannot follow. Pass dynamic_batch=False")
        return out

    def _reshape(self, n, m):
        sa, sb = n.outputs[0].shape, m.outputs[0].shape
        moving = [i for i, (p, q) in enumerate(zip(sa, sb)) if p != q]
        if len(moving) != 1:
            raise ExportError(f"export({self.name}): reshape built at {where_str(n.loc)} to "
                              f"{fmt_shape(sa)} at batch size {self.a.batch} and "
                              f"{fmt_shape(sb)} at {self.b.batch}: more than one dim follows "
                              f"the batch. Keep the batch in one dim, or dynamic_batch=False")
        return tuple(-1 if i == moving[0] else d for i, d in enumerate(sa))


def _wiring(n):
    return [(t.node.id, t.index) for t in n.inputs]


def _same(v, w):
    if isinstance(v, np.ndarray) or isinstance(w, np.ndarray):
        return isinstance(v, np.ndarray) and isinstance(w, np.ndarray) and \
            v.shape == w.shape and np.array_equal(v, w)
    try:
        return bool(v == w) and type(v) is type(w)
    except (TypeError, ValueError):
        return False
