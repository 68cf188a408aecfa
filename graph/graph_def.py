"""TF's graph messages (`tf.GraphDef`, `tf.NodeDef`, `tf.AttrValue`, `tf.MetaGraphDef`, ...)
over graph/protobuf.py, byte-compatible with TF's graph.proto, node_def.proto,
attr_value.proto, tensor.proto, tensor_shape.proto and meta_graph.proto for the fields listed
here (others, such as a node's debug info or a MetaGraphDef's signatures, are skipped when
read and not written). `make_tensor_proto` / `make_ndarray` convert TensorProtos; values a
file repeats (one float for a whole shape, as TF's format allows) are refused past
`MAX_TENSOR_BYTES`, before allocation.

>>> import numpy as np
>>> t = make_tensor_proto(np.arange(3, dtype=np.int32))
>>> make_ndarray(TensorProto.FromString(t.SerializeToString()))
array([0, 1, 2], dtype=int32)
"""
from __future__ import annotations

import numpy as np

from .protobuf import DecodeError, Message

__all__ = ["GraphDef", "NodeDef", "AttrValue", "NameAttrList", "TensorProto",
           "TensorShapeProto", "VersionDef", "SaverDef", "MetaGraphDef", "make_tensor_proto",
           "make_ndarray", "DecodeError", "MAX_TENSOR_BYTES", "DTYPES", "dtype_code",
           "dtype_name"]

MAX_TENSOR_BYTES = 1 << 28   # 256 MiB: a constant a file may make by repeating its values

# DataType enum (types.proto): code -> (name, NumPy dtype or None where NumPy has none)
DTYPES = {1: ("DT_FLOAT", np.float32), 2: ("DT_DOUBLE", np.float64), 3: ("DT_INT32", np.int32),
          4: ("DT_UINT8", np.uint8), 5: ("DT_INT16", np.int16), 6: ("DT_INT8", np.int8),
          7: ("DT_STRING", object), 8: ("DT_COMPLEX64", np.complex64),
          9: ("DT_INT64", np.int64), 10: ("DT_BOOL", np.bool_), 11: ("DT_QINT8", None),
          12: ("DT_QUINT8", None), 13: ("DT_QINT32", None), 14: ("DT_BFLOAT16", None),
          15: ("DT_QINT16", None), 16: ("DT_QUINT16", None), 17: ("DT_UINT16", np.uint16),
          18: ("DT_COMPLEX128", np.complex128), 19: ("DT_HALF", np.float16),
          20: ("DT_RESOURCE", None), 21: ("DT_VARIANT", None), 22: ("DT_UINT32", np.uint32),
          23: ("DT_UINT64", np.uint64)}
_CODES = {np.dtype(t): c for c, (_, t) in DTYPES.items() if t is not None}


def dtype_name(code) -> str:
    """`DT_FLOAT` for 1, `DT_FLOAT_REF` for 101 (a variable's reference type)."""
    base = DTYPES.get(code % 100 if code > 100 else code)
    if base is None or code <= 0:
        return str(code)
    return base[0] + ("_REF" if code > 100 else "")


def dtype_code(dtype) -> int:
    """The DataType of a NumPy dtype (ValueError for one TF has no type for)."""
    dt = np.dtype(dtype)
    if dt.kind in "OSU":
        return 7
    if dt not in _CODES:
        raise ValueError(f"no TF DataType for dtype {dt}")
    return _CODES[dt]


def numpy_dtype(code, what):
    """The NumPy dtype of DataType `code` (a `_REF` type reads as its value type)."""
    code = code - 100 if code > 100 else code
    entry = DTYPES.get(code)
    if entry is None or entry[1] is None:
        raise ValueError(f"{what}: TF dtype {dtype_name(code)} is not supported")
    return np.dtype(entry[1])


class _Typed(Message):
    """A message with DataType fields, named as TF's text format names them."""
    TYPE_FIELDS = ("dtype", "type")

    def enum_name(self, name, v):
        return dtype_name(v) if name in self.TYPE_FIELDS else str(v)


class TensorShapeProto(Message):
    class Dim(Message):
        FIELDS = {"size": (1, "int64", ""), "name": (2, "string", "")}

    FIELDS = {"dim": (2, Dim, "repeated"), "unknown_rank": (3, "bool", "")}


class TensorProto(_Typed):
    FIELDS = {"dtype": (1, "enum", ""), "tensor_shape": (2, TensorShapeProto, ""),
              "version_number": (3, "int32", ""), "tensor_content": (4, "bytes", ""),
              "half_val": (13, "int32", "packed"), "float_val": (5, "float", "packed"),
              "double_val": (6, "double", "packed"), "int_val": (7, "int32", "packed"),
              "string_val": (8, "bytes", "repeated"), "scomplex_val": (9, "float", "packed"),
              "int64_val": (10, "int64", "packed"), "bool_val": (11, "bool", "packed"),
              "dcomplex_val": (12, "double", "packed"), "uint32_val": (16, "uint32", "packed"),
              "uint64_val": (17, "uint64", "packed")}


class NameAttrList(Message):
    FIELDS = {"name": (1, "string", "")}   # "attr" added below (AttrValue refers back)


class AttrValue(_Typed):
    class ListValue(_Typed):
        FIELDS = {"s": (2, "bytes", "repeated"), "i": (3, "int64", "packed"),
                  "f": (4, "float", "packed"), "b": (5, "bool", "packed"),
                  "type": (6, "enum", "packed"), "shape": (7, TensorShapeProto, "repeated"),
                  "tensor": (8, TensorProto, "repeated"), "func": (9, NameAttrList, "repeated")}

    FIELDS = {"list": (1, ListValue, ""), "s": (2, "bytes", ""), "i": (3, "int64", ""),
              "f": (4, "float", ""), "b": (5, "bool", ""), "type": (6, "enum", ""),
              "shape": (7, TensorShapeProto, ""), "tensor": (8, TensorProto, ""),
              "placeholder": (9, "string", ""), "func": (10, NameAttrList, "")}
    ONEOF = tuple(FIELDS)


NameAttrList.FIELDS = {**NameAttrList.FIELDS, "attr": (2, AttrValue, "map")}


class NodeDef(Message):
    FIELDS = {"name": (1, "string", ""), "op": (2, "string", ""),
              "input": (3, "string", "repeated"), "device": (4, "string", ""),
              "attr": (5, AttrValue, "map")}


class VersionDef(Message):
    FIELDS = {"producer": (1, "int32", ""), "min_consumer": (2, "int32", ""),
              "bad_consumers": (3, "int32", "packed")}


class GraphDef(Message):
    """TF's `tf.GraphDef`: `node` (NodeDefs), `versions`; `library` (functions, which
    import_graph_def does not run) is kept as its bytes.

    >>> gd = GraphDef()
    >>> n = gd.node.add(name="x", op="Placeholder")
    >>> n.attr["dtype"].type = 1
    >>> GraphDef.FromString(gd.SerializeToString()).node[0].attr["dtype"].type
    1
    """
    FIELDS = {"node": (1, NodeDef, "repeated"), "library": (2, "raw", ""),
              "version": (3, "int32", ""), "versions": (4, VersionDef, "")}


class SaverDef(Message):
    FIELDS = {"filename_tensor_name": (1, "string", ""), "save_tensor_name": (2, "string", ""),
              "restore_op_name": (3, "string", ""), "max_to_keep": (4, "int32", ""),
              "sharded": (5, "bool", ""), "keep_checkpoint_every_n_hours": (6, "float", ""),
              "version": (7, "enum", "")}


class MetaGraphDef(Message):
    """TF's `.meta` file: the `graph_def` and `saver_def` (meta_info_def, collections and
    signatures are skipped)."""
    FIELDS = {"graph_def": (2, GraphDef, ""), "saver_def": (3, SaverDef, "")}


# -- TensorProto <-> NumPy -------------------------------------------------------------------------
_VALUES = {"float32": "float_val", "float64": "double_val", "int64": "int64_val",
           "bool": "bool_val", "uint32": "uint32_val", "uint64": "uint64_val",
           "complex64": "scomplex_val", "complex128": "dcomplex_val", "float16": "half_val"}


def shape_of(proto: TensorShapeProto, what):
    """A TensorShapeProto as a shape tuple (None for unknown dims), or None: unknown rank."""
    if proto.unknown_rank:
        return None
    dims = tuple(None if d.size == -1 else d.size for d in proto.dim)
    if any(d is not None and d < 0 for d in dims):
        raise ValueError(f"{what}: invalid dimension in shape {[d.size for d in proto.dim]}")
    return dims


def shape_proto(shape) -> TensorShapeProto:
    if shape is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if d is None else int(d))
                                 for d in shape])


def make_ndarray(tensor: TensorProto, what="tensor"):
    """The NumPy array a TensorProto holds (TF's `tf.make_ndarray`). Fewer values than the
    shape holds repeat the last one, as TF reads them; more is an error."""
    dt = numpy_dtype(tensor.dtype, what)
    shape = shape_of(tensor.tensor_shape, what)
    if shape is None:
        raise ValueError(f"{what}: a constant of unknown rank")
    if None in shape:
        raise ValueError(f"{what}: a constant of unknown dimension {shape}")
    count = int(np.prod(shape, dtype=object))
    if tensor.tensor_content and dt != object:
        if len(tensor.tensor_content) != count * dt.itemsize:
            raise ValueError(f"{what}: tensor_content holds {len(tensor.tensor_content)} "
                             f"bytes, shape {shape} {dt} needs {count * dt.itemsize}")
        return np.frombuffer(tensor.tensor_content, dt.newbyteorder("<")).astype(dt) \
            .reshape(shape)
    values = _values(tensor, dt)
    if len(values) > count:
        raise ValueError(f"{what}: {len(values)} values for shape {shape}")
    if len(values) < count and count * max(dt.itemsize, 1) > MAX_TENSOR_BYTES:
        raise ValueError(f"{what}: {len(values)} values repeated to shape {shape} {dt} would "
                         f"be over the limit of {MAX_TENSOR_BYTES} bytes")
    if dt == object:
        out = np.empty(count, object)
        out[:len(values)] = values
        out[len(values):] = values[-1] if values else b""
        return out.reshape(shape)
    if not len(values):
        return np.zeros(shape, dt)
    arr = np.asarray(values).astype(dt) if dt != np.float16 else \
        np.asarray(values, np.uint16).view(np.float16)
    if len(arr) < count:
        arr = np.concatenate([arr, np.full(count - len(arr), arr[-1], dt)])
    return arr.reshape(shape)


def _values(tensor, dt):
    if dt == object:
        return list(tensor.string_val)
    name = _VALUES.get(dt.name, "int_val")
    values = getattr(tensor, name)
    if dt.kind == "c":
        pairs = np.asarray(values, np.float64).reshape(-1, 2)
        return pairs[:, 0] + 1j * pairs[:, 1]
    return values


def make_tensor_proto(values, dtype=None, shape=None) -> TensorProto:
    """A TensorProto of `values` (TF's `tf.make_tensor_proto`; `dtype`: a NumPy dtype or
    a dualgrad/TF dtype with a `.name`)."""
    if dtype is not None:
        name = None if isinstance(dtype, np.dtype) else getattr(dtype, "name", None)
        dtype = np.dtype(object) if name == "string" else np.dtype(dtype if name is None
                                                                   else name)
    arr = np.asarray(values, dtype=dtype)
    if arr.dtype.kind in "SU":
        arr = arr.astype(object)
    if shape is not None:
        arr = np.broadcast_to(arr, tuple(shape)) if arr.size == 1 else \
            arr.reshape(tuple(shape))
    t = TensorProto(dtype=dtype_code(arr.dtype), tensor_shape=shape_proto(arr.shape))
    if arr.dtype == object:
        t.string_val = [x.encode("utf-8") if isinstance(x, str) else bytes(x)
                        for x in arr.reshape(-1)]
    else:
        t.tensor_content = np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes()
    return t
