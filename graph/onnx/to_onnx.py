"""dualgrad graph -> ONNX model (opsets 13 to NEWEST_OPSET): one writer rule per primitive.

A primitive whose registry entry names an ONNX operator (`onnx="Softplus"`: same inputs,
same result) is written as that operator with no rule here; the rules below are for the
others.

The graph is frozen first (graph/freeze.py: the needed nodes, variables as constants), then
each node becomes one or a few ONNX nodes. Composites arrive as the primitives they are
built from (softmax as exp/sum/div, ...); `unfold` (conv2d's and the pools' im2col) is
written as a `Conv` or `MaxPool` where its consumer makes it one, else as slices. Mixed
dtypes (a float32 tensor times an int constant) get explicit `Cast`s, since ONNX ops want
equal input types.
"""
from __future__ import annotations

import os

import numpy as np

from dualgrad.ops.nn import pair, window_outs
from dualgrad.ops.shape import expand_index

from ..freeze import FreezeError, describe_node, freeze

INT_MAX, INT_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
OLDEST_OPSET, NEWEST_OPSET = 13, 28    # NEWEST: the newest onnx 1.23 / onnxruntime 1.32 run
# NOTE: where the ONNX form the writer emits changed between the opsets it writes: the one
# place that decides (ONNX's operator versions, `since_version`)
SINCE = {"Reshape.allowzero": 14, "Reduce.axes_as_input": 18}


class OnnxError(ValueError):
    """What dualgrad cannot write to, or read from, an ONNX file; it names the op."""


def _helper():
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX export and import need the onnx extra: "
                          "pip install 'dualgrad[onnx]'") from None
    return onnx


class Writer:
    """Collects ONNX nodes and initializers; `value(t)` is a graph tensor's ONNX name."""

    def __init__(self, onnx, consumers, opset):
        self.onnx, self.h, self.opset = onnx, onnx.helper, opset
        self.nodes, self.inits, self.names = [], [], {}
        self.consts = {}          # ONNX name -> array (initializers, for casts and patterns)
        self.consumers = consumers
        self._n = 0

    def fresh(self, base):
        self._n += 1
        return f"{base}__{self._n}"

    def const(self, value, base="const"):
        name = self.fresh(base)
        arr = np.asarray(value)
        self.inits.append(self.onnx.numpy_helper.from_array(arr, name))
        self.consts[name] = arr
        return name

    def ints(self, values, base="ints"):
        return self.const(np.asarray(values, np.int64), base)

    def emit(self, op_type, inputs, out=None, **attrs):
        out = out or self.fresh(op_type)
        self.nodes.append(self.h.make_node(op_type, list(inputs), [out],
                                           name=self.fresh(op_type + "_node"), **attrs))
        return out

    def cast(self, name, src, dst):
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return name
        if name in self.consts:
            return self.const(self.consts[name].astype(dst), "cast")
        return self.emit("Cast", [name], to=self.onnx.helper.np_dtype_to_tensor_dtype(dst))

    def shape_of(self, name):
        return self.emit("Shape", [name])

    def has(self, feature):
        return self.opset >= SINCE[feature]

    def reduce(self, op_type, x, axes, keepdims):
        """A ReduceXxx over `axes`: ReduceSum takes them as an input from version 13 (every
        opset written), the others from version 18, as an attribute before."""
        if op_type == "ReduceSum" or self.has("Reduce.axes_as_input"):
            return self.emit(op_type, [x, self.ints(axes, "axes")], keepdims=keepdims)
        return self.emit(op_type, [x], axes=list(axes), keepdims=keepdims)


# -- rules: (writer, node, input names) -> output name ---------------------------------------
def _in_dtype(w, n, ins, dt):
    return [w.cast(i, t.dtype, dt) for i, t in zip(ins, n.inputs)]


def _common(n):
    strong = [t.dtype for t in n.inputs if not t.spec.weak] or [t.dtype for t in n.inputs]
    return np.result_type(*strong)


def _direct(w, n, ins):
    """An op whose registry entry names its ONNX operator (`onnx=`): the same inputs, cast to
    the output dtype, into that one operator. A new op of that sort needs nothing here."""
    return w.emit(n.op.onnx, _in_dtype(w, n, ins, n.outputs[0].dtype))


def _matmul(w, n, ins):
    return _conv(w, n, ins) if _is_conv(n) else _direct(w, n, ins)


def _truncatemod(w, n, ins):
    """ONNX's Mod with fmod=1: C's fmod, the dividend's sign (torch.fmod, TF's TruncateMod)."""
    return w.emit("Mod", _in_dtype(w, n, ins, n.outputs[0].dtype), fmod=1)


def _compare(w, n, ins):
    args = _in_dtype(w, n, ins, _common(n))
    if n.type == "ne":
        return w.emit("Not", [w.emit("Equal", args)])
    return w.emit(n.op.onnx, args)


def _cascade_sum(w, n, ins):
    """The sum of every value (where keep): ReduceSum, whose order of additions is the
    runtime's (torch's cascade of partial sums is a float16 rounding detail)."""
    x = ins[0]
    if len(ins) == 2:
        zero = w.const(np.zeros((), n.inputs[0].dtype), "zero")
        x = w.emit("Where", [w.cast(ins[1], n.inputs[1].dtype, np.bool_), x, zero])
    return w.reduce("ReduceSum", x, list(range(len(n.inputs[0].shape))), 0)


def _where(w, n, ins):
    c = w.cast(ins[0], n.inputs[0].dtype, np.bool_)
    dt = n.outputs[0].dtype
    work = np.dtype(np.int32) if dt == np.bool_ else dt   # NOTE: onnxruntime has no bool Where
    out = w.emit("Where", [c, w.cast(ins[1], n.inputs[1].dtype, work),
                           w.cast(ins[2], n.inputs[2].dtype, work)])
    return w.cast(out, work, dt)


def _cast(w, n, ins):
    return w.cast(ins[0], n.inputs[0].dtype, n.outputs[0].dtype)


def _axes(n, axis, nd=None):
    nd = len(n.inputs[0].shape) if nd is None else nd
    axes = range(nd) if axis is None else (axis,) if isinstance(axis, int) else axis
    return sorted(a % max(nd, 1) for a in axes)


def _sum(w, n, ins):
    axes = _axes(n, n.attrs.get("axis"))
    x = _in_dtype(w, n, ins, n.outputs[0].dtype)[0]
    if not axes:    # NOTE: axis=() reduces nothing; ONNX's empty axes would reduce all
        return w.emit("Identity", [x])
    return w.reduce("ReduceSum", x, axes, int(bool(n.attrs.get("keepdims"))))


def _max(w, n, ins):
    if _is_pool(n):
        return _pool(w, n)
    axes = _axes(n, n.attrs.get("axis"))
    if not axes:
        return w.emit("Identity", ins)
    return w.reduce("ReduceMax", ins[0], axes, int(bool(n.attrs.get("keepdims"))))


def _argmax(w, n, ins):
    axis, keep = n.attrs.get("axis", -1), int(bool(n.attrs.get("keepdims", False)))
    x = ins[0]
    if axis is None:
        x, axis = w.emit("Reshape", [x, w.ints([-1])]), 0
    out = w.emit("ArgMax", [x], axis=axis, keepdims=keep)
    return w.cast(out, np.int64, n.outputs[0].dtype)


def _count(w, n, ins):
    axes = _axes(n, n.attrs.get("axis"))
    dims = w.emit("Gather", [w.shape_of(ins[0]), w.ints(axes)], axis=0)
    return w.cast(w.emit("ReduceProd", [dims], keepdims=0), np.int64, n.outputs[0].dtype)


def _cumsum(w, n, ins):
    return w.emit("CumSum", [ins[0], w.ints(n.attrs["axis"] % len(n.inputs[0].shape))])


def _reshape(w, n, ins):
    shape = list(n.attrs["shape"])
    if 0 not in shape:
        return w.emit("Reshape", [ins[0], w.ints(shape, "shape")])
    if not w.has("Reshape.allowzero"):
        raise OnnxError(f"graph.onnx.export: {describe_node(n)}: a reshape to {shape} (a 0 "
                        f"dim) needs Reshape's allowzero, which opset {w.opset} lacks; "
                        f"export at opset {SINCE['Reshape.allowzero']} or later")
    return w.emit("Reshape", [ins[0], w.ints(shape, "shape")], allowzero=1)


def _like(op_type):
    def rule(w, n, ins):
        return w.emit(op_type, [ins[0], w.shape_of(ins[1])])
    return rule


def _transpose(w, n, ins):
    nd = len(n.inputs[0].shape)
    return w.emit("Transpose", ins, perm=[a % nd for a in n.attrs["axes"]])


def _broadcast_to(w, n, ins):
    return w.emit("Expand", [ins[0], w.ints(n.attrs["shape"], "shape")])


def _expand_dims(w, n, ins):
    return w.emit("Unsqueeze", [ins[0], w.ints(_axes(n, n.attrs["axis"],
                                                     len(n.outputs[0].shape)))])


def _squeeze(w, n, ins):
    axis = n.attrs.get("axis")
    shape = n.inputs[0].shape
    axes = [i for i, d in enumerate(shape) if d == 1] if axis is None else _axes(n, axis)
    return w.emit("Squeeze", [ins[0], w.ints(axes)])


def _concat(w, n, ins):
    return w.emit("Concat", _in_dtype(w, n, ins, n.outputs[0].dtype), axis=n.attrs["axis"])


def _slice(w, n, ins):
    x = ins[0]
    idx = expand_index(n.attrs["index"], len(n.inputs[0].shape))
    starts, ends, axes, steps, drop, new = [], [], [], [], [], []
    d = 0
    for k, i in enumerate(idx):
        if i is None:
            new.append(k)
            continue
        if isinstance(i, slice):
            if i != slice(None):
                step = 1 if i.step is None else i.step
                starts.append(i.start if i.start is not None else 0 if step > 0 else INT_MAX)
                ends.append(i.stop if i.stop is not None else INT_MAX if step > 0 else INT_MIN)
                axes.append(d)
                steps.append(step)
        else:
            starts.append(i)
            ends.append(i + 1 if i != -1 else INT_MAX)
            axes.append(d)
            steps.append(1)
            drop.append(d)
        d += 1
    if axes:
        x = w.emit("Slice", [x, w.ints(starts), w.ints(ends), w.ints(axes), w.ints(steps)])
    if drop:
        x = w.emit("Squeeze", [x, w.ints(drop)])
    if new:   # NOTE: positions of None in the index are positions in the output
        out_pos, kept = [], 0
        for k, i in enumerate(idx):
            if i is None:
                out_pos.append(kept)
            if i is None or isinstance(i, slice):
                kept += 1
        x = w.emit("Unsqueeze", [x, w.ints(out_pos)])
    return x


def _take(w, n, ins):
    return w.emit("Gather", [ins[0], w.cast(ins[1], n.inputs[1].dtype, np.int64)],
                  axis=n.attrs.get("axis", 0) % len(n.inputs[0].shape))


def _argsort(w, n, ins):
    nd = len(n.inputs[0].shape)
    axis = n.attrs.get("axis", -1) % max(nd, 1)
    k = w.emit("Gather", [w.shape_of(ins[0]), w.ints([axis])], axis=0)
    values, indices = w.fresh("TopK_values"), w.fresh("TopK_indices")
    w.nodes.append(w.h.make_node("TopK", [ins[0], k], [values, indices], name=w.fresh("TopK_node"),
                                 axis=axis, largest=int(bool(n.attrs.get("descending"))),
                                 sorted=1))
    return indices


def _gather(w, n, ins):
    x, idx = ins[0], w.cast(ins[1], n.inputs[1].dtype, np.int64)
    nd, ni = len(n.inputs[0].shape), len(n.inputs[1].shape)
    if nd and ni:
        return w.emit("GatherElements", [x, idx], axis=n.attrs["axis"] % nd)
    # NOTE: a 0-d input or index is read as 1-d of one element (torch's); GatherElements
    # wants rank >= 1
    flat = w.emit("GatherElements", [w.emit("Reshape", [x, w.ints([-1])]),
                                     w.emit("Reshape", [idx, w.ints([-1])])], axis=0)
    return w.emit("Reshape", [flat, w.ints(list(n.outputs[0].shape), "shape")])


def _pad(w, n, ins):
    pw = n.attrs["pad_width"]
    pads = [int(p[0]) for p in pw] + [int(p[1]) for p in pw]
    value = w.const(np.asarray(n.attrs.get("value", 0.0), n.inputs[0].dtype), "pad_value")
    return w.emit("Pad", [ins[0], w.ints(pads, "pads"), value], mode="constant")


def _fill(v):
    def rule(w, n, ins):
        dt = n.outputs[0].dtype
        value = w.onnx.numpy_helper.from_array(np.asarray([v], dt), "value")
        return w.emit("ConstantOfShape", [w.shape_of(ins[0])], value=value)
    return rule


def _one_hot(w, n, ins):
    idx = w.emit("Unsqueeze", [w.cast(ins[0], n.inputs[0].dtype, np.int64), w.ints([-1])])
    hot = w.emit("Equal", [idx, w.ints(np.arange(n.attrs["num_classes"]), "classes")])
    return w.cast(hot, np.bool_, n.outputs[0].dtype)


def _identity(w, n, ins):
    return w.emit("Identity", ins)


# -- unfold: Conv / MaxPool where the consumer makes it one, else slices ----------------------
def _unfold_of(t):
    return t.node if t.node.type == "unfold" else None


def _window_attrs(u):
    """An unfold node's (stride, padding, dilation), each a (height, width) pair."""
    return tuple(pair(u.attrs.get(k, 1 if k != "padding" else 0))
                 for k in ("stride", "padding", "dilation"))


def _is_conv(n):
    """matmul(W (O, C*kh*kw), unfold(x)) with W's shape known: conv2d's own form."""
    u = _unfold_of(n.inputs[1])
    wt = n.inputs[0]
    return (u is not None and len(wt.shape) == 2 and None not in wt.shape
            and u.inputs[0].shape[1] is not None and n.inputs[0].dtype == n.inputs[1].dtype)


def _conv(w, n, ins):
    u = n.inputs[1].node
    kh, kw = u.attrs["kernel"]
    (sh, sw), (ph, pw), dil = _window_attrs(u)
    c = u.inputs[0].shape[1]
    o = n.inputs[0].shape[0]
    weight = w.emit("Reshape", [ins[0], w.ints([o, c, kh, kw])])
    y = w.emit("Conv", [w.value(u.inputs[0]), weight], kernel_shape=[kh, kw],
               strides=[sh, sw], pads=[ph, pw, ph, pw], dilations=list(dil))
    return w.emit("Reshape", [y, w.ints([0, o, -1])])


def _is_pool(n):
    """max(unfold(x) over one channel, axis=1): max_pool2d's own form."""
    u = _unfold_of(n.inputs[0])
    return (u is not None and u.inputs[0].shape[1] == 1 and u.attrs.get("padding", 0) == 0
            and n.attrs.get("axis") in (1, -2) and not n.attrs.get("keepdims"))


def _pool(w, n):
    u = n.inputs[0].node
    kh, kw = u.attrs["kernel"]
    stride, _, dil = _window_attrs(u)
    y = w.emit("MaxPool", [w.value(u.inputs[0])], kernel_shape=[kh, kw],
               strides=list(stride), dilations=list(dil))
    return w.emit("Reshape", [y, w.ints([0, -1])])


def _max_pool(w, n, ins):
    """The `max_pool` primitive: one MaxPool, ceil_mode's extra rows and columns as end pads
    (ONNX's MaxPool, like the kernel, never picks a padded cell)."""
    a = n.attrs
    (ph, pw), (eh, ew) = pair(a["padding"]), pair(a.get("extra", 0))
    return w.emit("MaxPool", ins, kernel_shape=list(pair(a["kernel"])),
                  strides=list(pair(a["stride"])), pads=[ph, pw, ph + eh, pw + ew],
                  dilations=list(pair(a["dilation"])))


def _unfold(w, n, ins):
    if w.consumers.get(id(n.outputs[0]), 0) == 0:
        return None      # NOTE: every consumer became a Conv/MaxPool, reading x directly
    _, c, h, wd = n.inputs[0].shape
    if None in (c, h, wd):
        raise OnnxError(f"graph.onnx.export: {describe_node(n)}: unfold needs known channels "
                        f"and image size, got {n.inputs[0].shape}")
    kh, kw = n.attrs["kernel"]
    (sh, sw), (ph, pw), (dh, dw) = _window_attrs(n)
    x = ins[0]
    if ph or pw:
        x = w.emit("Pad", [x, w.ints([0, 0, ph, pw, 0, 0, ph, pw]),
                           w.const(np.zeros((), n.inputs[0].dtype))], mode="constant")
    ho, wo = window_outs((h, wd), (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    cols = []
    for i in range(kh):
        for j in range(kw):
            sl = w.emit("Slice", [x, w.ints([i * dh, j * dw]),
                                  w.ints([i * dh + sh * (ho - 1) + 1, j * dw + sw * (wo - 1) + 1]),
                                  w.ints([2, 3]), w.ints([sh, sw])])
            cols.append(w.emit("Unsqueeze", [sl, w.ints([2])]))
    stacked = w.emit("Concat", cols, axis=2)                      # (N, C, kh*kw, Ho, Wo)
    return w.emit("Reshape", [stacked, w.ints([0, c * kh * kw, ho * wo])])


def _softmax_cross_entropy(w, n, ins):
    """-sum(labels * LogSoftmax(logits)) over the last axis, a zero label's term 0 (as the
    kernel: a masked class at -inf adds 0, not nan)."""
    dt = n.outputs[0].dtype
    x, t = _in_dtype(w, n, ins, dt)
    prod = w.emit("Mul", [t, w.emit("LogSoftmax", [x], axis=-1)])
    zero = w.const(np.zeros((), dt))
    prod = w.emit("Where", [w.emit("Equal", [t, zero]), zero, prod])
    return w.emit("Neg", [w.reduce("ReduceSum", prod, [-1], 0)])


# NOTE: ops not listed here are written by `_direct` when their registry entry has `onnx=`
RULES = {"matmul": _matmul, **{k: _compare for k in ("eq", "ne", "lt", "le", "gt", "ge")},
         "where": _where, "cast": _cast, "stop_gradient": _identity, "sum": _sum, "max": _max,
         "argmax": _argmax, "count": _count, "cumsum": _cumsum, "reshape": _reshape,
         "reshape_like": _like("Reshape"), "broadcast_like": _like("Expand"),
         "transpose": _transpose, "broadcast_to": _broadcast_to, "expand_dims": _expand_dims,
         "squeeze": _squeeze, "concat": _concat, "slice": _slice, "take": _take, "pad": _pad,
         "argsort": _argsort, "gather": _gather,
         "zeros_like": _fill(0), "ones_like": _fill(1), "one_hot": _one_hot, "unfold": _unfold,
         "max_pool": _max_pool,
         "softmax_cross_entropy": _softmax_cross_entropy, "cascade_sum": _cascade_sum,
         "truncatemod": _truncatemod}


# -- the model ----------------------------------------------------------------------------------
def _consumers(nodes, outputs):
    """How many consumers of each unfold output are not turned into a Conv / MaxPool."""
    out = {id(t): 1 for t in outputs}
    for n in nodes:
        for k, t in enumerate(n.inputs):
            if t.node.type != "unfold":
                continue
            absorbed = (n.type == "matmul" and k == 1 and _is_conv(n)) or \
                (n.type == "max" and _is_pool(n))
            if not absorbed:
                out[id(t)] = out.get(id(t), 0) + 1
    return out


def _value_info(h, name, spec, onnx, dims):
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(spec.dtype))
    shape = [d if d is not None else dims(i) for i, d in enumerate(spec.shape)]
    return h.make_tensor_value_info(name, elem, shape)


def to_model(inputs, outputs, session=None, opset=17, output_names=None, name="dualgrad"):
    """The ONNX ModelProto (checked) of the frozen graph from inputs to outputs."""
    onnx = _helper()
    if opset > onnx.defs.onnx_opset_version():
        raise OnnxError(f"graph.onnx.export: opset {opset} is newer than the installed onnx "
                        f"package knows ({onnx.defs.onnx_opset_version()})")
    if not OLDEST_OPSET <= opset <= NEWEST_OPSET:
        raise OnnxError(f"graph.onnx.export: opset {opset} is not supported; dualgrad writes "
                        f"opsets {OLDEST_OPSET} to {NEWEST_OPSET}")
    try:
        g, ins, outs = freeze(inputs, outputs, session)
    except FreezeError as e:
        raise OnnxError(f"graph.onnx.export: {e}") from None
    nodes = g.get_operations()
    w = Writer(onnx, _consumers(nodes, outs), opset)
    w.value = lambda t: w.names[id(t)]
    in_names = [p.node.name for p in ins]
    if len(set(in_names)) != len(in_names):
        raise OnnxError(f"graph.onnx.export: two inputs share a name: {in_names}")
    for n in nodes:
        _write(w, n, in_names, ins)
    names = output_names or _default_names([t.node.name for t in outs], in_names)
    if len(names) != len(outs) or len(set(names)) != len(names) or set(names) & set(in_names):
        raise OnnxError(f"graph.onnx.export: output names {names} must be unique, one per "
                        f"output, and differ from the input names")
    for t, nm in zip(outs, names):
        w.emit("Identity", [w.value(t)], out=nm)
    h = onnx.helper

    def dims(base):
        return lambda i: "batch" if i == 0 else f"{base}_dim{i}"
    graph = h.make_graph(
        w.nodes, name, [_value_info(h, nm, p.spec, onnx, dims(nm)) for nm, p in zip(in_names, ins)],
        [_value_info(h, nm, t.spec, onnx, dims(nm)) for nm, t in zip(names, outs)], w.inits)
    ids = [h.make_opsetid("", opset)]
    model = h.make_model(graph, opset_imports=ids, producer_name="dualgrad",
                         ir_version=max(8, h.find_min_ir_version_for(ids)))
    onnx.checker.check_model(model, full_check=True)
    return model


def _default_names(names, taken):
    out, taken = [], set(taken)
    for nm in names:
        new, i = nm, 0
        while new in taken:
            i += 1
            new = f"{nm}_{i}"
        taken.add(new)
        out.append(new)
    return out


def _write(w, n, in_names, ins):
    t = n.outputs[0]
    if n.type == "placeholder":
        w.names[id(t)] = in_names[[p.node for p in ins].index(n)]
        return
    if n.type == "const":
        w.names[id(t)] = w.const(n.attrs["value"], n.name.replace(":", "_"))
        return
    rule = RULES.get(n.type) or (_direct if n.op is not None and n.op.onnx else None)
    if rule is None:
        raise OnnxError(f"graph.onnx.export: {describe_node(n)} has no ONNX counterpart in "
                        f"dualgrad's exporter")
    out = rule(w, n, [w.names.get(id(i)) for i in n.inputs])
    if out is not None:
        w.names[id(t)] = out


def export(path, inputs, outputs, session=None, opset=17, output_names=None):
    """Write the graph from `inputs` (placeholders) to `outputs` as an ONNX file.

    Variables are frozen with their values in `session`. Inputs are named after their
    placeholders, outputs after their nodes (or `output_names`); the first dim of an input
    whose first dim is None is called `batch`. The file is checked with onnx.checker.
    Returns the path.
    """
    model = to_model(list(inputs), list(outputs), session, opset, output_names)
    path = os.fspath(path)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, path)
    return path
