"""ONNX model -> dualgrad graph: one reader rule per ONNX operator version, built from our ops.

Values known while reading (initializers, `Constant`s, and the shape arithmetic exporters
write, `Shape -> Gather -> Concat -> Reshape`) are kept as NumPy arrays and computed at
once, with the ops' own kernels; a dim unknown until run time (a dynamic batch) is None in
them. Everything else becomes graph nodes, so the imported graph is optimised like any other.

Which rule reads a node is decided in one place, `opsets.rule_for(op_type, opset)`: the
model's opset picks the operator's ONNX version (its `since_version`) and that picks the
rule written for the meaning of that version.

A graph input used where a value must be known while reading (Reshape's shape, Slice's
starts, Expand's shape, TopK's k, ...) makes it a *value input*: the model is read again for
each distinct value fed there (`OnnxGraph.run` does it, keeping the last few readings), with
that value as a constant.

The file is untrusted: the graph's structure is checked before any rule runs (every input
defined before use, no cycle, every output produced, tensor types only), no constant larger
than `max_constant_bytes` in all is computed while reading (initializers are the file's
own data: their dims must match it), and everything refused is an
`OnnxError` naming the operator, the model's opset, the node, its input dtypes and why.
"""
from __future__ import annotations

import collections
import os

import numpy as np

from dualgrad import ops

from ..core import Graph, Tensor, constant, placeholder
from .checks import check_structure, inferred_types
from .opsets import outputs_of, rule_for
from .to_onnx import OnnxError, _helper
from .values import NeedsValue, dims, partial, static

MAX_CONSTANT_BYTES = 1 << 28      # 256 MiB: the largest constant computed while reading
DTYPES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")
_READINGS = 8                     # readings kept per model with value inputs


class OnnxGraph:
    """An ONNX model read as a graph: `.graph`, `.inputs` (name -> placeholder), `.outputs`
    (tensors, in the model's order), `.output_names`, and `run(feeds)`.

    `.value_inputs` names the inputs whose values shape the graph (a Reshape's shape fed at
    run time): `run` reads the model again for each new value of them; `.graph` and
    `.outputs` are then those of the latest reading."""

    def __init__(self, source, g, inputs, outputs, output_names, value_inputs=(),
                 optimize=True):
        self._source, self.optimize = source, optimize
        self.graph, self.inputs, self.outputs = g, inputs, outputs
        self.output_names = output_names
        self.value_inputs = tuple(value_inputs)
        self._session = None
        self._readings = collections.OrderedDict()

    def __repr__(self):
        return (f"<OnnxGraph inputs={list(self.inputs)} outputs={self.output_names} "
                f"({len(self.graph.get_operations())} nodes)>")

    @property
    def session(self):
        if self._session is None:
            from ..session import Session
            self._session = Session(self.graph, optimize=self.optimize)
        return self._session

    def run(self, feeds):
        """The outputs (a list of arrays) for feeds {input name: array}."""
        unknown = set(feeds) - set(self.inputs)
        if unknown:
            raise KeyError(f"no input named {sorted(unknown)}; inputs are {list(self.inputs)}")
        og = self._reading(feeds) if self.value_inputs else self
        return og.session.run(og.outputs, {og.inputs[k]: v for k, v in feeds.items()
                                           if k not in self.value_inputs})

    def _values(self, feeds):
        values = {}
        for k in self.value_inputs:
            if k not in feeds:
                raise KeyError(f"input {k!r} must be fed: its value shapes the graph")
            values[k] = _check_value_feed(self.inputs[k], k, feeds[k])
        return values

    def _reading(self, feeds):
        values = self._values(feeds)
        while _key(values) not in self._readings:
            try:
                og = _load(self._source, values, optimize=self.optimize)
            except NeedsValue as e:    # NOTE: one more input turns out to shape the graph
                self.value_inputs += (e.name,)
                values = self._values(feeds)
                continue
            self._readings[_key(values)] = og
            if len(self._readings) > _READINGS:
                self._readings.popitem(last=False)
        og = self._readings[_key(values)]
        self.graph, self.outputs, self._session = og.graph, og.outputs, og.session
        return og


def _key(values):
    return tuple((k, v.dtype.str, v.shape, v.tobytes()) for k, v in values.items())


def _check_value_feed(p, name, v):
    v = np.asarray(v)
    want = tuple(p.shape)
    if v.dtype != p.dtype or len(v.shape) != len(want) or any(
            w is not None and w != d for w, d in zip(want, v.shape)):
        raise OnnxError(f"graph.onnx: input {name!r} takes {p.dtype.name} of shape {want}, "
                        f"got {v.dtype.name} of shape {v.shape}")
    return v


def _dtype_name(v):
    if v is None:
        return "-"
    if partial(v):
        return "int64"
    return np.dtype(v.dtype).name


class Reader:
    def __init__(self, onnx, model, where, opset, values, limit):
        self.onnx, self.model, self.where, self.opset = onnx, model, where, opset
        self.g = Graph()
        self.values = {}
        self.consts = {}
        self.fed = values            # value inputs' values: {name: array}
        self.inputs = {}
        self.limit = limit
        self.folded = 0
        self.node = None

    def describe(self, node):
        ins = ", ".join(_dtype_name(self.values.get(i)) if i else "-" for i in node.input)
        label = node.name or (node.output[0] if node.output else "(no name, no output)")
        return (f"{node.op_type} (opset {self.opset}, node '{label}', "
                f"input dtypes [{ins}])")

    def fail(self, node, msg):
        raise OnnxError(f"graph.onnx.load: {self.where}: {self.describe(node)}: {msg}")

    def tensor(self, v, node=None):
        """A graph tensor for v (a static array becomes a constant, once)."""
        if isinstance(v, Tensor):
            return v
        if partial(v):
            self.fail(node or self.node, "a shape that is only known at run time (a dynamic "
                      "dim) is used as data; dualgrad reads shapes only as reshape/expand "
                      "targets")
        key = id(v)
        if key not in self.consts:
            self.consts[key] = (v, constant(v))
        return self.consts[key][1]

    def known(self, v, what, node=None):
        """v as an array known while reading: a fed graph input becomes a value input."""
        node = node or self.node
        if static(v):
            return v
        name = self.input_name(v)
        if name is not None:
            raise NeedsValue(name)
        self.fail(node, f"{what} must be known while reading, but it is computed at run time")

    def input_name(self, v):
        for k, p in self.inputs.items():
            if p is v:
                return k
        return None

    def ints(self, v, what, node=None):
        """A list of ints known while reading (None for a dynamic dim)."""
        return dims(self.known(v, what, node))

    def check_size(self, shape, dtype, node=None, total=False):
        """Refuse a value over the limit before it is allocated; `total`: count it in the
        sum of everything computed while reading, which the limit also bounds."""
        n = 1
        node = node or self.node
        for d in shape:
            if d < 0:
                self._refuse(node, f"negative dim in shape {list(shape)}")
            n *= int(d)
        size = n * np.dtype(dtype).itemsize
        if total:
            self.folded += size
        if size > self.limit or self.folded > self.limit:
            what = "" if size > self.limit else \
                f" (with the values computed before it: {self.folded} bytes)"
            self._refuse(node, f"a constant of shape {list(shape)} "
                         f"{np.dtype(dtype).name} ({size} bytes){what} is over the limit of "
                         f"{self.limit} bytes for values computed while reading "
                         f"(load(..., max_constant_bytes=))")

    def attrs(self, node):
        h, A = self.onnx.helper, self.onnx.AttributeProto
        out = {}
        for a in node.attribute:
            if a.type in (A.GRAPH, A.GRAPHS, A.SPARSE_TENSOR, A.SPARSE_TENSORS, A.TYPE_PROTO,
                          A.TYPE_PROTOS, A.TENSORS):
                self.fail(node, f"attribute {a.name!r} of type "
                                f"{A.AttributeType.Name(a.type)} is not supported")
            if a.ref_attr_name:
                self.fail(node, f"attribute {a.name!r} refers to a function attribute")
            val = h.get_attribute_value(a)
            if a.type == A.TENSOR:
                val = self.array(val, node, f"attribute {a.name!r}")
            elif isinstance(val, bytes):
                val = val.decode(errors="replace")
            elif a.type == A.STRINGS:
                val = [s.decode(errors="replace") for s in val]
            out[a.name] = val
        return out

    def array(self, t, node=None, what="initializer"):
        """A TensorProto as an array, its dtype and size checked first."""
        where = f"{what} {t.name!r}" if t.name else what
        dt = _np_dtype(self.onnx, t.data_type)
        if dt is None or np.dtype(dt).name not in DTYPES:
            self._refuse_dtype(node, where, t.data_type)
        if t.data_location == self.onnx.TensorProto.EXTERNAL:
            self._refuse(node, f"{where} keeps its data in an external file; load the model "
                               f"with onnx.load(path) first")
        if any(d < 0 for d in t.dims):
            self._refuse(node, f"{where} has a negative dim {list(t.dims)}")
        try:
            a = self.onnx.numpy_helper.to_array(t)
        except Exception as e:                  # noqa: BLE001 -- protobuf contents vary
            self._refuse(node, f"{where} cannot be read: {type(e).__name__}: {e}")
        return np.asarray(a)

    def _refuse(self, node, msg):
        if node is not None:
            self.fail(node, msg)
        raise OnnxError(f"graph.onnx.load: {self.where}: (opset {self.opset}): {msg}")

    def _refuse_dtype(self, node, where, code):
        name = self.onnx.TensorProto.DataType.Name(code) if code in \
            self.onnx.TensorProto.DataType.values() else str(code)
        self._refuse(node, f"{where} has dtype {name.lower()}, which dualgrad does not have "
                           f"(it has {', '.join(DTYPES)})")

    def dtype(self, code, node, what):
        """The NumPy dtype for an ONNX element type, or an OnnxError naming it."""
        dt = _np_dtype(self.onnx, code)
        if dt is None or np.dtype(dt).name not in DTYPES:
            self._refuse_dtype(node, what, code)
        return np.dtype(dt)


def _np_dtype(onnx, code):
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(code))
    except Exception:                            # noqa: BLE001 -- unknown codes, strings
        return None


# -- the model ----------------------------------------------------------------------------------
def _shape_of(vi):
    out = []
    for d in vi.type.tensor_type.shape.dim:
        out.append(d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None)
    return tuple(out)


def _settled(v):
    """A shape value whose dims all became known is an ordinary int64 array again."""
    if partial(v) and not any(d is None for d in v.ravel()):
        return v.astype(np.int64)
    return v


def _consumer(gp, name):
    return next((n for n in gp.node if name in n.input), None)


def _read_inputs(r, gp):
    for t in gp.initializer:
        r.values[t.name] = r.array(t, _consumer(gp, t.name))
    for vi in gp.input:
        if vi.name in r.values:
            continue
        node = _consumer(gp, vi.name)
        where = f"graph input {vi.name!r}"
        if not vi.type.HasField("tensor_type"):
            r._refuse(node, f"{where} is a {vi.type.WhichOneof('value')} (sequence, map and "
                            f"optional values are not supported)")
        dt = r.dtype(vi.type.tensor_type.elem_type, node, where)
        if vi.name in r.fed:
            r.values[vi.name] = r.fed[vi.name]
            r.inputs[vi.name] = placeholder(dt, _shape_of(vi), name=_safe(vi.name))
            continue
        p = placeholder(dt, _shape_of(vi), name=_safe(vi.name))
        r.inputs[vi.name] = r.values[vi.name] = p


def _safe(name):
    return name.replace(":", "_") or "input"


def _check_folded_sizes(r, node):
    """A node whose inputs are all known is computed while reading: refuse it before it runs
    when ONNX's shape inference says an output is over the limit (a chain of Concats
    doubling a constant is a few hundred bytes of file)."""
    for name in node.output:
        code, shape = r.inferred.get(name, (None, None))
        if shape and None not in shape and code is not None:
            dt = _np_dtype(r.onnx, code)
            if dt is not None and dt != object:
                r.check_size(shape, dt, node, total=True)


def _run_node(r, node, rule):
    ins = [r.values[i] if i else None for i in node.input]
    r.node = node
    if all(v is None or static(v) for v in ins):
        _check_folded_sizes(r, node)
    try:
        outs = rule(r, node, ins, r.attrs(node))
    except (NeedsValue, OnnxError):
        raise
    except (ops.ShapeError, ops.KernelError, TypeError, ValueError, IndexError,
            ArithmeticError, NotImplementedError) as e:
        r.fail(node, f"{type(e).__name__}: {e}")
    outs = outputs_of(r, node, outs)
    for name, v in zip(node.output, outs):
        if name:
            r.values[name] = _settled(v)


def _read(r, value_inputs=(), optimize=True):
    gp = r.model.graph
    check_structure(r, gp)
    _read_inputs(r, gp)
    rules = [rule_for(r, node) for node in gp.node]
    r.inferred = inferred_types(r.onnx, r.model)
    for node, rule in zip(gp.node, rules):
        _run_node(r, node, rule)
    outputs = [r.tensor(r.values[o.name]) for o in gp.output]
    inputs = {k: p for k, p in r.inputs.items()}
    return OnnxGraph(None, r.g, inputs, outputs, [o.name for o in gp.output], value_inputs,
                     optimize)


def _opset(onnx, model, where):
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    opset = max(versions, default=None)
    newest = onnx.defs.onnx_opset_version()
    if opset is None and model.graph.node and model.opset_import:
        # NOTE: only other domains: the first node is refused by name in check_structure
        return max(o.version for o in model.opset_import)
    if opset is None or not 1 <= opset <= newest:
        raise OnnxError(f"graph.onnx.load: {where}: (opset {opset}): dualgrad reads opsets 1 "
                        f"to {newest} of the default domain")
    return opset


def _load(source, fed, keep=None, optimize=True):
    onnx, model, where, limit = source
    opset = _opset(onnx, model, where)
    r = Reader(onnx, model, where, opset, fed, limit)
    with r.g.as_default():
        og = _read(r, tuple(fed), optimize)
    og._source = keep
    return og


def load(path_or_model, max_constant_bytes=MAX_CONSTANT_BYTES, optimize=True) -> OnnxGraph:
    """Read an ONNX file (or a loaded ModelProto) as a dualgrad graph; see OnnxGraph.

    Each node is read with the meaning of the model's opset. Values computed while reading
    may not exceed `max_constant_bytes`, each and in all (an `OnnxError` names the node, the
    shape and the limit instead); what the reader refuses is an `OnnxError` naming the
    operator, the opset, the node and its input dtypes. `optimize=False` runs the graph
    with `graph.Session(optimize=False)` (no folding or fused kernels)."""
    onnx = _helper()
    if isinstance(path_or_model, (str, os.PathLike)):
        where = os.fspath(path_or_model)
        try:
            model = onnx.load(where)
        except Exception as e:                   # noqa: BLE001 -- any parse failure
            raise OnnxError(f"graph.onnx.load: {where}: not a readable ONNX model: "
                            f"{type(e).__name__}: {e}") from None
    else:
        model, where = path_or_model, "<model>"
    source = (onnx, model, where, int(max_constant_bytes))
    try:
        return _load(source, {}, source, optimize)
    except NeedsValue as e:
        return _pending_graph(source, (e.name,), optimize)


def _pending_graph(source, value_inputs, optimize):
    """A model with value inputs before any value is known: its inputs; run() reads it."""
    onnx, model, where, limit = source
    r = Reader(onnx, model, where, _opset(onnx, model, where), {}, limit)
    with r.g.as_default():
        _read_inputs(r, model.graph)
    return OnnxGraph(source, r.g, dict(r.inputs), None, [o.name for o in model.graph.output],
                     value_inputs, optimize)
