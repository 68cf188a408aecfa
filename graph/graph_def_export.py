"""`Graph.as_graph_def()`: a dualgrad graph as TF's GraphDef, which real TF's
`import_graph_def` runs. An op whose TF form is one op with only its `T` attribute says so in
its entry (`Op.tf`: `"Relu"`); the others are written by a rule in `WRITERS` as the TF ops
that compute the same thing, with the attributes TF requires (`T`, `Tidx`, ...); a
node that several TF ops make (conv2d's `unfold` is Transpose, Pad, ExtractImagePatches,
Reshape, Transpose, Reshape) keeps its name on the last of them, so tensor names match.

A node with no TF counterpart (the internals of gradients and optimizer updates: `slice_grad`,
`sum_to_like`, ...) is written with op type `dualgrad.<type>`, which neither TF nor dualgrad's
import_graph_def runs (they say so naming the node): freeze first
(`graph_util.convert_variables_to_constants`) to write what an inference graph needs.

This module reads nodes through their attributes only (no graph/core import), so
`Graph.as_graph_def` in core.py can import it late without an import cycle.
"""
from __future__ import annotations

import os

import numpy as np

from dualgrad.ops.files import atomic_path

from .graph_def import AttrValue, GraphDef, VersionDef, dtype_code, make_tensor_proto, shape_proto

__all__ = ["graph_def_of", "write_graph", "WRITERS", "PRODUCER"]

PRODUCER = 1766   # the GraphDef version written: TF 2.x's, whose ops' meaning is used here


def _ref(t) -> str:
    """A tensor as a TF input: 'x' for output 0, 'split:1' for the others."""
    return t.node.name if t.index == 0 else f"{t.node.name}:{t.index}"


def _attr(v) -> AttrValue:
    if isinstance(v, AttrValue):
        return v
    if isinstance(v, bool):
        return AttrValue(b=v)
    if isinstance(v, int):
        return AttrValue(i=v)
    if isinstance(v, float):
        return AttrValue(f=v)
    if isinstance(v, str):
        return AttrValue(s=v.encode())
    if isinstance(v, np.dtype):
        return AttrValue(type=dtype_code(v))
    if isinstance(v, (list, tuple)):
        return AttrValue(list=AttrValue.ListValue(i=[int(x) for x in v]))
    raise TypeError(f"as_graph_def: cannot write attribute value {v!r}")


class _Writer:
    def __init__(self, gd, taken):
        self.gd, self.taken = gd, taken

    def add(self, name, op, inputs, **attrs) -> str:
        nd = self.gd.node.add(name=name, op=op, input=list(inputs))
        for k, v in attrs.items():
            nd.attr[k] = _attr(v)
        self.taken.add(name)
        return name

    def aux(self, node, what) -> str:
        """A fresh name for a helper node of dualgrad node `node`."""
        base, i = f"{node.name}/{what}", 0
        name = base
        while name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        return name

    def const(self, node, what, value, dtype=np.int32) -> str:
        arr = np.asarray(value, dtype=dtype)
        return self.add(self.aux(node, what), "Const", [], dtype=arr.dtype,
                        value=AttrValue(tensor=make_tensor_proto(arr)))


def _t(node, i=0):
    return np.dtype(node.inputs[i].dtype)


# -- writers: each writes the TF nodes of one dualgrad node, the last one named as it --------------
def _simple(op, **fixed):
    def write(w, n, ins):
        return w.add(n.name, op, ins, T=_t(n), **fixed)
    return write


def _placeholder(w, n, ins):
    shape = n.attrs.get("shape")
    return w.add(n.name, "Placeholder", ins, dtype=np.dtype(n.outputs[0].dtype),
                 shape=AttrValue(shape=shape_proto(None if shape is None
                                                   else n.outputs[0].spec.shape)))


def _const(w, n, ins):
    value = np.asarray(n.attrs["value"], dtype=n.outputs[0].dtype)
    return w.add(n.name, "Const", ins, dtype=value.dtype,
                 value=AttrValue(tensor=make_tensor_proto(value)))


def _variable(w, n, ins):
    spec = n.outputs[0].spec
    return w.add(n.name, "VariableV2", ins, dtype=np.dtype(spec.dtype),
                 shape=AttrValue(shape=shape_proto(spec.shape)))


def _assign(op):
    def write(w, n, ins):
        return w.add(n.name, op, [n.attrs["var"], ins[0]], T=_t(n))
    return write


def _matmul(w, n, ins):
    a, b = (len(t.shape) for t in n.inputs)
    if a == b == 2:
        return w.add(n.name, "MatMul", ins, T=_t(n))
    return w.add(n.name, "BatchMatMulV2", ins, T=_t(n))


def _reshape(w, n, ins):
    return w.add(n.name, "Reshape", [ins[0], w.const(n, "shape", n.attrs["shape"])], T=_t(n),
                 Tshape=np.dtype(np.int32))


def _transpose(w, n, ins):
    perm = n.attrs.get("axes") or tuple(reversed(range(len(n.inputs[0].shape))))
    return w.add(n.name, "Transpose", [ins[0], w.const(n, "perm", perm)], T=_t(n),
                 Tperm=np.dtype(np.int32))


def _axes(n):
    axis = n.attrs.get("axis")
    rank = len(n.inputs[0].shape)
    return list(range(rank)) if axis is None else np.ravel(axis).tolist()


def _reduce(op):
    def write(w, n, ins):
        return w.add(n.name, op, [ins[0], w.const(n, "axis", _axes(n))], T=_t(n),
                     Tidx=np.dtype(np.int32), keep_dims=bool(n.attrs.get("keepdims", False)))
    return write


def _argmax(w, n, ins):
    name = w.aux(n, "argmax") if n.attrs.get("keepdims") else n.name
    out = w.add(name, "ArgMax", [ins[0], w.const(n, "axis", _axes(n)[0])], T=_t(n),
                Tidx=np.dtype(np.int32), output_type=np.dtype(n.outputs[0].dtype))
    if n.attrs.get("keepdims"):
        out = w.add(n.name, "ExpandDims", [out, w.const(n, "dim", _axes(n)[0])],
                    T=np.dtype(n.outputs[0].dtype), Tdim=np.dtype(np.int32))
    return out


def _cast(w, n, ins):
    return w.add(n.name, "Cast", ins, SrcT=_t(n), DstT=np.dtype(n.outputs[0].dtype))


def _expand_dims(w, n, ins):
    return w.add(n.name, "ExpandDims", [ins[0], w.const(n, "dim", n.attrs["axis"])], T=_t(n),
                 Tdim=np.dtype(np.int32))


def _squeeze(w, n, ins):
    axis = n.attrs.get("axis")
    return w.add(n.name, "Squeeze", ins, T=_t(n),
                 squeeze_dims=[] if axis is None else list(np.ravel(axis)))


def _concat(w, n, ins):
    return w.add(n.name, "ConcatV2", ins + [w.const(n, "axis", n.attrs["axis"])], T=_t(n),
                 N=len(ins), Tidx=np.dtype(np.int32))


def _pad(w, n, ins):
    widths = [(int(lo), int(hi)) for lo, hi in n.attrs["pad_width"]]
    x = ins[0]
    if any(lo < 0 or hi < 0 for lo, hi in widths):   # NOTE: TF's pads are not negative: crop first
        args = [w.const(n, what, v) for what, v in (
            ("crop_begin", [max(-lo, 0) for lo, _ in widths]),
            ("crop_end", [min(hi, 0) for _, hi in widths]), ("crop_strides", [1] * len(widths)))]
        x = w.add(w.aux(n, "crop"), "StridedSlice", [x, *args], T=_t(n),
                  Index=np.dtype(np.int32), begin_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0,
                  end_mask=sum(1 << k for k, (_, hi) in enumerate(widths) if hi >= 0))
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    pads = w.const(n, "paddings", widths)
    value = w.const(n, "constant_values", n.attrs.get("value", 0), _t(n))
    return w.add(n.name, "PadV2", [x, pads, value], T=_t(n), Tpaddings=np.dtype(np.int32))


def _pair(v):
    return (int(v), int(v)) if np.ndim(v) == 0 else tuple(int(x) for x in v)


def _nhwc_window(w, n, ins, pad_value, window):
    """NCHW input -> NHWC, padded with pad_value (top/left `padding`, bottom/right `padding`
    + `extra`), then `window(name, input)`, the op that reads NHWC windows."""
    x = w.add(w.aux(n, "to_nhwc"), "Transpose", [ins[0], w.const(n, "to_nhwc_perm",
                                                              [0, 2, 3, 1])],
              T=_t(n), Tperm=np.dtype(np.int32))
    (ph, pw), (eh, ew) = _pair(n.attrs.get("padding", 0)), _pair(n.attrs.get("extra", 0))
    if ph or pw or eh or ew:
        pads = w.const(n, "paddings", [[0, 0], [ph, ph + eh], [pw, pw + ew], [0, 0]])
        value = w.const(n, "pad_value", pad_value, _t(n))
        x = w.add(w.aux(n, "pad"), "PadV2", [x, pads, value], T=_t(n),
                  Tpaddings=np.dtype(np.int32))
    return window(x)


def _max_pool(w, n, ins):
    if _pair(n.attrs.get("dilation", 1)) != (1, 1):
        return _unsupported(w, n, ins)
    (kh, kw), (sh, sw) = _pair(n.attrs["kernel"]), _pair(n.attrs["stride"])
    pooled = _nhwc_window(w, n, ins, -np.inf, lambda x: w.add(
        w.aux(n, "MaxPool"), "MaxPool", [x], T=_t(n), ksize=[1, kh, kw, 1],
        strides=[1, sh, sw, 1], padding="VALID", data_format="NHWC"))
    return w.add(n.name, "Transpose", [pooled, w.const(n, "to_nchw_perm", [0, 3, 1, 2])],
                 T=_t(n), Tperm=np.dtype(np.int32))


def _unfold(w, n, ins):
    """(N, C, H, W) -> (N, C*kh*kw, L), channel-major, from NHWC patches (kh, kw, C)."""
    (kh, kw), (sh, sw) = _pair(n.attrs["kernel"]), _pair(n.attrs["stride"])
    (dh, dw) = _pair(n.attrs.get("dilation", 1))
    c, length = n.inputs[0].shape[1], n.outputs[0].spec.shape[2]
    if c is None or length is None:
        return _unsupported(w, n, ins)
    patches = _nhwc_window(w, n, ins, 0, lambda x: w.add(
        w.aux(n, "patches"), "ExtractImagePatches", [x], T=_t(n), ksizes=[1, kh, kw, 1],
        strides=[1, sh, sw, 1], rates=[1, dh, dw, 1], padding="VALID"))
    x = w.add(w.aux(n, "split_patch"), "Reshape",
              [patches, w.const(n, "patch_shape", [-1, length, kh * kw, c])], T=_t(n),
              Tshape=np.dtype(np.int32))
    x = w.add(w.aux(n, "channel_major"), "Transpose",
              [x, w.const(n, "channel_major_perm", [0, 3, 2, 1])], T=_t(n),
              Tperm=np.dtype(np.int32))
    return w.add(n.name, "Reshape", [x, w.const(n, "shape", [-1, c * kh * kw, length])],
                 T=_t(n), Tshape=np.dtype(np.int32))


def _slice(w, n, ins):
    begin, end, strides, masks = [], [], [], dict.fromkeys(
        ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"), 0)
    index = n.attrs["index"]
    for k, item in enumerate(index if isinstance(index, tuple) else (index,)):
        b, e, s = 0, 0, 1
        if isinstance(item, slice):
            b, e, s = item.start or 0, item.stop or 0, item.step or 1
            masks["begin_mask"] |= (item.start is None) << k
            masks["end_mask"] |= (item.stop is None) << k
        elif item is None:
            masks["new_axis_mask"] |= 1 << k
        elif item is Ellipsis:
            masks["ellipsis_mask"] |= 1 << k
        elif isinstance(item, (int, np.integer)):
            b, e = int(item), int(item) + 1
            masks["shrink_axis_mask"] |= 1 << k
        else:
            return _unsupported(w, n, ins)
        begin.append(b), end.append(e), strides.append(s)
    args = [w.const(n, what, v) for what, v in (("begin", begin), ("end", end),
                                                 ("strides", strides))]
    return w.add(n.name, "StridedSlice", [ins[0], *args], T=_t(n), Index=np.dtype(np.int32),
                 **masks)


def _take(w, n, ins):
    return w.add(n.name, "GatherV2", ins + [w.const(n, "axis", n.attrs.get("axis", 0))],
                 Tparams=_t(n), Tindices=_t(n, 1), Taxis=np.dtype(np.int32), batch_dims=0)


def _where(w, n, ins):
    return w.add(n.name, "SelectV2", ins, T=_t(n, 1))


def _unsupported(w, n, ins):
    return w.add(n.name, f"dualgrad.{n.type}", ins)


WRITERS = {   # NOTE: an op whose TF form is one op with its `T` only is `Op.tf` instead
    "placeholder": _placeholder, "const": _const, "variable": _variable,
    "assign": _assign("Assign"), "assign_add": _assign("AssignAdd"),
    "assign_sub": _assign("AssignSub"),
    "no_op": lambda w, n, ins: w.add(n.name, "NoOp", ins),
    "where": _where, "matmul": _matmul, "reshape": _reshape,
    "dynamic_reshape": lambda w, n, ins: w.add(n.name, "Reshape", ins, T=_t(n),
                                               Tshape=_t(n, 1)),
    "transpose": _transpose, "sum": _reduce("Sum"), "max": _reduce("Max"),
    "prod": _reduce("Prod"), "argmax": _argmax, "cast": _cast, "expand_dims": _expand_dims,
    "squeeze": _squeeze, "concat": _concat, "pad": _pad, "max_pool": _max_pool,
    "unfold": _unfold, "slice": _slice, "take": _take,
    "shape": lambda w, n, ins: w.add(n.name, "Shape", ins, T=_t(n),
                                     out_type=np.dtype(n.outputs[0].dtype)),
    "fill": lambda w, n, ins: w.add(n.name, "Fill", ins, T=_t(n, 1), index_type=_t(n)),
}


def _writer(n):
    if n.type in WRITERS:
        return WRITERS[n.type]
    tf_op = getattr(n.op, "tf", None)
    return _simple(tf_op) if tf_op else _unsupported


def graph_def_of(nodes) -> GraphDef:
    """The GraphDef of dualgrad graph nodes, in build order (anything with .name, .type,
    .inputs, .outputs, .attrs, .control_inputs)."""
    gd = GraphDef(versions=VersionDef(producer=PRODUCER))
    nodes = list(nodes)
    w = _Writer(gd, {n.name for n in nodes})
    for n in nodes:
        ins = [_ref(t) for t in n.inputs]
        _writer(n)(w, n, ins)
        gd.node[-1].input.extend(f"^{c.name}" for c in n.control_inputs)   # n's own name
    return gd


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """TF1's `tf.train.write_graph`: write a Graph (its `as_graph_def()`) or a GraphDef to
    `logdir/name`, in protobuf's text format (as_text, TF's default) or as binary; returns
    the path. The write is atomic (a temporary file, then a rename)."""
    gd = graph_or_graph_def
    if not isinstance(gd, GraphDef):
        if not hasattr(gd, "as_graph_def"):
            raise TypeError(f"write_graph: expected a Graph or a GraphDef, got "
                            f"{type(gd).__name__}")
        gd = gd.as_graph_def()
    os.makedirs(os.fspath(logdir), exist_ok=True)
    path = os.path.join(os.fspath(logdir), os.fspath(name))
    with atomic_path(path) as tmp:
        with open(tmp, "w" if as_text else "wb") as f:
            f.write(str(gd) if as_text else gd.SerializeToString())
    return path
