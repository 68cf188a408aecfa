"""TFRecord files and `tf.train.Example`, in pure Python, byte-compatible with TF's.

A TFRecord file is a sequence of records: length (uint64, little-endian), the masked CRC-32C
of the length, the data, the masked CRC-32C of the data. `TFRecordWriter` writes them,
`tf_record_iterator` and `data.TFRecordDataset` read them and check both CRCs (a corrupt
file raises `errors.DataLossError`). `Example` / `Features` / `Feature` / `Int64List` /
`FloatList` / `BytesList` encode and decode the protobuf wire format of TF's example.proto;
`parse_single_example` / `parse_example` with `FixedLenFeature` turn serialized examples into
tensors in a graph, `decode_raw` bytes into numbers.

>>> import os, tempfile
>>> from dualgrad.graph import io, train
>>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
>>> with io.TFRecordWriter(path) as w:
...     ex = train.Example(features=train.Features(feature={
...         "label": train.Feature(int64_list=train.Int64List(value=[7]))}))
...     w.write(ex.SerializeToString())
>>> [train.Example.FromString(r).features.feature["label"].int64_list.value
...  for r in io.tf_record_iterator(path)]
[[7]]
"""
from __future__ import annotations

import struct

import numpy as np

from dualgrad.ops.core import Spec

from .core import _graph_of, _lift, graph_op
from .dtypes import as_dtype
from .errors import OpError
from .protobuf import Parsable, field as _field, fields as _fields, \
    read_varint as _read_varint, signed as _signed, varint as _varint

__all__ = ["TFRecordWriter", "tf_record_iterator", "Example", "Features", "Feature",
           "Int64List", "FloatList", "BytesList", "FixedLenFeature", "parse_single_example",
           "parse_example", "decode_raw", "DataLossError"]


class DataLossError(OpError):
    """A record whose checksum does not match: the file is corrupt (TF's DataLossError)."""


# -- CRC-32C (Castagnoli), masked as TFRecord stores it ------------------------------------------
def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc, table = 0xFFFFFFFF, _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# -- record files -------------------------------------------------------------------------------
class TFRecordWriter:
    """`tf.python_io.TFRecordWriter(path)`: `write(bytes)`, `flush()`, `close()`; a context
    manager."""

    def __init__(self, path, options=None):
        if options:
            raise NotImplementedError("TFRecordWriter: compressed records are not supported")
        self._f = open(path, "wb")

    def write(self, record):
        record = record.encode() if isinstance(record, str) else bytes(record)
        length = struct.pack("<Q", len(record))
        self._f.write(length + struct.pack("<I", masked_crc(length)) + record +
                      struct.pack("<I", masked_crc(record)))

    def flush(self):
        self._f.flush()

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tf_record_iterator(path, options=None):
    """The records of a TFRecord file, one `bytes` at a time (lazily), CRCs checked."""
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if not head:
                return
            if len(head) < 12:
                raise DataLossError(f"truncated record at the end of {path}")
            length, crc = struct.unpack("<QI", head)
            if masked_crc(head[:8]) != crc:
                raise DataLossError(f"corrupted record in {path}: length checksum mismatch")
            data, tail = f.read(length), f.read(4)
            if len(data) < length or len(tail) < 4:
                raise DataLossError(f"truncated record at the end of {path}")
            if masked_crc(data) != struct.unpack("<I", tail)[0]:
                raise DataLossError(f"corrupted record in {path}: data checksum mismatch")
            yield data


class _Message(Parsable):
    def __eq__(self, other):   # NOTE: by content: a map's entries may come in any order
        return type(self) is type(other) and self._content() == other._content()

    def _content(self):
        return self.value

    def __repr__(self):
        return f"{type(self).__name__}({self._content()!r})"


class Int64List(_Message):
    def __init__(self, value=()):
        self.value = [int(v) for v in value]

    def SerializeToString(self):  # noqa: N802
        return _field(1, b"".join(_varint(v) for v in self.value)) if self.value else b""

    def ParseFromString(self, data):  # noqa: N802
        self.value = []
        for _, wire, v in _fields(data):
            if wire == 0:
                self.value.append(_signed(v))
            else:
                i = 0
                while i < len(v):
                    n, i = _read_varint(v, i)
                    self.value.append(_signed(n))


class FloatList(_Message):
    def __init__(self, value=()):
        self.value = [float(np.float32(v)) for v in value]

    def SerializeToString(self):  # noqa: N802
        return _field(1, np.asarray(self.value, "<f4").tobytes()) if self.value else b""

    def ParseFromString(self, data):  # noqa: N802
        self.value = []
        for _, _, v in _fields(data):
            self.value += np.frombuffer(v, "<f4").astype(float).tolist()


class BytesList(_Message):
    def __init__(self, value=()):
        self.value = [v.encode() if isinstance(v, str) else bytes(v) for v in value]

    def SerializeToString(self):  # noqa: N802
        return b"".join(_field(1, v) for v in self.value)

    def ParseFromString(self, data):  # noqa: N802
        self.value = [v for _, _, v in _fields(data)]


_KINDS = (("bytes_list", BytesList), ("float_list", FloatList), ("int64_list", Int64List))


class Feature(_Message):
    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        given = [(n, v) for n, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                     ("int64_list", int64_list)) if v is not None]
        if len(given) > 1:
            raise ValueError("Feature: give one of bytes_list, float_list, int64_list")
        self.kind, self.list = given[0] if given else (None, None)
        for name, cls in _KINDS:
            setattr(self, name, self.list if name == self.kind else cls())

    def _content(self):
        return (self.kind, None if self.list is None else self.list.value)

    def WhichOneof(self, name):  # noqa: N802
        return self.kind

    def SerializeToString(self):  # noqa: N802
        if self.kind is None:
            return b""
        number = [n for n, _ in _KINDS].index(self.kind) + 1
        return _field(number, self.list.SerializeToString())

    def ParseFromString(self, data):  # noqa: N802
        self.__init__()
        for number, _, v in _fields(data):
            name, cls = _KINDS[number - 1]
            self.kind, self.list = name, cls.FromString(v)
            setattr(self, name, self.list)


class Features(_Message):
    def __init__(self, feature=None):
        self.feature = dict(feature or {})

    def _content(self):
        return {k: f._content() for k, f in self.feature.items()}

    def SerializeToString(self):  # noqa: N802
        return b"".join(_field(1, _field(1, k.encode()) + _field(2, f.SerializeToString()))
                        for k, f in sorted(self.feature.items()))   # TF's deterministic order

    def ParseFromString(self, data):  # noqa: N802
        self.feature = {}
        for _, _, entry in _fields(data):
            parts = {n: v for n, _, v in _fields(entry)}
            self.feature[parts.get(1, b"").decode()] = Feature.FromString(parts.get(2, b""))


class Example(_Message):
    def __init__(self, features=None):
        self.features = features if features is not None else Features()

    def _content(self):
        return self.features._content()

    def SerializeToString(self):  # noqa: N802
        return _field(1, self.features.SerializeToString())

    def ParseFromString(self, data):  # noqa: N802
        self.features = Features()
        for number, _, v in _fields(data):
            if number == 1:
                self.features = Features.FromString(v)


# -- parsing in a graph -------------------------------------------------------------------------
class FixedLenFeature:
    """A feature of fixed shape and dtype (int64, float32 or string); `default_value` fills
    it when an example lacks the key (else parsing raises)."""

    def __init__(self, shape, dtype, default_value=None):
        self.shape, self.default_value = tuple(shape), default_value
        self.dtype = np.dtype(object) if dtype is str else as_dtype(dtype)


def _feature_value(example, key, spec):
    f = example.features.feature.get(key)
    if f is None or f.kind is None:
        if spec.default_value is None:
            raise ValueError(f"parse_example: feature {key!r} is required but could not be "
                             "found")
        return np.broadcast_to(np.asarray(spec.default_value, spec.dtype), spec.shape)
    values = np.asarray(f.list.value, dtype=spec.dtype)
    size = int(np.prod(spec.shape))
    if values.size != size:
        raise ValueError(f"parse_example: key {key!r} has {values.size} values, shape "
                         f"{spec.shape} needs {size}")
    return values.reshape(spec.shape)


def _parse_kernel(node):
    keys, specs = node.attrs["keys"], node.attrs["specs"]

    def run(serialized):
        batch = np.asarray(serialized, dtype=object)
        examples = [Example.FromString(s) for s in batch.reshape(-1)]
        outs = [np.stack([_feature_value(e, k, s) for e in examples]).reshape(
            batch.shape + s.shape) if examples else np.zeros(batch.shape + s.shape, s.dtype)
            for k, s in zip(keys, specs)]
        return tuple(outs) if len(outs) > 1 else outs[0]
    return run, False


PARSE_EXAMPLE = graph_op("parse_example", _parse_kernel)


def parse_example(serialized, features, name=None, example_names=None):
    """Serialized `Example`s (a string tensor of any shape) to {key: tensor of shape
    serialized.shape + feature shape}; only `FixedLenFeature` is supported."""
    for k, f in features.items():
        if not isinstance(f, FixedLenFeature):
            raise NotImplementedError(f"parse_example: feature {k!r} is a {type(f).__name__}; "
                                      "dualgrad parses FixedLenFeature only")
    keys = sorted(features)
    g = _graph_of([serialized])
    t = _lift(g, serialized, [serialized])
    lead = tuple(t.shape) if t.shape is not None else None
    specs = [Spec(None if lead is None else lead + features[k].shape, features[k].dtype)
             for k in keys]
    node = g.create_node(PARSE_EXAMPLE, (t,), {"keys": keys, "specs": [features[k] for k in keys]},
                         specs, name or "ParseExample")
    return dict(zip(keys, node.outputs))


def parse_single_example(serialized, features, name=None, example_names=None):
    return parse_example(serialized, features, name)


def _decode_raw_kernel(node):
    dt, little = node.attrs["dtype"], node.attrs["little_endian"]

    def run(data):
        arr = np.asarray(data, dtype=object)
        order = "<" if little else ">"
        rows = [np.frombuffer(b, dtype=dt.newbyteorder(order)).astype(dt)
                for b in arr.reshape(-1)]
        return np.stack(rows).reshape(arr.shape + (-1,)) if rows else np.zeros(arr.shape + (0,), dt)
    return run, False


DECODE_RAW = graph_op("decode_raw", _decode_raw_kernel)


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """Bytes to numbers: a string tensor of shape S gives shape S + (n,)."""
    data = input_bytes if input_bytes is not None else bytes
    dt = as_dtype(out_type)
    g = _graph_of([data])
    t = _lift(g, data, [data])
    shape = None if t.shape is None else tuple(t.shape) + (None,)
    node = g.create_node(DECODE_RAW, (t,), {"dtype": dt, "little_endian": bool(little_endian)},
                         [Spec(shape, dt)], name or "DecodeRaw")
    return node.outputs[0]


