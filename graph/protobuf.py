"""The protobuf wire format and text format, in pure Python, for the few TF messages dualgrad
reads and writes (example.proto in graph/io.py; graph.proto, node_def.proto, attr_value.proto,
tensor.proto, meta_graph.proto in graph/graph_def.py). No protobuf package at run time.

A message class declares its fields in one table, `FIELDS = {name: (number, kind, label)}`:
kind is a scalar kind (`"int64"`, `"int32"`, `"uint64"`, `"bool"`, `"enum"`, `"float"`,
`"double"`, `"string"`, `"bytes"`; `"raw"`: a submessage kept as its bytes), or a Message
subclass; label is `""` (singular),
`"repeated"`, `"packed"` (a repeated number, written packed as proto3 does) or `"map"`
(string keys; kind is the value's). Fields named in `ONEOF` are one choice, as protobuf's
`oneof value`. Reading checks every length against the buffer, so a crafted or truncated
message raises `DecodeError` (protobuf's name) and never allocates more than its own size.

>>> class Pair(Message):
...     FIELDS = {"name": (1, "string", ""), "n": (2, "int64", "packed")}
>>> p = Pair(name="a", n=[1, -2])
>>> Pair.FromString(p.SerializeToString())
Pair(name='a', n=[1, -2])
>>> print(p, end="")
name: "a"
n: 1
n: -2
"""
from __future__ import annotations

import math
import struct

import numpy as np

__all__ = ["DecodeError", "Message", "Parsable", "varint", "read_varint", "field", "fields", "signed"]


class DecodeError(ValueError):
    """Bytes that are not a valid message of the expected type (protobuf's DecodeError)."""


# -- wire format -----------------------------------------------------------------------------------
def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def read_varint(buf, i):
    """(value, next position); at most 10 bytes, never past the end of buf."""
    shift = result = 0
    for _ in range(10):
        if i >= len(buf):
            raise DecodeError("truncated message: a varint runs past the end")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & ((1 << 64) - 1), i
        shift += 7
    raise DecodeError("malformed varint: longer than 10 bytes")


def field(number, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _take(buf, i, n):
    """n bytes at i: a view when buf is a memoryview (messages parse without copying)."""
    if n > len(buf) - i:
        raise DecodeError(f"truncated message: a field of {n} bytes runs past the end")
    return buf[i:i + n], i + n


def fields(buf):
    """(field number, wire type, value) of a message: varints as ints, the rest as bytes."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError("malformed message: field number 0")
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 2:
            n, i = read_varint(buf, i)
            value, i = _take(buf, i, n)
        elif wire == 5:
            value, i = _take(buf, i, 4)
        elif wire == 1:
            value, i = _take(buf, i, 8)
        else:
            raise DecodeError(f"unsupported protobuf wire type {wire} (field {number})")
        yield number, wire, value


def signed(n: int, bits=64) -> int:
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >= 1 << (bits - 1) else n


# -- scalar kinds: wire type, decode, encode, default ----------------------------------------------
_FIXED = {"float": ("<f", 5), "double": ("<d", 1)}
_VARINT = {"int64": lambda v: signed(v), "int32": lambda v: signed(v, 32),
           "uint64": lambda v: v, "uint32": lambda v: v & 0xFFFFFFFF,
           "enum": lambda v: signed(v, 32), "bool": bool}
_DEFAULT = {"string": "", "bytes": b"", "raw": b"", "bool": False, "float": 0.0, "double": 0.0}


def _decode(kind, wire, value, name):
    if kind in _VARINT:
        if wire != 0:
            raise DecodeError(f"field {name!r}: wire type {wire}, expected a varint")
        return _VARINT[kind](value)
    if kind in _FIXED:
        fmt, want = _FIXED[kind]
        if wire != want:
            raise DecodeError(f"field {name!r}: wire type {wire}, expected {want}")
        return struct.unpack(fmt, value)[0]
    if wire != 2:
        raise DecodeError(f"field {name!r}: wire type {wire}, expected length-delimited")
    if kind == "string":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError(f"field {name!r}: string is not valid UTF-8") from None
    if kind in ("bytes", "raw"):
        return bytes(value)
    return kind.FromString(value)


def _decode_packed(kind, payload, name):
    if kind in _FIXED:
        fmt, _ = _FIXED[kind]
        if len(payload) % struct.calcsize(fmt):
            raise DecodeError(f"field {name!r}: packed {kind}s of {len(payload)} bytes")
        return np.frombuffer(payload, fmt).tolist()
    out, i = [], 0
    while i < len(payload):
        v, i = read_varint(payload, i)
        out.append(_VARINT[kind](v))
    return out


def _encode(kind, v):
    """(wire type, payload) of one scalar or message."""
    if kind in _VARINT:
        return 0, varint(int(v))
    if kind in _FIXED:
        return _FIXED[kind][1], struct.pack(_FIXED[kind][0], float(v))
    if kind == "string":
        return 2, v.encode("utf-8")
    if kind in ("bytes", "raw"):
        return 2, bytes(v)
    return 2, v.SerializeToString()


def _key_and(number, wire, payload):
    head = varint(number << 3 | wire)
    return head + varint(len(payload)) + payload if wire == 2 else head + payload


class _Repeated(list):
    """A repeated message field: a list with protobuf's `add(**fields)`."""

    def __init__(self, cls, items=()):
        super().__init__(items)
        self.cls = cls

    def add(self, **kw):
        m = self.cls(**kw)
        self.append(m)
        return m


class _Map(dict):
    """A map of messages: reading a missing key adds an empty message, as protobuf's does."""

    def __init__(self, cls, items=()):
        super().__init__(items)
        self.cls = cls

    def __missing__(self, key):
        m = self[key] = self.cls()
        return m


class Parsable:
    """protobuf's `Message.FromString(data)` for any class with `ParseFromString`."""

    @classmethod
    def FromString(cls, data):  # noqa: N802 - protobuf's name
        m = cls()
        m.ParseFromString(data)
        return m


# -- messages --------------------------------------------------------------------------------------
class Message(Parsable):
    FIELDS: dict = {}
    ONEOF: tuple = ()

    def __init__(self, **kw):
        object.__setattr__(self, "_present", set())
        for name, (_, kind, label) in self.FIELDS.items():
            object.__setattr__(self, name, self._empty(kind, label))
        for name, v in kw.items():
            if name not in self.FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            setattr(self, name, v)

    @staticmethod
    def _empty(kind, label):
        if label == "map":
            return _Map(kind) if isinstance(kind, type) else {}
        if label:
            return _Repeated(kind) if isinstance(kind, type) else []
        return kind() if isinstance(kind, type) else _DEFAULT.get(kind, 0)

    def __setattr__(self, name, v):
        spec = self.FIELDS.get(name)
        if spec is None:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        _, kind, label = spec
        if label:
            new = self._empty(kind, label)
            new.update(v) if label == "map" else new.extend(v)
            v = new
        if name in self.ONEOF:
            self._present.difference_update(self.ONEOF)
        self._present.add(name)
        object.__setattr__(self, name, v)

    # protobuf's methods -----------------------------------------------------------------------
    def HasField(self, name):  # noqa: N802
        if name == "value" and self.ONEOF:
            return self.WhichOneof("value") is not None
        _, kind, _ = self.FIELDS[name]
        return name in self._present or isinstance(kind, type) and \
            bool(getattr(self, name).ListFields())

    def WhichOneof(self, group):  # noqa: N802
        chosen = [n for n in self.ONEOF if n in self._present]
        return chosen[-1] if chosen else None

    def enum_name(self, name, v):
        """How the text format writes enum field `name`'s value `v` (subclasses name them)."""
        return str(v)

    def ListFields(self):  # noqa: N802
        return [(n, getattr(self, n)) for n in self.FIELDS if self._is_set(n)]

    def _is_set(self, name):
        _, kind, label = self.FIELDS[name]
        v = getattr(self, name)
        if label or name in self.ONEOF:
            return bool(v) if label else self.WhichOneof("value") == name
        if name in self._present and (isinstance(kind, type) or kind == "raw"):
            return True
        if isinstance(kind, type):
            return bool(v.ListFields())
        return v != self._empty(kind, label)

    def CopyFrom(self, other):  # noqa: N802
        self.ParseFromString(other.SerializeToString())

    def MergeFromString(self, data):  # noqa: N802
        for number, wire, value in fields(data):
            name = self._NUMBERS().get(number)
            if name is not None:
                self._read_field(name, wire, value)
        return len(data)

    def ParseFromString(self, data):  # noqa: N802
        self.__init__()
        return self.MergeFromString(data if isinstance(data, memoryview) else
                                    memoryview(data if isinstance(data, bytes) else bytes(data)))

    def SerializeToString(self, deterministic=False):  # noqa: N802
        out = []
        for name, (number, kind, label) in self.FIELDS.items():
            if not self._is_set(name):
                continue
            v = getattr(self, name)
            if label == "map":
                for k in sorted(v):
                    entry = field(1, k.encode("utf-8")) + _key_and(2, *_encode(kind, v[k]))
                    out.append(field(number, entry))
            elif label == "packed":
                out.append(field(number, b"".join(_encode(kind, x)[1] for x in v)))
            elif label:
                out += [_key_and(number, *_encode(kind, x)) for x in v]
            else:
                out.append(_key_and(number, *_encode(kind, v)))
        return b"".join(out)

    def ByteSize(self):  # noqa: N802
        return len(self.SerializeToString())

    @classmethod
    def _NUMBERS(cls):  # noqa: N802
        table = cls.__dict__.get("_numbers")
        if table is None:
            table = {number: name for name, (number, _, _) in cls.FIELDS.items()}
            type.__setattr__(cls, "_numbers", table)
        return table

    def _read_field(self, name, wire, value):
        _, kind, label = self.FIELDS[name]
        if label == "map":
            if wire != 2:
                raise DecodeError(f"field {name!r}: wire type {wire}, expected a map entry")
            parts = {n: (w, v) for n, w, v in fields(value)}
            key = _decode("string", *parts.get(1, (2, b"")), name)
            getattr(self, name)[key] = _decode(kind, *parts[2], name) if 2 in parts \
                else self._empty(kind, "")
        elif label == "packed" and wire == 2:
            getattr(self, name).extend(_decode_packed(kind, value, name))
        elif label:
            getattr(self, name).append(_decode(kind, wire, value, name))
        else:
            setattr(self, name, _decode(kind, wire, value, name))

    # comparison and text -------------------------------------------------------------------------
    def __eq__(self, other):
        return type(self) is type(other) and self.ListFields() == other.ListFields()

    def __repr__(self):
        inner = ", ".join(f"{n}={v!r}" for n, v in self.ListFields())
        return f"{type(self).__name__}({inner})"

    def __str__(self):
        return "".join(self._text(0))

    def _text(self, indent):
        pad = "  " * indent
        for name, v in self.ListFields():
            _, kind, label = self.FIELDS[name]
            if label == "map":
                for k in sorted(v):
                    yield f"{pad}{name} {{\n{pad}  key: {_quote(k)}\n"
                    yield from _text_value("value", kind, v[k], indent + 1, self)
                    yield f"{pad}}}\n"
            else:
                for x in v if label else [v]:
                    yield from _text_value(name, kind, x, indent, self)


def _text_value(name, kind, v, indent, owner):
    pad = "  " * indent
    if isinstance(kind, type):
        yield f"{pad}{name} {{\n"
        yield from v._text(indent + 1)
        yield f"{pad}}}\n"
    elif kind == "raw":
        if v:
            raise ValueError(f"{type(owner).__name__}.{name}: a submessage dualgrad keeps as "
                             f"bytes cannot be written in text format")
        yield f"{pad}{name} {{\n{pad}}}\n"
    elif kind == "enum":
        yield f"{pad}{name}: {owner.enum_name(name, v)}\n"
    elif kind == "bool":
        yield f"{pad}{name}: {'true' if v else 'false'}\n"
    elif kind in _FIXED:
        yield f"{pad}{name}: {_float_text(v, kind)}\n"
    elif kind in ("string", "bytes"):
        yield f"{pad}{name}: {_quote(v)}\n"
    else:
        yield f"{pad}{name}: {v}\n"


def _float_text(v, kind):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(float(np.float32(v))) if kind == "float" else repr(float(v))


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}
_QUOTE = {b: _ESCAPES.get(b) or (chr(b) if 32 <= b < 127 else f"\\{b:03o}") for b in range(256)}


def _quote(v):
    """C-style escaped bytes, as protobuf's text format writes them (str.translate: in C)."""
    raw = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    return '"' + raw.decode("latin-1").translate(_QUOTE) + '"'
