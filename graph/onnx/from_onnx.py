"""ONNX model -> dualgrad graph: one reader rule per ONNX op, each built from our ops.

Values known while reading (initializers, `Constant`s, and the shape arithmetic exporters
write, `Shape -> Gather -> Concat -> Reshape`) are kept as NumPy arrays and computed at
once; a dim unknown until run time (a dynamic batch) is None in them. Everything else
becomes graph nodes, so the imported graph is optimised (folded, fused) like any other.
An ONNX op (or an attribute value) the reader does not know is an `OnnxError` naming it.
"""
from __future__ import annotations

import os

import numpy as np

from dualgrad import ops

from ..core import Graph, Tensor, constant, placeholder
from .to_onnx import OnnxError, _helper

BIG = 2 ** 62     # Slice ends at or past this mean "to the end"


class OnnxGraph:
    """An ONNX model read as a graph: `.graph`, `.inputs` (name -> placeholder), `.outputs`
    (tensors, in the model's order), `.output_names`, and `run(feeds)`."""

    def __init__(self, g, inputs, outputs, output_names):
        self.graph, self.inputs, self.outputs = g, inputs, outputs
        self.output_names = output_names
        self._session = None

    def __repr__(self):
        return (f"<OnnxGraph inputs={list(self.inputs)} outputs={self.output_names} "
                f"({len(self.graph.get_operations())} nodes)>")

    @property
    def session(self):
        if self._session is None:
            from ..session import Session
            self._session = Session(self.graph, optimize=True)
        return self._session

    def run(self, feeds):
        """The outputs (a list of arrays) for feeds {input name: array}."""
        unknown = set(feeds) - set(self.inputs)
        if unknown:
            raise KeyError(f"no input named {sorted(unknown)}; inputs are {list(self.inputs)}")
        return self.session.run(self.outputs, {self.inputs[k]: v for k, v in feeds.items()})


# -- values known while reading ---------------------------------------------------------------
def _static(v):
    return isinstance(v, np.ndarray)


def _partial(v):
    return _static(v) and v.dtype == object


def _dims(v):
    """A static shape vector as a list with None for unknown dims."""
    return [None if d is None else int(d) for d in np.asarray(v).reshape(-1).tolist()]


class Reader:
    def __init__(self, onnx, model, where):
        self.onnx, self.model, self.where = onnx, model, where
        self.g = Graph()
        self.values = {}
        self.consts = {}

    def fail(self, node, msg):
        raise OnnxError(f"graph.onnx.load: {self.where}: {node.op_type} (node "
                        f"'{node.name or node.output[0]}'): {msg}")

    def tensor(self, v, node=None):
        """A graph tensor for v (a static array becomes a constant, once)."""
        if isinstance(v, Tensor):
            return v
        if _partial(v):
            self.fail(node, "a shape that is only known at run time (a dynamic dim) is used "
                            "as data; dualgrad reads shapes only as reshape/expand targets")
        key = id(v)
        if key not in self.consts:
            self.consts[key] = (v, constant(v))
        return self.consts[key][1]

    def attrs(self, node):
        h = self.onnx.helper
        out = {}
        for a in node.attribute:
            val = h.get_attribute_value(a)
            if a.type == self.onnx.AttributeProto.TENSOR:
                val = self.onnx.numpy_helper.to_array(val)
            elif isinstance(val, bytes):
                val = val.decode()
            out[a.name] = val
        return out


# -- rules: (reader, node, input values, attrs) -> list of output values ----------------------
def primitive_for(op_type):
    """The primitive whose registry entry names ONNX operator `op_type` (`onnx=`), or None.
    RULES below take precedence for the operators that need more (Div's integer semantics,
    variadic Max/Min)."""
    for name, op in ops.REGISTRY.items():
        if op.onnx == op_type:
            return name
    return None
_PY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "div": lambda a, b: a // b}


def _shape_arith(r, node, name, ins):
    """+, -, *, / on shape values with unknown (None) dims: None wherever one is None."""
    if name not in _PY or len(ins) != 2:
        r.fail(node, "arithmetic on a dynamic shape")
    a, b = np.broadcast_arrays(*ins)
    return np.array([None if x is None or y is None else _PY[name](x, y)
                     for x, y in zip(a.ravel(), b.ravel())], object).reshape(a.shape)


def _elementwise(r, node, ins, at):
    name = primitive_for(node.op_type)
    if all(_static(v) for v in ins):
        if any(_partial(v) for v in ins):
            return [_shape_arith(r, node, name, ins)]
        return [np.asarray(ops.REGISTRY[name].kernel(*ins))]
    return [ops.REGISTRY[name].fn(*[r.tensor(v, node) for v in ins])]


def _div(r, node, ins, at):
    a, b = ins
    if _static(a) and _static(b) and (_partial(a) or _partial(b)):
        return [_shape_arith(r, node, "div", ins)]
    if _static(a) and _static(b):
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return [np.asarray(np.trunc(a / b)).astype(np.result_type(a, b))]
        return [np.asarray(a / b)]
    dts = [v.dtype for v in ins]
    if all(np.dtype(d).kind in "iu" for d in dts):
        r.fail(node, "integer division of tensors is not supported (dualgrad's div is "
                     "true division)")
    return [ops.div(r.tensor(a, node), r.tensor(b, node))]


def _variadic(fn):
    def rule(r, node, ins, at):
        out = r.tensor(ins[0], node)
        for v in ins[1:]:
            out = fn(out, r.tensor(v, node))
        return [out]
    return rule


def _not(r, node, ins, at):
    if _static(ins[0]):
        return [np.logical_not(ins[0])]
    return [ops.eq(r.tensor(ins[0], node), False)]


def _identity(r, node, ins, at):
    return [ins[0]] + [None] * (len(node.output) - 1)


def _cast(r, node, ins, at):
    dt = r.onnx.helper.tensor_dtype_to_np_dtype(at["to"])
    if _static(ins[0]):
        return [ins[0] if _partial(ins[0]) else ins[0].astype(dt)]
    return [ops.cast(ins[0], np.dtype(dt).name)]


def _constant(r, node, ins, at):
    if "value" in at:
        return [np.asarray(at["value"])]
    for k, dt in (("value_float", np.float32), ("value_floats", np.float32),
                  ("value_int", np.int64), ("value_ints", np.int64)):
        if k in at:
            return [np.asarray(at[k], dt)]
    r.fail(node, f"unsupported constant attribute {sorted(at)}")


def _shape(r, node, ins, at):
    dims = list(ins[0].shape)
    dims = dims[at.get("start", 0):at.get("end", len(dims))]
    return [np.array(dims, object) if None in dims else np.asarray(dims, np.int64)]


def _constant_of_shape(r, node, ins, at):
    dims = _dims(ins[0])
    if None in dims:
        r.fail(node, "a shape only known at run time")
    value = np.asarray(at.get("value", np.zeros(1, np.float32))).reshape(-1)
    return [np.full(dims, value[0], value.dtype)]


def _range(r, node, ins, at):
    if not all(_static(v) and not _partial(v) for v in ins):
        r.fail(node, "Range needs start, limit and delta known while reading")
    return [np.arange(ins[0], ins[1], ins[2]).astype(np.result_type(*ins))]


def _reshape(r, node, ins, at):
    x, shape = ins[0], _dims(ins[1])
    in_shape = list(x.shape)
    if not at.get("allowzero", 0):
        shape = [in_shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if _static(x):
        if None in shape or _partial(x):
            r.fail(node, "reshape of a dynamic shape value")
        return [x.reshape(shape)]
    unknown = [i for i, d in enumerate(shape) if d is None]
    if len(unknown) == 1 and -1 in shape:
        # NOTE: both None are the one dynamic dim (the batch): -1 is the known rest
        if in_shape.count(None) != 1:
            r.fail(node, f"reshape of {in_shape} to {shape}: too many unknown dims")
        known = int(np.prod([d for d in in_shape if d is not None]))
        rest = int(np.prod([d for d in shape if d not in (None, -1)]))
        shape = [known // rest if d == -1 else d for d in shape]
    unknown = [i for i, d in enumerate(shape) if d is None]
    if len(unknown) > 1:
        r.fail(node, f"reshape to {shape}: more than one dim unknown")
    return [ops.reshape(x, tuple(-1 if d is None else d for d in shape))]


def _transpose(r, node, ins, at):
    x = ins[0]
    perm = at.get("perm", list(reversed(range(len(x.shape)))))
    return [np.transpose(x, perm) if _static(x) else ops.transpose(x, axes=tuple(perm))]


def _concat(r, node, ins, at):
    if all(_static(v) for v in ins):
        return [np.concatenate(ins, axis=at["axis"])]
    return [ops.concat(*[r.tensor(v, node) for v in ins], axis=at["axis"])]


def _axes_of(r, node, ins, at, k=1):
    if "axes" in at:
        return list(at["axes"])
    if len(ins) > k and ins[k] is not None:
        if not _static(ins[k]) or _partial(ins[k]):
            r.fail(node, "axes must be known while reading")
        return [int(a) for a in ins[k].reshape(-1)]
    return None


def _unsqueeze(r, node, ins, at):
    x, axes = ins[0], _axes_of(r, node, ins, at)
    nd = len(x.shape) + len(axes)
    for a in sorted(a % nd for a in axes):
        x = np.expand_dims(x, a) if _static(x) else ops.expand_dims(x, axis=a)
    return [x]


def _squeeze(r, node, ins, at):
    x, axes = ins[0], _axes_of(r, node, ins, at)
    if _static(x):
        return [np.squeeze(x, axis=None if axes is None else tuple(axes))]
    return [ops.squeeze(x, axis=None if axes is None else tuple(axes))]


def _slice(r, node, ins, at):
    x = ins[0]
    nd = len(x.shape)
    vals = [None if len(ins) <= k or ins[k] is None else _dims(ins[k]) for k in range(1, 5)]
    if None in vals[0] or None in vals[1]:
        r.fail(node, "slice bounds must be known while reading")
    starts, ends = vals[0], vals[1]
    axes = vals[2] or list(range(len(starts)))
    steps = vals[3] or [1] * len(starts)
    index = [slice(None)] * nd
    for s, e, a, st in zip(starts, ends, axes, steps):
        e = None if abs(e) >= BIG else e
        s = None if abs(s) >= BIG else s
        index[a % nd] = slice(s, e, st)
    if _static(x):
        return [np.asarray(x[tuple(index)], x.dtype)]
    return [ops.slice_(x, index=tuple(index))]


def _gather(r, node, ins, at):
    x, idx = ins
    axis = at.get("axis", 0)
    if _static(x) and _static(idx):
        return [np.asarray(np.take(x, idx.astype(np.int64), axis=axis), x.dtype)]
    idx = idx.astype(np.int64) if _static(idx) else idx
    return [ops.take(r.tensor(x, node), idx, axis=axis)]


def _flatten(r, node, ins, at):
    x, axis = ins[0], at.get("axis", 1)
    shape = list(x.shape)
    axis %= max(len(shape), 1)
    left, right = shape[:axis], shape[axis:]
    if None in right:
        r.fail(node, f"flatten of {shape}: the dims after axis {axis} must be known")
    rest = int(np.prod(right))
    lead = int(np.prod(left)) if None not in left else -1
    return [ops.reshape(x, (lead, rest))]


def _expand(r, node, ins, at):
    x, shape = ins[0], _dims(ins[1])
    if None in shape:
        r.fail(node, "expand to a shape only known at run time")
    xs = list(x.shape)
    if None in xs:
        r.fail(node, "expand of a tensor with an unknown dim")
    target = np.broadcast_shapes(tuple(xs), tuple(shape))
    if _static(x):
        return [np.broadcast_to(x, target).copy()]
    return [ops.broadcast_to(x, target)]


def _softmax(fn):
    def rule(r, node, ins, at):
        return [fn(r.tensor(ins[0], node), axis=at.get("axis", -1))]
    return rule


def _layer_norm(r, node, ins, at):
    if any(o for o in node.output[1:]):
        r.fail(node, "only the normalised output (not Mean / InvStdDev) is supported")
    x = r.tensor(ins[0], node)
    nd = len(x.shape)
    axis = at.get("axis", -1) % nd
    w = r.tensor(ins[1], node)
    b = r.tensor(ins[2], node) if len(ins) > 2 and ins[2] is not None else None
    return [ops.layer_norm(x, w, b, eps=at.get("epsilon", 1e-5), normalized_ndim=nd - axis)]


def _reduce(fn):
    def rule(r, node, ins, at):
        x = r.tensor(ins[0], node)
        axes = _axes_of(r, node, ins, at)
        if axes is None and at.get("noop_with_empty_axes", 0):
            return [x]
        axis = None if axes is None else tuple(axes)
        return [fn(x, axis=axis, keepdims=bool(at.get("keepdims", 1)))]
    return rule


def _gemm(r, node, ins, at):
    a, b = r.tensor(ins[0], node), r.tensor(ins[1], node)
    if at.get("transA", 0):
        a = ops.transpose(a, axes=(1, 0))
    if at.get("transB", 0):
        b = ops.transpose(b, axes=(1, 0))
    y = ops.matmul(a, b)
    alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
    if alpha != 1.0:
        y = y * np.float32(alpha)
    if len(ins) > 2 and ins[2] is not None:
        c = r.tensor(ins[2], node)
        y = y + (c if beta == 1.0 else c * np.float32(beta))
    return [y]


def _window(r, node, at, nd=2):
    """(kernel, stride, padding, pre-pad) of a 2-d Conv / pool, or an OnnxError."""
    if at.get("auto_pad", "NOTSET") not in ("NOTSET", ""):
        r.fail(node, f"auto_pad={at['auto_pad']} is not supported; give explicit pads")
    if any(d != 1 for d in at.get("dilations", [1] * nd)):
        r.fail(node, f"dilations {at['dilations']} are not supported")
    if at.get("ceil_mode", 0):
        r.fail(node, "ceil_mode=1 is not supported")
    kernel = list(at.get("kernel_shape", []))
    strides = list(at.get("strides", [1] * nd))
    pads = list(at.get("pads", [0] * 2 * nd))
    if len(strides) != nd or len(set(strides)) != 1:
        r.fail(node, f"strides {strides}: dualgrad supports 2-d windows with one stride")
    return kernel, strides[0], pads


def _conv(r, node, ins, at):
    x, w = r.tensor(ins[0], node), r.tensor(ins[1], node)
    if len(x.shape) != 4:
        r.fail(node, f"only 2-d convolution (NCHW) is supported, got input {x.shape}")
    if at.get("group", 1) != 1:
        r.fail(node, f"group={at['group']} (grouped / depthwise convolution) is not supported")
    _, stride, pads = _window(r, node, at)
    pad = 0
    if len(set(pads)) == 1:
        pad = pads[0]
    else:
        x = ops.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    b = r.tensor(ins[2], node) if len(ins) > 2 and ins[2] is not None else None
    return [ops.conv2d(x, w, b, stride=stride, padding=pad)]


def _pool(kind):
    def rule(r, node, ins, at):
        if len(node.output) > 1 and node.output[1]:
            r.fail(node, "the Indices output is not supported")
        x = r.tensor(ins[0], node)
        kernel, stride, pads = _window(r, node, at)
        if len(kernel) != 2 or kernel[0] != kernel[1]:
            r.fail(node, f"kernel_shape {kernel}: dualgrad pools square 2-d windows")
        if kind == "max":
            if len(set(pads)) != 1:
                r.fail(node, f"asymmetric pads {pads}")
            return [ops.max_pool2d(x, kernel[0], stride, padding=pads[0])]
        if any(pads):
            r.fail(node, f"pads {pads}: dualgrad's avg_pool2d has no padding")
        return [ops.avg_pool2d(x, kernel[0], stride)]
    return rule


def _global_avg(r, node, ins, at):
    x = r.tensor(ins[0], node)
    return [ops.mean(x, axis=tuple(range(2, len(x.shape))), keepdims=True)]


def _batch_norm(r, node, ins, at):
    if any(o for o in node.output[1:]) or at.get("training_mode", 0):
        r.fail(node, "only inference-mode batch normalisation is supported")
    x, scale, b, mean, var = [r.tensor(v, node) for v in ins[:5]]
    return [ops.batch_norm(x, mean, var, scale, b, eps=at.get("epsilon", 1e-5))]


def _split(r, node, ins, at):
    x = r.tensor(ins[0], node)
    axis = at.get("axis", 0)
    sizes = at.get("split")
    if sizes is None and len(ins) > 1 and ins[1] is not None:
        sizes = _dims(ins[1])
    n_out = len(node.output)
    if sizes is None:
        d = x.shape[axis]
        if d is None:
            r.fail(node, "splitting an unknown dim into equal parts")
        sizes = [-(-d // n_out)] * (d // -(-d // n_out)) + ([d % -(-d // n_out)]
                                                             if d % -(-d // n_out) else [])
    return list(ops.split(x, list(sizes), axis=axis))


def _reciprocal(r, node, ins, at):
    return [ops.div(np.float32(1.0), r.tensor(ins[0], node))]


RULES = {"Div": _div,
         "Max": _variadic(ops.maximum), "Min": _variadic(ops.minimum), "Sum": _variadic(ops.add),
         "Not": _not, "Identity": _identity, "Dropout": _identity, "Cast": _cast,
         "Constant": _constant, "Shape": _shape, "ConstantOfShape": _constant_of_shape,
         "Range": _range, "Reshape": _reshape, "Transpose": _transpose, "Concat": _concat,
         "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Slice": _slice, "Gather": _gather,
         "Flatten": _flatten, "Expand": _expand, "Softmax": _softmax(ops.softmax),
         "LogSoftmax": _softmax(ops.log_softmax), "LayerNormalization": _layer_norm,
         "ReduceSum": _reduce(ops.sum), "ReduceMean": _reduce(ops.mean),
         "ReduceMax": _reduce(ops.max), "ReduceMin": _reduce(ops.min), "Gemm": _gemm,
         "Conv": _conv, "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
         "GlobalAveragePool": _global_avg, "BatchNormalization": _batch_norm, "Split": _split,
         "Reciprocal": _reciprocal}


# -- the model ----------------------------------------------------------------------------------
def _shape_of(vi):
    dims = vi.type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)


def _settled(v):
    """A shape value whose dims all became known is an ordinary int64 array again."""
    if _partial(v) and not any(d is None for d in v.ravel()):
        return v.astype(np.int64)
    return v


def _read(r):
    onnx, gp = r.onnx, r.model.graph
    for t in gp.initializer:
        r.values[t.name] = onnx.numpy_helper.to_array(t)
    inputs = {}
    for vi in gp.input:
        if vi.name in r.values:
            continue
        dt = onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        p = placeholder(dt, _shape_of(vi), name=vi.name.replace(":", "_"))
        inputs[vi.name] = r.values[vi.name] = p
    for node in gp.node:
        if node.domain not in ("", "ai.onnx"):
            r.fail(node, f"ops of domain {node.domain!r} are not supported")
        rule = RULES.get(node.op_type) or (
            _elementwise if primitive_for(node.op_type) else None)
        if rule is None:
            r.fail(node, "this ONNX op is not supported by dualgrad's importer")
        ins = [r.values[i] if i else None for i in node.input]
        try:
            outs = rule(r, node, ins, r.attrs(node))
        except ops.ShapeError as e:
            r.fail(node, str(e))
        for name, v in zip(node.output, outs):
            if name:
                r.values[name] = _settled(v)
    outputs = [r.tensor(r.values[o.name]) for o in gp.output]
    return OnnxGraph(r.g, inputs, outputs, [o.name for o in gp.output])


def load(path_or_model) -> OnnxGraph:
    """Read an ONNX file (or a loaded ModelProto) as a dualgrad graph; see OnnxGraph."""
    onnx = _helper()
    if isinstance(path_or_model, (str, os.PathLike)):
        where = os.fspath(path_or_model)
        model = onnx.load(where)
    else:
        model, where = path_or_model, "<model>"
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")],
                default=None)
    if opset is None or opset < 11:
        raise OnnxError(f"graph.onnx.load: {where}: opset {opset}; dualgrad reads opsets 11+")
    r = Reader(onnx, model, where)
    with r.g.as_default():
        return _read(r)
