"""TF1's `tf.import_graph_def`: the nodes of a `GraphDef` (a frozen model's `.pb`, read with
`GraphDef.ParseFromString`) become dualgrad graph nodes, each TF op type read by one rule
in `RULES` (or, for an op whose TF form is one op, by the registry entry whose `Op.tf` it
is) with TF's attribute meaning (data_format, padding, strides, transpose_a/b,
keep_dims, T/dtype), so `get_tensor_by_name("import/input:0")` and `Session.run` work as
in TF. An op type without a rule is an error naming the node and its type, never a skip.

>>> import numpy as np
>>> from dualgrad import graph as tf
>>> gd = tf.GraphDef()
>>> x = gd.node.add(name="x", op="Placeholder")
>>> x.attr["dtype"].type = 1
>>> r = gd.node.add(name="y", op="Relu", input=["x"])
>>> g = tf.Graph()
>>> with g.as_default():
...     tf.import_graph_def(gd, name="")
>>> with tf.Session(graph=g) as s:
...     s.run("y:0", {"x:0": np.array([-1.0, 2.0], np.float32)})
array([0., 2.], dtype=float32)
"""
from __future__ import annotations

import collections

import numpy as np

from dualgrad import ops
from dualgrad.ops.core import ShapeError, located

from . import array_ops, image, math_ops, nn, select_ops
from .control_flow import identity, no_op
from .core import Tensor, constant, get_default_graph, placeholder
from .graph_def import MAX_TENSOR_BYTES, GraphDef, make_ndarray, numpy_dtype, shape_of
from .session import Session

__all__ = ["import_graph_def", "RULES", "GraphDefError", "supported_op_types"]


class GraphDefError(ValueError):
    """A GraphDef dualgrad cannot import: names the node, its op type, why, and the user's
    line that called import_graph_def."""


def _error(msg):
    return located(msg, GraphDefError)


# -- reading one NodeDef ------------------------------------------------------------------------
class _Node:
    """One NodeDef while it is imported: its attributes read as TF means them."""

    def __init__(self, importer, nd, inputs):
        self.importer, self.nd, self.inputs = importer, nd, inputs

    def fail(self, msg, at_user_line=True):
        msg = f"import_graph_def: node {self.nd.name!r} ({self.nd.op}): {msg}"
        raise _error(msg) if at_user_line else GraphDefError(msg)

    def attr(self, key, default=None):
        a = self.nd.attr.get(key)
        if a is None or a.WhichOneof("value") is None:
            return default
        kind = a.WhichOneof("value")
        if kind == "s":
            return a.s.decode("utf-8", "replace")
        if kind == "type":
            return numpy_dtype(a.type, f"node {self.nd.name!r} attr {key!r}")
        if kind == "shape":
            return shape_of(a.shape, f"node {self.nd.name!r} attr {key!r}")
        if kind == "tensor":
            return make_ndarray(a.tensor, f"node {self.nd.name!r} attr {key!r}")
        if kind == "list":
            lst = a.list
            for name in ("i", "f", "s", "b"):
                if getattr(lst, name):
                    return list(getattr(lst, name))
            return []
        if kind in ("i", "f", "b"):
            return getattr(a, kind)
        self.fail(f"attribute {key!r} holds a {kind}, which dualgrad does not read")

    def const(self, i, what):
        """The value of input i, which must be computed from constants only."""
        value = self.importer.value(self.refs[i], self.inputs[i])
        if value is None:
            self.fail(f"input {i} ({what}) must be a constant; it is {self.refs[i]!r}")
        return value

    def known(self, i, t):
        """Input i's value when constants compute it (so a shape is known at build time),
        else the tensor t."""
        value = self.importer.value(self.refs[i], t)
        return t if value is None else value.tolist()

    def ints(self, i, what):
        return [int(v) for v in np.ravel(self.const(i, what))]


def _read_ref(ref):
    """'name' / 'name:1' / '^name' -> (node name, output index, is a control input)."""
    if ref.startswith("^"):
        return ref[1:], 0, True
    name, sep, idx = ref.rpartition(":")
    if sep and idx.isdigit():
        return name, int(idx), False
    return ref, 0, False


# -- the rules: TF op type -> dualgrad graph calls -------------------------------------------------
def _unary(fn):
    return lambda n, x: fn(x)


def _binary(fn):
    return lambda n, x, y: fn(x, y)


def _layout(n):
    df = n.attr("data_format", "NHWC")
    if df not in ("NHWC", "NCHW"):
        n.fail(f"data_format {df!r} is not supported (NHWC or NCHW)")
    return df


def _conv2d(n, x, w):
    padding, df = n.attr("padding"), _layout(n)
    if padding == "EXPLICIT":    # NOTE: 4 (before, after) pairs in layout order
        pairs = np.reshape(n.attr("explicit_paddings"), (4, 2)).tolist()
        padding = pairs[1:3] if df == "NHWC" else pairs[2:]
    return nn.conv2d(x, w, n.attr("strides"), padding, data_format=df,
                     dilations=n.attr("dilations", [1, 1, 1, 1]))


def _depthwise(n, x, w):
    df = _layout(n)
    dil = n.attr("dilations", [1, 1, 1, 1])
    rate = dil[1:3] if df == "NHWC" else dil[2:]
    return nn.depthwise_conv2d(x, w, n.attr("strides"), n.attr("padding"), rate=rate,
                               data_format=df)


def _pool(fn):
    return lambda n, x: fn(x, n.attr("ksize"), n.attr("strides"), n.attr("padding"),
                           data_format=_layout(n))


def _fused_batch_norm(n, x, scale, offset, mean, variance, *_):
    if n.attr("is_training", True):
        n.fail("is_training=True (batch statistics) is not supported: freeze the graph for "
               "inference (training=False), which uses the moving mean and variance")
    if _layout(n) == "NCHW":
        scale, offset, mean, variance = (math_ops.reshape(t, [-1, 1, 1])
                                         for t in (scale, offset, mean, variance))
    y = nn.batch_normalization(x, mean, variance, offset, scale, n.attr("epsilon", 1e-4))
    return [y, mean, variance]


def _reduce(fn):
    return lambda n, x, axis: fn(x, axis=n.ints(1, "axis"), keepdims=n.attr("keep_dims", False))


def _reshape(n, x, shape):
    value = n.importer.value(n.refs[1], shape)
    return math_ops.reshape(x, [int(v) for v in value] if value is not None else shape)


def _strided_slice(n, x, *_):
    return select_ops.strided_slice(
        x, n.ints(1, "begin"), n.ints(2, "end"), n.ints(3, "strides"),
        **{k: n.attr(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                     "new_axis_mask", "shrink_axis_mask")})


def _pad(n, x, paddings, *value):
    mode = n.attr("mode", "CONSTANT")
    pads = np.reshape(n.ints(1, "paddings"), (-1, 2)).tolist()
    cv = n.const(2, "constant_values").item() if value else 0
    return math_ops.pad(x, pads, mode=mode, constant_values=cv)


def _concat(n, *ins):
    return math_ops.concat(list(ins[:-1]), int(n.ints(len(ins) - 1, "axis")[0]))


def _squeeze(n, x):
    dims = n.attr("squeeze_dims", [])
    return math_ops.squeeze(x, axis=dims or None)


def _matmul(n, a, b):
    return math_ops.matmul(a, b, transpose_a=n.attr("transpose_a", False),
                           transpose_b=n.attr("transpose_b", False))


def _batch_matmul(n, a, b):
    return math_ops.matmul(a, b, transpose_a=n.attr("adj_x", False),
                           transpose_b=n.attr("adj_y", False))


def _split(n, axis, x):
    return math_ops.split(x, n.attr("num_split"), axis=n.ints(0, "axis")[0])


def _split_v(n, x, sizes, axis):
    return math_ops.split(x, n.ints(1, "size_splits"), axis=n.ints(2, "axis")[0])


def _extract_patches(n, x):
    """NHWC patches (N, oh, ow, kh*kw*C), (i, j, c) order, from ops.unfold's channel-major
    columns (N, C*kh*kw, oh*ow)."""
    (_, kh, kw, _), (_, sh, sw, _), (_, dh, dw, _) = (n.attr(k) for k in ("ksizes", "strides",
                                                                           "rates"))
    c = x.shape[3]
    if n.attr("padding") == "SAME":
        ek = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
        pads = nn._pads("SAME", x.shape[1:3], ek, (sh, sw), x.shape, "ExtractImagePatches")
        x = math_ops.pad(x, [(0, 0), *pads, (0, 0)])
    cols = ops.unfold(math_ops.transpose(x, [0, 3, 1, 2]), (kh, kw), (sh, sw), 0, (dh, dw))
    oh = (x.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (x.shape[2] - (kw - 1) * dw - 1) // sw + 1
    cols = math_ops.transpose(math_ops.reshape(cols, [-1, c, kh * kw, oh * ow]), [0, 3, 2, 1])
    return math_ops.reshape(cols, [-1, oh, ow, kh * kw * c])


def _range(n, *bounds):
    """With constant bounds, a Python range: its length is known when the graph is built."""
    known = [n.known(i, t) for i, t in enumerate(bounds)]
    if any(isinstance(k, Tensor) for k in known):
        return array_ops.range(*bounds)
    return array_ops.range(*(np.asarray(k).item() for k in known), dtype=n.attr("Tidx"))


def _fill(n, dims, value):
    """With a constant shape and value, a constant (as graph.fill makes one), unless large:
    then filled at run time."""
    shape, v = n.known(0, dims), n.importer.value(n.refs[1], value)
    if isinstance(shape, Tensor) or v is None or \
            np.prod(shape, dtype=object) * v.dtype.itemsize > MAX_TENSOR_BYTES:
        return array_ops.fill(dims, value)
    return array_ops.fill(shape, v)


def _resize(fn):
    return lambda n, x, size: fn(x, n.ints(1, "size"), align_corners=n.attr("align_corners", False),
                                 half_pixel_centers=n.attr("half_pixel_centers", False))


def _conv2d_transpose(n, sizes, w, dy):
    return nn.conv2d_transpose(dy, w, n.known(0, sizes), n.attr("strides"), n.attr("padding"),
                               data_format=_layout(n),
                               dilations=n.attr("dilations", [1, 1, 1, 1]))


def _tf_variable(n, *ins):
    n.fail("a TF variable: its value lives in a TF checkpoint, which dualgrad does not read. "
           "Freeze the model in TF (graph_util.convert_variables_to_constants) and import "
           "the frozen GraphDef")


RULES = {
    "VariableV2": _tf_variable, "Variable": _tf_variable, "VarHandleOp": _tf_variable,
    "Identity": _unary(identity), "Snapshot": _unary(identity), "NoOp": lambda n: no_op(),
    "PlaceholderWithDefault": lambda n, x: array_ops.placeholder_with_default(
        x, n.attr("shape")),
    "MatMul": _matmul, "BatchMatMul": _batch_matmul, "BatchMatMulV2": _batch_matmul,
    "BiasAdd": lambda n, x, b: nn.bias_add(x, b, data_format=_layout(n)),
    "Add": _binary(math_ops.add),      # NOTE: AddV2, Sub, Mul, ...: registry ops' `tf` forms
    "SquaredDifference": _binary(math_ops.squared_difference),
    "AddN": lambda n, *xs: math_ops.add_n(list(xs)),
    "Relu6": _unary(nn.relu6), "Elu": _unary(nn.elu), "Selu": _unary(nn.selu),
    "LeakyRelu": lambda n, x: nn.leaky_relu(x, alpha=n.attr("alpha", 0.2)),
    "Softmax": _unary(nn.softmax), "LogSoftmax": _unary(nn.log_softmax),
    "Rsqrt": _unary(math_ops.rsqrt), "Square": _unary(math_ops.square),
    "Reciprocal": _unary(math_ops.reciprocal),
    "Conv2D": _conv2d, "DepthwiseConv2dNative": _depthwise,
    "Conv2DBackpropInput": _conv2d_transpose,
    "ResizeBilinear": _resize(image.resize_bilinear),
    "ResizeNearestNeighbor": _resize(image.resize_nearest_neighbor),
    "BatchNormWithGlobalNormalization": lambda n, x, m, v, beta, gamma:
        nn.batch_norm_with_global_normalization(x, m, v, beta, gamma,
                                                n.attr("variance_epsilon"),
                                                n.attr("scale_after_normalization")),
    "ClipByValue": lambda n, x, lo, hi: math_ops.clip_by_value(x, lo, hi),
    "TopKV2": lambda n, x, k: list(select_ops.top_k(x, n.ints(1, "k")[0],
                                                    sorted=n.attr("sorted", True))),
    "Softsign": _unary(nn.softsign),
    "ExtractImagePatches": _extract_patches,
    "MaxPool": _pool(nn.max_pool), "AvgPool": _pool(nn.avg_pool),
    "FusedBatchNorm": _fused_batch_norm, "FusedBatchNormV2": _fused_batch_norm,
    "FusedBatchNormV3": _fused_batch_norm,
    "Reshape": _reshape, "Squeeze": _squeeze,
    "ExpandDims": lambda n, x, dim: math_ops.expand_dims(x, n.ints(1, "dim")[0]),
    "ConcatV2": _concat, "Pack": lambda n, *xs: math_ops.stack(list(xs), n.attr("axis", 0)),
    "Unpack": lambda n, x: array_ops.unstack(x, n.attr("num"), n.attr("axis", 0)),
    "Split": _split, "SplitV": _split_v,
    "Shape": lambda n, x: array_ops.shape(x, out_type=n.attr("out_type", np.dtype("int32"))),
    "Size": lambda n, x: array_ops.size(x, out_type=n.attr("out_type", np.dtype("int32"))),
    "Rank": lambda n, x: array_ops.rank(x),
    "Range": _range,
    "StridedSlice": _strided_slice,
    "Slice": lambda n, x, b, s: select_ops.slice(x, n.ints(1, "begin"), n.ints(2, "size")),
    "Mean": _reduce(math_ops.reduce_mean), "Sum": _reduce(math_ops.reduce_sum),
    "Max": _reduce(math_ops.reduce_max), "Min": _reduce(math_ops.reduce_min),
    "Prod": _reduce(math_ops.reduce_prod),
    "ArgMax": lambda n, x, a: math_ops.argmax(x, n.ints(1, "dimension")[0],
                                              output_type=n.attr("output_type")),
    "ArgMin": lambda n, x, a: math_ops.argmin(x, n.ints(1, "dimension")[0],
                                              output_type=n.attr("output_type")),
    "Cast": lambda n, x: math_ops.cast(x, n.attr("DstT")),
    "Transpose": lambda n, x, p: math_ops.transpose(x, n.ints(1, "perm")),
    "Pad": _pad, "PadV2": _pad, "MirrorPad": _pad,
    "Fill": _fill,
    "Tile": lambda n, x, m: math_ops.tile(x, n.ints(1, "multiples")),
    "GatherV2": lambda n, p, i, a: math_ops.gather(p, i, axis=n.ints(2, "axis")[0]),
    "Gather": lambda n, p, i: math_ops.gather(p, i),
    "Select": lambda n, c, x, y: math_ops.where(c, x, y),
    "SelectV2": lambda n, c, x, y: math_ops.where(c, x, y),
}


def _entry_rule(op_type):
    """The registry op whose one-op TF form (`Op.tf`) is op_type, called on the inputs."""
    op = next((op for op in ops.REGISTRY.values() if op.tf == op_type), None)
    return None if op is None else lambda n, *xs: op.fn(*xs)


def supported_op_types():
    """Every TF op type import_graph_def reads: RULES, the registry's `tf` forms, Const and
    Placeholder."""
    return sorted({*RULES, *(op.tf for op in ops.REGISTRY.values() if op.tf), "Const",
                   "Placeholder"})


# -- the importer ----------------------------------------------------------------------------------
class _Importer:
    def __init__(self, graph_def, input_map, scope):
        self.gd, self.scope = graph_def, scope
        self.input_map = {self._key(k): v for k, v in (input_map or {}).items()}
        self.used_map: set = set()
        self.outputs: dict[str, list] = {}      # NodeDef name -> its tensors
        self.values: dict = {}                  # "name:i" -> value, for constant inputs
        self.folded: set = set()                # nodes computed from constants only

    @staticmethod
    def _key(ref):
        name, i, control = _read_ref(ref)
        return f"^{name}" if control else f"{name}:{i}"

    def order(self):
        """The NodeDefs in an order where each comes after its inputs (Kahn's algorithm)."""
        by_name, deps = {}, {}
        for nd in self.gd.node:
            if nd.name in by_name:
                raise _error(f"import_graph_def: two nodes are named {nd.name!r}")
            by_name[nd.name] = nd
        users = collections.defaultdict(list)
        for nd in self.gd.node:
            srcs = {_read_ref(r)[0] for r in nd.input if self._key(r) not in self.input_map}
            for s in srcs:
                if s not in by_name:
                    raise _error(f"import_graph_def: node {nd.name!r} ({nd.op}) has "
                                        f"input {s!r}, which is not in the graph_def")
                users[s].append(nd.name)
            deps[nd.name] = len(srcs)
        ready = collections.deque(n for n, d in deps.items() if d == 0)
        out = []
        while ready:
            name = ready.popleft()
            out.append(by_name[name])
            for u in users[name]:
                deps[u] -= 1
                if deps[u] == 0:
                    ready.append(u)
        if len(out) != len(by_name):
            stuck = next(n for n, d in deps.items() if d > 0)
            raise _error(f"import_graph_def: node {stuck!r} is part of a cycle (TF1's "
                                f"while loops are not imported)")
        return out

    def tensor(self, ref, nd):
        key = self._key(ref)
        if key in self.input_map:
            self.used_map.add(key)
            return self.input_map[key]
        name, i, _ = _read_ref(ref)
        outs = self.outputs[name]
        if i >= len(outs):
            raise _error(f"import_graph_def: node {nd.name!r} ({nd.op}) reads output "
                                f"{i} of node {name!r}, which has {len(outs)}")
        return outs[i]

    def run(self, g):
        order = self.order()
        finals = [self.scope + nd.name for nd in order]
        for nd, final in zip(order, finals):
            if g.name_in_use(final):
                raise _error(f"import_graph_def: node {nd.name!r}: the graph already "
                                    f"has a node named {final!r} (pass name= to prefix)")
        for final in finals:
            g.mark_name_used(final)
        for nd, final in zip(order, finals):
            self.node(g, nd, final)
        unused = set(self.input_map) - self.used_map
        if unused:
            raise _error(f"import_graph_def: attempted to map inputs that were not "
                                f"found in graph_def: {sorted(unused)}")

    def node(self, g, nd, final):
        data = [r for r in nd.input if not r.startswith("^")]
        control = [r for r in nd.input if r.startswith("^")]
        ins = [self.tensor(r, nd) for r in data]
        n = _Node(self, nd, ins)
        n.refs = [self._key(r) for r in data]
        deps = [self.tensor(r, nd) for r in control]
        first = len(g._nodes)
        try:
            with g.control_dependencies([d.node if isinstance(d, Tensor) else d for d in deps]):
                out = self.build(n, ins)
        except GraphDefError:
            raise
        except (ShapeError, ValueError, TypeError, NotImplementedError, IndexError) as e:
            n.fail(f"{type(e).__name__}: {e}", at_user_line=not hasattr(e, "location"))
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        self.name_outputs(g, outs, first, final)
        self.outputs[nd.name] = outs

    def build(self, n, ins):
        nd = n.nd
        if nd.op == "Const":
            value = n.attr("value")
            if not isinstance(value, np.ndarray):
                n.fail("its 'value' attribute is not a tensor")
            self.values[f"{nd.name}:0"] = value
            return constant(value)
        if nd.op == "Placeholder":
            return placeholder(n.attr("dtype"), n.attr("shape"))
        rule = RULES.get(nd.op) or _entry_rule(nd.op)
        if rule is None:
            n.fail(f"op type {nd.op!r} is not supported by dualgrad's import_graph_def "
                   f"(docs/tf1-compat.md lists the supported op types)")
        if n.refs and nd.op != "PlaceholderWithDefault" and \
                all(r in self.values or _read_ref(r)[0] in self.folded for r in n.refs):
            self.folded.add(nd.name)
        return rule(n, *ins)

    def value(self, ref, t):
        """The value of tensor `t` (graph_def's `ref`) if constants alone compute it (as TF's
        constant folding: a permutation made by Range and ConcatV2), else None; computed
        once with the ops' kernels, if small."""
        if ref not in self.values and _read_ref(ref)[0] in self.folded and \
                isinstance(t, Tensor):
            spec = t.spec
            if None not in spec.shape and np.prod(spec.shape) * spec.dtype.itemsize <= 1 << 20:
                with Session(graph=t.graph) as s:
                    self.values[ref] = s.run(t)
        return self.values.get(ref)

    @staticmethod
    def name_outputs(g, outs, first, final):
        """The node that makes output 0 takes the NodeDef's name (an identity if the rule
        returned a tensor it did not build), so get_tensor_by_name finds it."""
        if not outs or outs[0] is None:
            return
        if isinstance(outs[0], Tensor) and outs[0].node.id < first:
            outs[0] = identity(outs[0])
        node = outs[0].node if isinstance(outs[0], Tensor) else outs[0]   # NoOp: a node
        if node.graph is g and node.id >= first:
            g.rename(node, final)


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    """Import `graph_def` into the default graph, nodes named `name/...` (default
    'import'; '' for the names as they are). input_map: {tensor name in graph_def: Tensor}
    replaces those inputs; return_elements: names of tensors ('x:0') or nodes ('x') to
    return, in order. Returns that list, or None."""
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"import_graph_def: graph_def must be a GraphDef, got "
                        f"{type(graph_def).__name__}")
    g = get_default_graph()
    with g.name_scope("import" if name is None else name or None) as scope:
        imp = _Importer(graph_def, input_map, scope)
        imp.run(g)
    if return_elements is None:
        return None
    return [_element(g, imp, r, scope) for r in return_elements]


def _element(g, imp, ref, scope):
    name, i, _ = _read_ref(ref)
    if name not in imp.outputs or i >= len(imp.outputs[name]):
        raise _error(f"import_graph_def: return_element {ref!r} is not in graph_def")
    if ":" not in ref:
        return g.get_operation_by_name(scope + name)
    return imp.outputs[name][i]
