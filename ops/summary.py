"""TensorBoard event files, shared by both engines' summary writers.

`eager.utils.tensorboard.SummaryWriter` (PyTorch's API) and `graph.summary` (TF1's API) both
write through this module, which writes real event files with the `tensorboard` package's
own writer and protocol buffers (the optional `tensorboard` extra, imported on first use):

>>> import tempfile
>>> w = EventWriter(tempfile.mkdtemp())
>>> w.add_summary(Summary([scalar_value("loss", 0.5)]), step=1)
>>> w.close()

A dualgrad graph becomes a TensorBoard `GraphDef` with `graph_def(nodes)`: one NodeDef per
node (its name, op type, inputs, output dtype and shapes), so TensorBoard's Graphs tab
shows it with its name scopes.
"""
from __future__ import annotations

import time

import numpy as np

INSTALL_HINT = "pip install 'dualgrad[tensorboard]' (from a checkout: pip install -e '.[tensorboard]')"

# NumPy dtype -> TensorFlow's DataType enum (tensorboard/compat/proto/types.proto)
_DATA_TYPE = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
              "int64": 9, "bool": 10, "float16": 19}


def _tb():
    """The tensorboard package's writer and protos, or a clear error naming the extra."""
    try:
        from tensorboard.compat.proto import (attr_value_pb2, event_pb2, graph_pb2,
                                              node_def_pb2, summary_pb2, tensor_shape_pb2)
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        raise ImportError(f"TensorBoard logs need the tensorboard package: {INSTALL_HINT}") \
            from None
    return {"attr": attr_value_pb2, "event": event_pb2, "graph": graph_pb2,
            "node": node_def_pb2, "summary": summary_pb2, "shape": tensor_shape_pb2,
            "writer": EventFileWriter}


def Summary_class():  # noqa: N802 - the protocol buffer class itself
    return _tb()["summary"].Summary


def Summary(values):
    """A Summary protocol buffer holding `values` (from scalar_value / histogram_value)."""
    return _tb()["summary"].Summary(value=list(values))


def scalar_value(tag, value):
    """One scalar, e.g. a loss: a Summary.Value."""
    return _tb()["summary"].Summary.Value(tag=str(tag), simple_value=float(value))


def png(image):
    """PNG bytes of a uint8 (height, width, channels) array, channels 1 (grey), 3 (RGB) or 4
    (RGBA): one IDAT chunk of zlib-compressed rows, each with filter byte 0."""
    import struct
    import zlib
    h, w, c = image.shape
    color = {1: 0, 3: 2, 4: 6}[c]

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = np.concatenate([np.zeros((h, 1), np.uint8),
                           np.ascontiguousarray(image, np.uint8).reshape(h, w * c)], axis=1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes())) + chunk(b"IEND", b""))


def image_value(tag, image):
    """One image (uint8, (height, width, channels)) as a Summary.Value with a PNG."""
    h, w, c = image.shape
    s = _tb()["summary"]
    return s.Summary.Value(tag=str(tag), image=s.Summary.Image(
        height=h, width=w, colorspace=c, encoded_image_string=png(image)))


def _tensorflow_edges(lo, hi):
    """TensorFlow's default histogram buckets: 0 and +-1e-12 * 1.1**k up to 1e20, widened to
    hold [lo, hi]."""
    pos = 1e-12 * 1.1 ** np.arange(int(np.ceil(np.log(1e32) / np.log(1.1))))
    edges = np.concatenate([-pos[::-1], [0.0], pos])
    return np.concatenate([[min(lo, edges[0])], edges[1:-1], [max(hi, edges[-1])]])


def histogram_value(tag, values, bins="tensorflow"):
    """A histogram of `values` (any array): a Summary.Value with TensorBoard's HistogramProto.
    `bins`: "tensorflow" (TF's exponential buckets, the default of both anchors), a count, a
    sequence of edges or a NumPy rule ("auto", "fd", ...) as numpy.histogram takes it.
    Empty buckets are left out (each bucket runs from the previous limit to its own)."""
    a = np.asarray(values, dtype=np.float64).ravel()
    if a.size == 0:
        raise ValueError(f"histogram {tag!r}: no values")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"histogram {tag!r}: values contain NaN or infinity")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = _tensorflow_edges(a.min(), a.max())
    counts, edges = np.histogram(a, bins=bins)
    keep = counts > 0
    s = _tb()["summary"]
    proto = s.HistogramProto(min=float(a.min()), max=float(a.max()), num=float(a.size),
                             sum=float(a.sum()), sum_squares=float(np.dot(a, a)),
                             bucket_limit=[float(e) for e in edges[1:][keep]],
                             bucket=[float(c) for c in counts[keep]])
    return s.Summary.Value(tag=str(tag), histo=proto)


def graph_def(nodes):
    """A TensorBoard GraphDef of dualgrad graph nodes (anything with .name, .type, .inputs,
    .outputs, .control_inputs): inputs as TF names ("x", "split:1", "^init")."""
    tb = _tb()
    g = tb["graph"].GraphDef()
    for n in nodes:
        nd = g.node.add(name=n.name, op=str(n.type))
        nd.input.extend(t.node.name + (f":{t.index}" if t.index else "") for t in n.inputs)
        nd.input.extend(f"^{c.name}" for c in n.control_inputs)
        shapes = [tb["shape"].TensorShapeProto(dim=[
            tb["shape"].TensorShapeProto.Dim(size=-1 if d is None else int(d))
            for d in t.spec.shape]) for t in n.outputs]
        nd.attr["_output_shapes"].CopyFrom(tb["attr"].AttrValue(
            list=tb["attr"].AttrValue.ListValue(shape=shapes)))
        if n.outputs:
            dtype = _DATA_TYPE.get(np.dtype(n.outputs[0].dtype).name, 0)
            nd.attr["dtype"].CopyFrom(tb["attr"].AttrValue(type=dtype))
    return g


class EventWriter:
    """One event file in `logdir` (created if needed), written by TensorBoard's own
    EventFileWriter; events are queued and written on flush/close or every `flush_secs`."""

    def __init__(self, logdir, max_queue=10, flush_secs=120, filename_suffix=""):
        tb = _tb()
        self._event = tb["event"].Event
        self._writer = tb["writer"](str(logdir), max_queue, flush_secs, filename_suffix)
        self.logdir = str(logdir)

    def add_summary(self, summary, step=None, walltime=None):
        """Write a Summary proto (or its serialised bytes, as `sess.run(merged)` returns)."""
        if isinstance(summary, (bytes, np.bytes_)):
            summary = _tb()["summary"].Summary.FromString(bytes(summary))
        self._add(walltime, step, summary=summary)

    def add_graph_def(self, graph_def, walltime=None):
        self._add(walltime, None, graph_def=graph_def.SerializeToString())

    def _add(self, walltime, step, **fields):
        event = self._event(wall_time=time.time() if walltime is None else walltime, **fields)
        if step is not None:
            event.step = int(step)
        self._writer.add_event(event)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()
